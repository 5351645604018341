"""The Arrow wrappers of the conformance job's stages (kafka_net.spark_jobs.arrow_stages),
without Spark: they must hand Spark exactly what the plain functions of
kafka_net.spark_jobs.transforms make (the kafka-net capture path builds its columns
directly, so it is compared with the row path here), in the schemas' types."""

from __future__ import annotations

import ctypes
import json
from unittest import mock

import pyarrow as pa
from hypothesis import given, settings, strategies as st

from kafka_net.spark_jobs import arrow_stages as stages
from kafka_net.spark_jobs import transforms
from tests.spark.conftest import (
    REQUEST, RESPONSE, kncap_file, kncap_record, request_payload, response_payload,
    write_pcap)
from tests.spark.test_transforms import CONN, kafka_pcap_conversation, read


def files_batch(*paths) -> pa.RecordBatch:
    """What Spark's binaryFile reader hands mapInArrow: URIs and contents."""
    return pa.RecordBatch.from_pydict({"path": [f"file:{p}" for p in paths],
                                       "content": [read(p) for p in paths]})


def unit_rows(batches) -> list[dict]:
    table = pa.Table.from_batches(list(batches))
    assert table.schema.equals(stages._arrow(stages.UNIT_SCHEMA))
    return table.to_pylist()


def kncap_capture(tmp_path, torn: bool = False) -> str:
    records = []
    for corr in range(5):
        records.append(kncap_record(REQUEST, request_payload(18, 3, corr, {
            "client_software_name": "t", "client_software_version": "1"}), CONN, 10 * corr))
        records.append(kncap_record(RESPONSE, response_payload(18, 3, corr, {
            "error_code": 0, "api_keys": []}), CONN, 10 * corr + 5))
    path = kncap_file(tmp_path / "kafka-net-9-p1-000003.kncap", records, processor_id=1,
                      seq=3)
    if torn:
        with open(path, "ab") as fh:
            fh.write(b"\x00\x00\x01\x00garbage")
    return path


def test_kncap_columns_are_the_rows_of_file_units(tmp_path):
    path = kncap_capture(tmp_path, torn=True)
    got = unit_rows(stages.file_units([files_batch(path)]))
    want = transforms.file_units(path, read(path))
    assert [r["kind"] for r in got] == [kind for kind, *_ in want]
    assert [r["problem"] for r in got if r["kind"] == "problem"] == [
        u[1]["problem"] for u in want if u[0] == "problem"] != []
    frames = [{k: r[k] for k in stages.FRAME_COLUMNS} for r in got if r["kind"] == "frame"]
    assert frames == [{**u[1], "order_key": list(u[1]["order_key"])}
                      for u in want if u[0] == "frame"]
    assert len(frames) == 10 and frames[0]["file"] == path


def test_pcap_packets_regroup_into_the_frames_of_frames_of_flow(tmp_path):
    conv = kafka_pcap_conversation(40001, calls=4, segment=20)
    path = write_pcap(tmp_path / "a.pcap", conv.packets)
    units = unit_rows(stages.file_units([files_batch(path)]))
    assert {r["kind"] for r in units} == {"packet"} and len({r["flow"] for r in units}) == 1
    table = pa.Table.from_pylist(units, schema=stages._arrow(stages.UNIT_SCHEMA))
    got = stages.flow_frames(None)(table).to_pylist()
    flow = [u[2] for u in transforms.file_units(path, read(path))]
    want = [u[1] for u in transforms.frames_of_flow(flow)]
    assert [{k: r[k] for k in stages.FRAME_COLUMNS} for r in got] == [
        {**w, "order_key": list(w["order_key"])} for w in want]
    assert len([r for r in got if r["marker"] is None]) == 8


def test_check_connection_row_holds_what_transforms_returns(tmp_path):
    path = kncap_capture(tmp_path)
    rows = [r for r in unit_rows(stages.file_units([files_batch(path)]))
            if r["kind"] == "frame"]
    table = pa.Table.from_pylist(rows, schema=stages._arrow(stages.UNIT_SCHEMA))
    out = stages.check_connection(table)
    assert out.schema.equals(stages._arrow(stages.CHECKED_SCHEMA))
    [row] = out.to_pylist()
    want = transforms.check_connection(rows[0]["connection"], rows)
    for name in ("pairs", "violations", "requests", "states"):
        assert row[name] == want[name], name
    assert len(row["pairs"]) == 5 and row["violations"] == []


def test_kncap_ranges_are_the_rows_of_file_units_and_of_the_whole_file(tmp_path):
    """A segment cut by plan_inputs: each range's Arrow rows are file_units' for
    that range (problems, its counts row, frames), and the ranges' frames and
    problems together are the whole file's, offsets and order keys included."""
    from kafka_net.spark_jobs.conformance import plan_inputs
    records = [kncap_record(REQUEST, request_payload(18, 3, corr), CONN, corr)
               for corr in range(200)]
    path = kncap_file(tmp_path / "kafka-net-9-p1-000003.kncap", records, processor_id=1,
                      seq=3)
    data = bytearray(read(path))
    data[len(data) // 2] ^= 0x10                   # one record's CRC fails
    with open(path, "wb") as fh:
        fh.write(bytes(data) + bytes(64))          # and an unclosed segment's zero tail
    ranges = plan_inputs([path], 2000)
    assert len(ranges) > 5 and all(split for *_, split in ranges)
    names = stages.RANGE_INPUT_SCHEMA.fieldNames()
    got = unit_rows(stages.range_units([pa.RecordBatch.from_pylist(
        [dict(zip(names, r)) for r in ranges], schema=stages._arrow(stages.RANGE_INPUT_SCHEMA))]))
    want = []
    for _, start, end, resume, split in ranges:
        want += transforms.file_units(path, read(path)[start:end], json.loads(resume), start,
                                      split)
    assert [r["kind"] for r in got] == [u[0] for u in want]
    assert [r["range_records"] for r in got if r["kind"] == "range"] == [
        u[1]["range_records"] for u in want if u[0] == "range"]
    frames = [{k: r[k] for k in stages.FRAME_COLUMNS} for r in got if r["kind"] == "frame"]
    assert frames == [{**u[1], "order_key": list(u[1]["order_key"])}
                      for u in want if u[0] == "frame"]
    whole = transforms.file_units(path, read(path))
    assert frames == [{**u[1], "order_key": list(u[1]["order_key"])}
                      for u in whole if u[0] == "frame"]
    assert len(frames) == 199
    assert [r["problem"] for r in got if r["kind"] == "problem"] == [
        u[1]["problem"] for u in whole if u[0] == "problem"]
    assert [u[1]["problem"] for u in whole if u[0] == "problem"][0].startswith(
        "corrupt record at byte")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["b", "a", "c/1", "c/0"]),
                          st.none() | st.binary(max_size=6)), min_size=1, max_size=40),
       st.integers(1, 4), st.sampled_from([pa.binary(), pa.large_binary(), pa.binary_view()]))
def test_groups_with_frames_are_the_groups_with_their_frames_beside(rows, chunks, binary):
    """The same groups, in the same order, each its rows in the table's order; the
    frames where they lie (check_columns.Payloads: read by index, as Arrow, and
    at the addresses the compiled loops read, a null as nothing), the other
    columns' values the same (the file path dictionary-encoded reads back as the
    same strings)."""
    table = pa.table({"connection": [c for c, _ in rows],
                      "frame": pa.array([f for _, f in rows], binary),
                      "file": ["/x/y.kncap"] * len(rows), "n": list(range(len(rows)))})
    size = -(-len(rows) // chunks)
    table = pa.concat_tables([table.slice(i, size) for i in range(0, len(rows), size)])
    plain = table.cast(table.schema.set(1, pa.field("frame", pa.binary())))   # views: no take
    want = list(stages.groups(plain, "connection"))
    got = list(stages.groups_with_frames(table, "connection"))
    assert len(got) == len(want)
    for (group, frames), whole in zip(got, want):
        expected = whole["frame"].to_pylist()
        assert [frames[i] for i in range(len(frames))] == expected
        assert frames.arrow().to_pylist() == expected
        assert [ctypes.string_at(int(a), int(n)) for a, n in zip(frames.address, frames.size)] \
            == [f or b"" for f in expected]
        assert group.to_pylist() == whole.drop_columns(["frame"]).to_pylist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), max_size=40), st.integers(1, 3), st.booleans(), st.booleans())
def test_rows_where_is_a_filter(keep, chunks, chunked_mask, views):
    """The rows a filter keeps, in order, whether they come back as the table, as
    slices of it (few runs) or filtered (many: the limit lowered to 2 here),
    frame bytes held as views too (a .kncap task's; pyarrow filters no views)."""
    n = len(keep)
    table = pa.table({"n": list(range(n)),
                      "frame": pa.array([bytes([i]) * (i % 20) for i in range(n)],
                                        pa.binary_view() if views else pa.binary())})
    if n and chunks > 1:
        size = -(-n // chunks)
        table = pa.concat_tables([table.slice(i, size) for i in range(0, n, size)])
    mask = pa.chunked_array([pa.array(keep, pa.bool_())], pa.bool_()) if chunked_mask \
        else pa.array(keep, pa.bool_())
    want = [row for row, kept in zip(table.to_pylist(), keep) if kept]
    assert stages.rows_where(table, mask).to_pylist() == want
    limit, stages._SLICED_RUNS = stages._SLICED_RUNS, 2
    try:
        got = stages.rows_where(table, mask)
        assert got.to_pylist() == want and got.schema == table.schema
    finally:
        stages._SLICED_RUNS = limit


@given(st.lists(st.tuples(st.one_of(st.none(), st.sampled_from(["b", "a", "ab", "é", ""])),
                          st.integers(-2**63, 2**63 - 1)), max_size=40),
       st.integers(1, 5), st.integers(1, 50))
def test_groups_are_a_stable_sort_by_the_key_nulls_last(rows, chunks, block):
    """Each group one key's rows in the table's order, the groups in the key's
    byte order, null keys last as one group; whatever the table's chunks and
    however many rows are taken at a time."""
    size = -(-len(rows) // chunks) or 1
    parts = [rows[i:i + size] for i in range(0, len(rows), size)] or [[]]
    table = pa.Table.from_batches(
        [pa.RecordBatch.from_pydict({"key": [k for k, _ in p], "value": [v for _, v in p]},
                                    schema=pa.schema([("key", pa.string()),
                                                      ("value", pa.int64())]))
         for p in parts])
    with mock.patch.object(stages, "GROUP_BLOCK_ROWS", block):
        got = [list(zip(g["key"].to_pylist(), g["value"].to_pylist()))
               for g in stages.groups(table, "key")]
    keys = sorted({k for k, _ in rows if k is not None}, key=lambda k: k.encode())
    keys += [None] if any(k is None for k, _ in rows) else []
    assert got == [[r for r in rows if r[0] == k] for k in keys]
