"""The one capture reader (kafka_net.capture.reader): it alone tells a file's
kind and turns .kncap records into frame rows, and everything else asks it.

Two kinds of check: what it answers for each kind of file (the CLI's
``decode``, the conformance job's refusals and its units all take these
answers), and a reading of every module's source with :mod:`ast` that fails
where another module decodes .kncap records, sniffs magic bytes, compares a
file kind by its name or spells the "not a capture" sentence itself.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kafka_net.capture import reader
from kafka_net.capture.format import CaptureRecord, encode_file_header, encode_record
from tests.capture.packets import pcap_file, pcapng_shb

ROOT = Path(__file__).resolve().parents[2]
CONN = "127.0.0.1:9092-127.0.0.1:40000-0-0"


def segment(records: int = 3) -> bytes:
    out = encode_file_header(1, 5, 0)
    for i in range(records):
        out += encode_record(CaptureRecord(10 + i, i % 2, 3, 12, i // 2, 10, CONN, "p",
                                           "c" if i % 2 == 0 else None, b"x" * 6))
    return out


@pytest.mark.parametrize("data,kind", [
    (segment(), "kncap"), (pcap_file([]), "pcap"), (pcapng_shb(), "pcapng"),
    (b"", None), (b"GET / HTTP/1.1\r\n", None), (b"KNCA", None),
])
def test_sniff_and_refusal_by_the_first_bytes(data, kind):
    assert reader.sniff(data) == reader.sniff(data[:reader.SNIFF_BYTES]) == kind
    assert reader.kind_of(data) == kind
    why = reader.not_a_capture(data[:reader.SNIFF_BYTES], len(data))
    if kind:
        assert why is None
    else:
        assert why == (reader.EMPTY_FILE if not data else reader.NOT_A_CAPTURE)
        read = reader.read_file(data, "f")
        assert (read.kind, read.problems) == (None, [why])
        assert read.columns is None and read.capture is None
        assert reader.read_capture_file(data, "f").problems == [why]


def test_a_split_range_is_read_as_its_resume_state_says():
    assert reader.kind_of(b"\0" * 40, {"kind": "kncap"}, split=True) == "kncap"
    assert reader.kind_of(b"\0" * 40, None, split=True) == "pcap"   # a pcap's first range
    assert reader.kind_of(segment(), None, split=False) == "kncap"


def test_kncap_rows_and_decode_connections_come_from_the_same_columns():
    data = segment(4)
    read = reader.read_file(data, "kafka-net-9-p1-000005.kncap")
    assert read.kind == "kncap" and read.problems == [] and read.capture is None
    cols = read.columns
    assert cols["connection"] == [f"9/{CONN}"] * 4
    assert cols["api_key"] == [3, None, 3, None]          # a response's is its request's
    assert [tuple(k) for k in cols["order_key"]] == [(1, 5, o) for o in cols["file_offset"]]
    capture = reader.read_capture_file(data, "kafka-net-9-p1-000005.kncap")
    [conn] = capture.connections
    assert conn.id == CONN                                 # Kafka's id, without the run
    assert [f.file_offset for f in conn.frames] == cols["file_offset"]
    assert [f.position for f in conn.frames] == [0, 1, 2, 3]
    assert [f.direction for f in conn.frames] == cols["direction"]


# -- nobody else reads capture files -----------------------------------------------------

# What only the reader (and the format it reads) may do; pcap.py names the pcap
# family's magic numbers and tells pcap from pcapng (the reader asks it only after
# ruling .kncap out).
DECODERS = {"decode_segment", "decode_range"}
SNIFFERS = {"sniff_format"}
MAGICS = {"MAGIC", "KNCAP_MAGIC", "_PCAP_MAGICS", "_PCAPNG_SHB"}
KINDS = {"kncap", "pcap", "pcapng"}
OWNERS = {"kafka_net/capture/reader.py", "kafka_net/capture/format.py",
          "kafka_net/capture/pcap.py"}


def _sources() -> list[Path]:
    files = [p for d in ("kafka_net", "spark_jobs", "bench") for p in (ROOT / d).rglob("*.py")]
    return [p for p in files if str(p.relative_to(ROOT)) not in OWNERS]


def _offences(tree: ast.AST, kinds: bool = True) -> list[str]:
    """What ``tree`` does that only the reader may; ``kinds``: comparisons with a
    kind's name count (not in bench/, whose options name the inputs it makes)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            if name in DECODERS | SNIFFERS:
                found.append(f"calls {name}")
        elif isinstance(node, (ast.Attribute, ast.Name, ast.alias)):
            name = getattr(node, "attr", None) or getattr(node, "id", None) \
                or getattr(node, "name", None)
            if name in MAGICS:
                found.append(f"reads {name}")
        elif isinstance(node, ast.Compare) and kinds:
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and side.value in KINDS:
                    found.append(f"compares a kind with {side.value!r}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and reader.NOT_A_CAPTURE in node.value:
            found.append("spells the not-a-capture sentence")
    return found


def test_no_other_module_sniffs_or_decodes_capture_files():
    offences = {}
    for path in _sources():
        found = _offences(ast.parse(path.read_text(encoding="utf-8")),
                          kinds=path.parts[len(ROOT.parts)] != "bench")
        if found:
            offences[str(path.relative_to(ROOT))] = found
    assert offences == {}, json.dumps(offences, indent=1)


def test_the_check_finds_what_it_looks_for():
    source = ('from kafka_net.capture.format import MAGIC, decode_segment\n'
              'r = decode_segment(b"")\n'
              'if kind == "kncap": pass\n'
              'print("neither a kafka-net capture nor a pcap/pcapng file")\n')
    assert sorted(_offences(ast.parse(source))) == [
        "calls decode_segment", "compares a kind with 'kncap'", "reads MAGIC",
        "spells the not-a-capture sentence"]
