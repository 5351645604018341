"""kafka-net segments (.kncap) larger than the split size cut into byte ranges,
one task each, through the job's executors: the frames dataset and the report
equal those of the segments read whole, row for row (byte offsets included),
with a corrupt record in the middle of one segment, a zero tail after it (an
unclosed segment), and a record torn into the zero tail of another.

Each Processor writes its connections' frames interleaved, so every
connection's frames lie in many ranges: the per-connection checks must see
them in write order again (their order_key: processor, segment, byte offset),
or the injected violations would be found at other positions, or others found.
"""

from __future__ import annotations

import json
import os

import pytest

from kafka_net.capture.format import FILE_HEADER, decode_segment, encode_record
from kafka_net.capture.writer import CaptureWriter
from kafka_net.spark_jobs import conformance
from tests.capture.test_pairing import INJECTIONS, conversation
from tests.spark.conftest import kncap_record
from tests.spark.test_conformance_job import (
    PCAP_ONLY, RUN, kncap_conn, write_interleaved)

pytestmark = pytest.mark.spark

SPLIT = 64 * 1024
ZERO_TAIL = 100_000


def _segment(directory, processor_id: int, convos: dict) -> str:
    """One Processor's connections in one segment file (the writer sized so
    that it does not rotate)."""
    writer = CaptureWriter(str(directory), processor_id, segment_bytes=64 << 20,
                           max_frame_bytes=1 << 20, run_id=RUN)
    write_interleaved(writer, convos)
    writer.close()
    (name,) = [n for n in os.listdir(directory) if f"-p{processor_id}-" in n]
    return str(directory / name)


def _offsets(path) -> list[int]:
    with open(path, "rb") as fh:
        return decode_segment(fh.read()).offsets


@pytest.fixture(scope="module")
def kncaps(tmp_path_factory):
    """Segment p0 (~1 MiB): 3 x every injected violation and 300 clean
    connections, a body byte flipped in a record near the middle, then a zero
    tail.  Segment p1 (~200 KiB): 60 clean connections, then a record torn
    into the zero tail (a crash while copying it)."""
    caps = tmp_path_factory.mktemp("kncaps")
    convos, expected = {}, []
    checks = sorted(set(INJECTIONS) - PCAP_ONLY)
    for i in range(3 * len(checks)):
        conn = kncap_conn(20000 + i, 0, i)
        convos[conn], found = INJECTIONS[checks[i % len(checks)]]()
        expected += [(f"{RUN}/{conn}", c, pos, corr) for c, pos, corr in found]
    for i in range(300):
        convos[kncap_conn(30000 + i, 0, 1000 + i)] = conversation()
    p0 = _segment(caps, 0, convos)
    offsets = _offsets(p0)
    bad = offsets[len(offsets) // 2]
    data = bytearray(open(p0, "rb").read())
    data[bad + 30] ^= 0x40                          # inside the body: its CRC fails
    with open(p0, "wb") as fh:
        fh.write(bytes(data) + bytes(ZERO_TAIL))

    p1 = _segment(caps, 1, {kncap_conn(40000 + i, 1, 2000 + i): conversation()
                            for i in range(60)})
    torn = encode_record(kncap_record(0, conversation()[0][2], "x", 1))
    with open(p1, "ab") as fh:
        fh.write(torn[:len(torn) // 2] + bytes(4096))
    return {"p0": p0, "p1": p1, "bad": bad, "next": offsets[len(offsets) // 2 + 1],
            "p1_end": os.path.getsize(p1) - 4096 - len(torn) // 2,
            "torn": len(torn) // 2, "expected": sorted(expected)}


@pytest.fixture(scope="module")
def runs(kncaps, spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    inputs = [kncaps["p0"], kncaps["p1"]]
    # whole: each segment one range (small enough to be read in this process);
    # cut: 64 KiB ranges, read by the executors
    whole = conformance.run(spark, inputs, str(base / "whole"))
    cut = conformance.run(spark, inputs, str(base / "cut"), split_bytes=SPLIT,
                          small_input_bytes=0)
    return {"whole": whole, "cut": cut, "base": base}


def _ranges(out) -> list[dict]:
    with open(os.path.join(out, conformance.PROBLEMS_FILE), encoding="utf-8") as fh:
        return json.load(fh)["ranges"]


def _rows(spark, out, table: str, key) -> list[dict]:
    return sorted((r.asDict(recursive=True) for r in
                   spark.read.parquet(str(out / table)).collect()), key=key)


def test_segments_are_cut_into_ranges_each_record_read_once(kncaps, runs):
    ranges = _ranges(runs["base"] / "cut")
    assert _ranges(runs["base"] / "whole") == []
    for path in (kncaps["p0"], kncaps["p1"]):
        mine = [r for r in ranges if r["file"] == path]
        assert len(mine) >= os.path.getsize(path) // SPLIT - 1, path
        assert mine[0]["start"] == 0 and all(r["packets"] is None for r in mine)
        with open(path, "rb") as fh:
            assert sum(r["records"] for r in mine) == len(decode_segment(fh.read()).records)
    assert runs["cut"]["totals"]["frames"] == sum(r["records"] for r in ranges)


def test_split_frames_equal_the_whole_read_row_for_row(kncaps, runs, spark):
    def key(r):
        return (r["file"], r["file_offset"])
    whole = _rows(spark, runs["base"] / "whole", "frames.parquet", key)
    cut = _rows(spark, runs["base"] / "cut", "frames.parquet", key)
    assert len(cut) == len(whole) > 7_000
    assert cut == whole
    offsets = [r["file_offset"] for r in cut if r["file"] == kncaps["p0"]]
    assert kncaps["bad"] not in offsets and kncaps["next"] in offsets
    assert min(offsets) == FILE_HEADER.size


def _report(summary: dict) -> dict:
    """The summary but its time of writing, its lists in one order (some, like
    the latency histogram, are Spark aggregates in no particular order)."""
    def norm(value):
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list):
            return sorted((norm(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
        return value
    return norm({k: v for k, v in summary.items() if k != "generated_at"})


def test_split_report_equals_the_whole_read(kncaps, runs, spark):
    whole, cut = runs["whole"], runs["cut"]
    assert _report(cut) == _report(whole)
    assert cut["totals"] == whole["totals"] and cut["violations"] == whole["violations"]
    found = sorted((v["connection"], v["check"], v["position"], v["correlation_id"])
                   for v in cut["violations"])
    # every injected violation, at its position; the connection that lost its
    # corrupt record has findings too, the same in both runs
    assert set(kncaps["expected"]) <= set(found)
    for table, key in (("violations.parquet", lambda r: (r["connection"], r["position"],
                                                         r["check"])),
                       ("pairs.parquet", lambda r: (r["connection"], r["request_position"]))):
        assert _rows(spark, runs["base"] / "cut", table, key) == \
            _rows(spark, runs["base"] / "whole", table, key)


def test_corrupt_record_zero_tail_and_torn_tail_are_reported_once(kncaps, runs):
    bad = kncaps["bad"]
    want = [{"file": kncaps["p0"], "problem": f"corrupt record at byte {bad} (CRC mismatch); "
                                              f"{kncaps['next'] - bad} bytes skipped"},
            {"file": kncaps["p1"], "problem": f"torn tail at byte {kncaps['p1_end']}: a "
                                              f"record with a bad CRC before the zero tail"}]
    for run in ("whole", "cut"):
        got = runs[run]["unreadable"]
        assert len(got) == 2, (run, got)
        assert got[0] == want[0], run
        assert got[1]["file"] == want[1]["file"] and \
            got[1]["problem"].startswith(want[1]["problem"]), run


def test_on_spark_a_segment_is_cut_only_when_a_split_is_asked(kncaps, spark, tmp_path,
                                                             monkeypatch):
    """A .kncap task reads all of its Processor's ranges, so without a split
    asked for the driver does not walk a segment to cut it: each goes whole,
    while a pcap beside it is cut, one range an executor slot.  A split asked for
    (--split-mb) cuts both; in one process every file is one range."""
    from tests.capture.test_pairing import conversation as convo
    from tests.spark.conftest import write_pcap
    from tests.spark.test_conformance_job import pcap_of
    packets = [p for i in range(100) for p in pcap_of(convo(), 41000 + i, i * 10**9)]
    pcap = write_pcap(tmp_path / "beside.pcap", sorted(packets))
    assert os.path.getsize(pcap) > 2 * SPLIT
    # the default pcap ranges (one an executor slot) without their 4 MiB floor
    monkeypatch.setattr(conformance, "MIN_INDEX_RANGE", 1)
    inputs = [kncaps["p0"], pcap, kncaps["p1"]]
    kncap, other, _ = conformance.planned_ranges(spark, inputs, None)
    assert kncap == [(kncaps["p0"], 0, -1, None, False), (kncaps["p1"], 0, -1, None, False)]
    assert len(other) == spark.sparkContext.defaultParallelism == 2
    assert {row[0] for row in other} == {pcap}
    kncap, other, _ = conformance.planned_ranges(spark, inputs, SPLIT)
    assert {row[0] for row in kncap if row[4]} == {kncaps["p0"], kncaps["p1"]}
    assert len(other) > 2
    kncap, other, _ = conformance.planned_ranges(None, inputs, None)
    assert [row[1:3] for row in kncap + other] == [(0, -1)] * 3
