"""A Processor's connections shared among tasks (kncap_arrow.part_rows): each
task keeps the connections whose id hashes to its part, its compiled pass
reading and checking only their records.  Against the reference
(reader.kncap_columns of the whole bytes), for clean, damaged, resealed and
noise segments, in 1 to 4 parts:

* every part's rows are the reference's rows of its connections, whether its
  own pass read them or it fell back to the reference;
* the parts' rows together are the reference's rows, each once;
* where the reference finds a problem, at least one part hands the bytes to
  the reference, whose problems and count it then says (so the job says them
  once: spark_jobs.task_reads.once_per_range); where every part's pass reads
  clean, the reference finds nothing and every part counts its records.
"""

from __future__ import annotations

import zlib

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.capture import reader
from kafka_net.capture.format import FILE_HEADER, CaptureRecord
from kafka_net.spark_jobs import arrow_stages as stages
from kafka_net.spark_jobs import check_columns, kncap_arrow
from kafka_net.spark_jobs.schemas import FRAME_SCHEMA
from kafka_net.spark_jobs.task_reads import once_per_range, task_frame_schema
from tests.spark.conftest import kncap_file
from tests.spark.test_kncap_arrow import damaged, resealed
from tests.spark.test_kncap_arrow import records as arrow_records

NAME = "kafka-net-7-p0-000000.kncap"
SCHEMA = stages._arrow(FRAME_SCHEMA)


def records() -> list[CaptureRecord]:
    """Six connections taking turns (a client id of none and one not ASCII, an
    empty peer), and an injected fault on one of them."""
    return arrow_records(pairs=18, connections=6, answered_at=100, cut=None)


SEGMENT = b""


@pytest.fixture(scope="module", autouse=True)
def segment(tmp_path_factory):
    global SEGMENT
    SEGMENT = open(kncap_file(tmp_path_factory.mktemp("k") / NAME, records()), "rb").read()


def reference(data: bytes):
    columns, problems = reader.kncap_columns(NAME, data)
    return pa.Table.from_pydict({c: columns[c] for c in stages.FRAME_COLUMNS},
                                schema=SCHEMA), problems


def in_part(table, parts: int, part: int):
    """The rows of ``table`` whose connection's id hashes to ``part``, by the
    hash's definition here (zlib's CRC-32 of the id's bytes)."""
    ids = [c.split("/", 1)[1] for c in table["connection"].to_pylist()]
    return table.filter(pa.array([zlib.crc32(i.encode()) % parts == part for i in ids],
                                 pa.bool_()))


def by_offset(table):
    return table.sort_by("file_offset")


def assert_parts_are_the_reference(data: bytes, parts: int) -> None:
    want, problems = reference(data)
    got = [kncap_arrow.part_rows(NAME, data, None, 0, SCHEMA, parts, part)
           for part in range(parts)]
    for part, (rows, said, count, whole) in enumerate(got):
        assert rows.equals(in_part(want, parts, part)), part
        if whole:
            assert (said, count) == (problems, want.num_rows)
        else:
            assert said == []
    assert by_offset(pa.concat_tables([g[0] for g in got])).equals(by_offset(want))
    # A task's schema (frames as views, file and source as dictionaries): the same
    # rows, in that schema whether read column-wise or by the reference.
    task = task_frame_schema()
    for part, (rows, said, count, whole) in enumerate(got):
        held = kncap_arrow.part_rows(NAME, data, None, 0, task, parts, part)
        assert held[0].schema == task and held[1:] == (said, count, whole), part
        assert held[0].to_pylist() == rows.to_pylist(), part
    if problems:
        assert any(g[3] for g in got), "every part read clean what the reference refuses"
    elif check_columns.ENABLED:
        assert not any(g[3] for g in got) or not want.num_rows
        assert all(g[2] == want.num_rows for g in got)


def test_the_hash_is_crc32_of_the_id_and_spreads_these_connections():
    want, problems = reference(SEGMENT)
    assert problems == [] and want.num_rows == 37
    for parts in (2, 3, 4):
        sizes = [in_part(want, parts, p).num_rows for p in range(parts)]
        assert sum(sizes) == 37 and sum(1 for s in sizes if s) >= 2, (parts, sizes)
        for c in pc.unique(want["connection"]).to_pylist():
            i = c.split("/", 1)[1]
            assert kncap_arrow.part_of(i, parts) == zlib.crc32(i.encode()) % parts
    assert_parts_are_the_reference(SEGMENT, 3)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 4))
def test_parts_of_a_damaged_segment_are_the_references(data, parts):
    assert_parts_are_the_reference(damaged(data.draw, SEGMENT), parts)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(2, 4))
def test_parts_of_a_record_damaged_under_a_good_crc_are_the_references(data, parts):
    assert_parts_are_the_reference(resealed(data.draw, SEGMENT), parts)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.integers(2, 4))
def test_parts_of_noise_are_the_references(noise, parts):
    assert_parts_are_the_reference(SEGMENT[:64] + noise, parts)
    assert_parts_are_the_reference(noise, parts)


@pytest.mark.skipif(not check_columns.ENABLED,
                    reason="KAFKA_NET_READABLE=1: the compiled pass is not imported")
def test_a_bad_crc_is_checked_by_the_part_that_keeps_its_record_only():
    want, _ = reference(SEGMENT)
    offsets = want["file_offset"].to_pylist()
    ids = [c.split("/", 1)[1] for c in want["connection"].to_pylist()]
    bad = bytearray(SEGMENT)
    bad[offsets[6] - 1] ^= 1            # record 5's last frame byte: its CRC fails
    keeper = zlib.crc32(ids[5].encode()) % 4
    for part in range(4):
        clean = kncap_arrow.frame_table(NAME, bytes(bad), None, 0, SCHEMA, 4, part)
        assert (clean is None) == (part == keeper), part


def test_one_part_says_a_range_once():
    """once_per_range: per range, the notes of a part the reference read, else
    the lowest part's; pcap notes after the kncap ranges, as they came."""
    def note(kind, start, part, ref, text):
        return {"kind": kind, "file": "f", "range_start": start, "kncap_part": part,
                "kncap_reference": ref, "problem": text}
    notes = [note("range", 10, 1, False, None), note("problem", 10, 2, True, "bad"),
             note("range", 10, 2, True, None), note("range", 10, 0, False, None),
             note("range", 0, 0, False, None), note("range", 0, 1, False, "second"),
             {"kind": "problem", "file": "x.pcap", "range_start": None, "kncap_part": None,
              "kncap_reference": None, "problem": "pcap"}]
    got = once_per_range(notes)
    assert [(n["range_start"], n["problem"]) for n in got] == [
        (0, None), (10, "bad"), (10, None), (None, "pcap")]
    assert all("kncap_part" not in n and "kncap_reference" not in n for n in got)


@pytest.mark.skipif(not check_columns.ENABLED,
                    reason="KAFKA_NET_READABLE=1: the driver guesses even shares")
def test_the_drivers_sizes_count_each_connections_records():
    """kncap_arrow.id_sizes, what the plan sizes tasks by: per CRC-32 of an id,
    its records (as the reference counts its rows) and their bytes (all of the
    segment's records together)."""
    want, _ = reference(SEGMENT)
    got = kncap_arrow.id_sizes(SEGMENT, None, 0)
    counts: dict[int, int] = {}
    for c in want["connection"].to_pylist():
        h = zlib.crc32(c.split("/", 1)[1].encode())
        counts[h] = counts.get(h, 0) + 1
    assert {h: n for h, (n, _) in got.items()} == counts
    assert sum(b for _, b in got.values()) == len(SEGMENT) - FILE_HEADER.size


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_the_drivers_sizes_of_damaged_bytes_are_a_guess_or_none(data):
    raw = damaged(data.draw, SEGMENT)
    got = kncap_arrow.id_sizes(raw, None, 0)
    assert got is None or sum(b for _, b in got.values()) <= len(raw)


def _plan(sizes_mb: list[int], slots: int, monkeypatch) -> tuple[list, list[str]]:
    """conformance._kncap_tasks over one range of each of ``len(sizes_mb)``
    Processors of those sizes (files never opened: the ranges say their ends),
    and the Processors whose connections it walked (task_reads.kncap_id_sizes,
    stood in for by None: an even share, as for bytes it cannot read)."""
    from kafka_net.spark_jobs import conformance, task_reads
    walked: list[str] = []

    def id_sizes(rows):
        walked.append(task_reads.kncap_group(rows[0][0]))
        return None
    monkeypatch.setattr(task_reads, "kncap_id_sizes", id_sizes)
    ranges = [(f"/nowhere/kafka-net-7-p{p}-000000.kncap", 0, mb << 20, 0, 0)
              for p, mb in enumerate(sizes_mb)]
    return conformance._kncap_tasks(ranges, slots), walked


def test_a_plan_of_whole_processors_walks_no_connection(monkeypatch):
    """The Processors of bench's 3.1M-frame capture (MiB): two are over half a
    slot's share, but sized as even shares the plan keeps them whole, so no
    Processor's records are walked for its connections' sizes (those two
    walks were 0.87 s of the driver's time, before any task started, for a
    plan of whole Processors)."""
    tasks, walked = _plan([318, 186, 84, 502], 2, monkeypatch)
    assert walked == []
    assert sorted(parts for task in tasks for _, parts, _ in task) == [1, 1, 1, 1]


def test_only_a_processor_the_plan_splits_is_walked(monkeypatch):
    """One Processor of most of the input is split among the slots; it alone is
    walked, and the plan made again with what the walk found keeps it split."""
    tasks, walked = _plan([600, 40, 40, 40], 2, monkeypatch)
    assert walked == ["7-p0"]
    parts = {p: k for task in tasks for rows, k, p in task
             if rows[0][0].endswith("p0-000000.kncap")}
    assert len(parts) > 1 and sorted(parts) == list(range(len(parts)))
