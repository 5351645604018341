"""records/compaction.py: one batch filtered and rebuilt as Kafka's MemoryRecords.filterTo does."""

from __future__ import annotations

import pytest

from kafka_net.protocol.records import (
    Compression, TimestampType, build_batch, decode_records, keyless_records, read_header,
    validate_batch)
from kafka_net.protocol.records.compaction import (
    DELETE, DELETE_EMPTY, RETAIN_EMPTY, batch_records, delete_horizon_ms, filter_batch)

NOW = 5_000_000


def batch(compression=Compression.NONE, **kw):
    return build_batch([(b"a", b"1", (("h", b"x"),), 1000), (b"b", None, (), 1001),
                        (b"c", b"3", (), 1003)], compression=compression, base_offset=100,
                       producer_id=4, producer_epoch=2, base_sequence=7,
                       partition_leader_epoch=3, **kw)


def run(data, keep, retention=DELETE_EMPTY, **kw):
    return filter_batch(data, retention, keep, now_ms=NOW, delete_retention_ms=1000, **kw)


def test_a_batch_whose_records_all_stay_and_has_no_tombstone_is_copied_as_is():
    data = build_batch([(b"a", b"1"), (b"b", b"2")])
    assert run(data, lambda h, r: True).output is data


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY,
                                   Compression.LZ4, Compression.ZSTD])
def test_a_rebuilt_batch_keeps_offsets_producer_fields_codec_and_timestamps(codec):
    result = run(batch(codec), lambda h, r: r.key != b"a")
    header = validate_batch(result.output, from_client=False)    # CRC and records check out
    original = read_header(batch(codec))
    assert (header.base_offset, header.last_offset_delta) == (100, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4, 2, 7)
    assert (header.partition_leader_epoch, header.compression) == (3, codec)
    assert header.attributes & ~0x40 == original.attributes
    records = decode_records(result.output)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (101, b"b", None, 1001), (102, b"c", b"3", 1003)]
    # a tombstone kept: the delete horizon set, base timestamp = now + delete.retention.ms
    assert delete_horizon_ms(header) == NOW + 1000
    assert header.max_timestamp == 1003
    assert (result.messages_read, result.messages_retained) == (3, 2)


def test_headers_and_values_are_carried_over():
    result = run(batch(), lambda h, r: r.key == b"a")
    (record,) = decode_records(result.output)
    assert (record.key, record.value, record.headers) == (b"a", b"1", (("h", b"x"),))
    assert delete_horizon_ms(read_header(result.output)) is None     # no tombstone left


def test_an_existing_delete_horizon_is_kept():
    first = run(batch(), lambda h, r: True).output
    again = filter_batch(first, DELETE_EMPTY, lambda h, r: r.key != b"c", now_ms=NOW + 500,
                         delete_retention_ms=1000)
    assert delete_horizon_ms(read_header(again.output)) == NOW + 1000
    assert [r.timestamp for r in decode_records(again.output)] == [1000, 1001]


def test_empty_results_by_retention():
    assert run(batch(), lambda h, r: False).output is None
    assert run(batch(), lambda h, r: True, retention=DELETE).output is None
    empty = run(batch(Compression.GZIP), lambda h, r: False, retention=RETAIN_EMPTY).output
    header = validate_batch(empty, from_client=False)
    assert (header.records_count, header.base_offset, header.last_offset_delta) == (0, 100, 2)
    assert (header.producer_id, header.base_sequence, header.compression) == (4, 7, 0)
    assert len(empty) == 61


def test_log_append_time_batches_keep_their_time():
    data = build_batch([(b"a", b"1"), (b"a", b"2")], timestamp_type=TimestampType.LOG_APPEND_TIME,
                       max_timestamp=777)
    out = run(data, lambda h, r: r.offset == 1).output
    assert [(r.offset, r.timestamp) for r in decode_records(out)] == [(1, 777)]


def test_batch_records_and_keyless_records():
    records = batch_records(batch(Compression.ZSTD))
    assert [(r.offset, r.key, r.has_value) for r in records] == [
        (100, b"a", True), (101, b"b", False), (102, b"c", True)]
    raw = bytes(build_batch([(None, b"1"), (b"k", b"2"), (None, None)]))[61:]
    assert keyless_records(raw, 3) == [0, 2]
