"""A .kncap segment read column-wise (kafka_net.spark_jobs.kncap_arrow) against
the reference, reader.kncap_columns: the same rows for a clean segment, whole
or in ranges, and None (the reference reads and reports) wherever it finds a
problem: damaged, torn or padded files from Hypothesis, and records damaged
under a CRC that still matches."""

from __future__ import annotations

import json
import zlib

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.capture import format as kncap_format, reader
from kafka_net.capture.format import FAULT, CaptureRecord
from kafka_net.protocol import ApiKey
from kafka_net.spark_jobs import arrow_stages as stages
from kafka_net.spark_jobs import check_columns, kncap_arrow, transforms
from kafka_net.spark_jobs.schemas import FRAME_SCHEMA
from tests.spark.conftest import (
    REQUEST, RESPONSE, kncap_file, kncap_record, request_payload, response_payload)

pytestmark = pytest.mark.skipif(not check_columns.ENABLED,
                                reason="KAFKA_NET_READABLE=1: the readable path only")


def records(pairs: int = 6, connections: int = 2, answered_at: int = 10,
            cut: int | None = 4) -> list[CaptureRecord]:
    """Requests and answers on connections taking turns, a client id of none and
    one not ASCII, an empty peer, an injected fault on the first connection; the
    answer of pair ``cut`` cut by the capture (None: no cut); answer i at
    ``answered_at + i``."""
    out = []
    for corr in range(pairs):
        conn = f"127.0.0.1:9092-127.0.0.1:{40000 + corr % connections}-0-{corr % connections}"
        client = [None, "tester", "prodücer-ü", ""][corr % 4]
        out.append(kncap_record(REQUEST, request_payload(ApiKey.METADATA, 12, corr,
                                                         {"topics": None}, client), conn, corr))
        out.append(kncap_record(RESPONSE, response_payload(ApiKey.METADATA, 12, corr,
                                                           {"brokers": []}),
                                conn, answered_at + corr,
                                peer="" if corr == 3 else "127.0.0.1:1",
                                truncated_to=6 if corr == cut else None))
    out.append(CaptureRecord(99, FAULT, 3, 12, 5, 20, out[0].connection_id, "p", None,
                             b'{"rule": "r", "action": "close"}'))
    return out


def reference(path: str, data: bytes, resume=None, base: int = 0):
    columns, problems = reader.kncap_columns(path, data, resume, base)
    table = pa.Table.from_pydict({c: columns[c] for c in stages.FRAME_COLUMNS},
                                 schema=stages._arrow(FRAME_SCHEMA))
    return table, problems


def fast(path: str, data: bytes, resume=None, base: int = 0):
    return kncap_arrow.frame_table(path, data, resume, base, stages._arrow(FRAME_SCHEMA))


def test_a_clean_segment_reads_as_the_reference_reads_it_whole_and_in_ranges(tmp_path):
    from kafka_net.spark_jobs.conformance import plan_inputs
    path = kncap_file(tmp_path / "kafka-net-7-p2-000004.kncap", records() * 30,
                      processor_id=2, seq=4)
    data = open(path, "rb").read()
    want, problems = reference(path, data)
    got = fast(path, data + bytes(64))           # an unclosed segment's zero tail too
    assert problems == [] and got is not None and want.num_rows == 13 * 30
    assert got.equals(want)
    ranges = plan_inputs([path], 1000)
    assert len(ranges) > 3
    for _, start, end, resume, _ in ranges:
        part = data[start:end if end >= 0 else len(data)]
        got = fast(path, part, json.loads(resume), start)
        assert got is not None and got.equals(reference(path, part, json.loads(resume),
                                                         start)[0])


def test_a_task_holds_the_frames_where_they_lie_and_writes_them_as_frame_schema(tmp_path):
    """task_reads.task_frame_schema: the same rows, the frame bytes views of the
    capture's own memory (none copied), the file and source one-value
    dictionaries; FrameTables writes them with FRAME_SCHEMA's Parquet types, so
    frames.parquet reads back as the plain table does."""
    import pyarrow.parquet as pq
    from kafka_net.spark_jobs import task_reads
    path = kncap_file(tmp_path / "kafka-net-7-p2-000004.kncap", records() * 3,
                      processor_id=2, seq=4)
    data = open(path, "rb").read()
    plain = fast(path, data)
    held = kncap_arrow.frame_table(path, data, None, 0, task_reads.task_frame_schema())
    assert held.schema == task_reads.task_frame_schema()
    assert held.to_pylist() == plain.to_pylist()
    start = pa.py_buffer(data).address
    for chunk in held["frame"].chunks:
        assert [b.address for b in chunk.buffers()[2:]] == [start]
    tables = task_reads.FrameTables(str(tmp_path), "kncap")
    for name in task_reads.TASK_TABLES:
        (tmp_path / name).mkdir()
    tables.write_table(held)
    tables.close()
    written = pq.read_table(tmp_path / task_reads.FRAMES_TABLE)
    want = plain.filter(pa.compute.is_null(plain["marker"]))
    assert written.schema.types == want.schema.types
    assert written.to_pylist() == want.to_pylist()


def damaged(draw, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        edit = draw(st.sampled_from(["flip", "cut", "zeros", "junk"]))
        if edit == "flip" and data:
            at = draw(st.integers(0, len(data) - 1))
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif edit == "cut":
            del data[draw(st.integers(0, len(data))):]
        elif edit == "zeros":
            data += bytes(draw(st.integers(1, 12)))
        else:
            data += draw(st.binary(min_size=1, max_size=12))
    return bytes(data)


SEGMENT = b""


@pytest.fixture(scope="module", autouse=True)
def segment(tmp_path_factory):
    global SEGMENT
    path = kncap_file(tmp_path_factory.mktemp("k") / "kafka-net-7-p0-000000.kncap", records())
    SEGMENT = open(path, "rb").read()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_damaged_segment_is_the_references_or_none(data):
    references_or_none(damaged(data.draw, SEGMENT))


def references_or_none(raw: bytes) -> list:
    """The fast reader gives the reference's rows (and the reference met no
    problem) or None; where it gave None, the reference's problems (else None)."""
    got = fast("kafka-net-7-p0-000000.kncap", raw)
    want, problems = reference("kafka-net-7-p0-000000.kncap", raw)
    if got is not None:
        assert problems == [] and got.equals(want)
    return problems if got is None else None


def resealed(draw, data: bytes) -> bytes:
    """One record's body damaged and sealed again with a matching length and CRC,
    so that the reader's field checks, not its CRC check, must find it: a byte
    changed (a field's length, a fixed field), or the body cut or grown."""
    data = bytearray(data)
    offsets = list(kncap_format.record_offsets(data))
    at = draw(st.sampled_from(offsets))
    length = int.from_bytes(data[at:at + 4], "big")
    body = bytearray(data[at + 8:at + 4 + length])
    edit = draw(st.sampled_from(["byte", "cut", "grow"]))
    if edit == "byte":
        body[draw(st.integers(0, len(body) - 1))] = draw(st.integers(0, 255))
    elif edit == "cut":
        del body[len(body) - draw(st.integers(1, min(8, len(body) - 1))):]
    else:
        body += draw(st.binary(min_size=1, max_size=8))
    record = (len(body) + 4).to_bytes(4, "big") + zlib.crc32(body).to_bytes(4, "big") + body
    return bytes(data[:at] + record + data[at + 4 + length:])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_record_damaged_under_a_good_crc_is_the_references_or_none(data):
    refused = references_or_none(resealed(data.draw, SEGMENT))
    assert refused is None or refused, \
        "the fast reader refused a segment the reference reads clean"
