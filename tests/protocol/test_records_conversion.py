"""Up- and down-conversion between legacy message sets and magic-2 batches (the
rules Kafka 3.x's LogValidator and RecordsUtil.downConvert apply)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    Compression, DecompressionBudget, RecordError, TimestampType, build_batch, decode_records,
    with_base_offset)
from kafka_net.protocol.records.conversion import down_convert, up_convert_produce
from kafka_net.protocol.records.legacy import (
    LegacyRecord, build_message_set, encode_message, read_message_set)

LIMIT = 1 << 20


def up(records: bytes, **kw):
    return up_convert_produce(records, max_uncompressed_bytes=LIMIT, **kw)


def test_no_complete_message_appends_nothing():
    assert up(b"") is None
    assert up(encode_message(0, 1, 0, 1, None, b"v")[:-2]) is None


def test_mixed_magics_are_invalid_record():
    blob = encode_message(0, 0, 0, -1, None, b"a") + encode_message(1, 1, 0, 5, None, b"b")
    with pytest.raises(RecordError, match="not the same as the first batch's magic") as info:
        up(blob)
    assert info.value.error_code == ErrorCode.INVALID_RECORD


def test_producer_log_append_time_is_invalid_timestamp_on_log_append_time_topic():
    blob = encode_message(0, 1, 0x08, 5, None, b"a")
    with pytest.raises(RecordError) as info:
        up(blob, log_append_time=True)
    assert info.value.error_code == ErrorCode.INVALID_TIMESTAMP
    assert up(blob) is not None   # a CreateTime topic with a timestamp: accepted


def test_uncompressed_messages_become_one_batch_with_offsets_from_zero():
    blob = build_message_set([LegacyRecord(9, 5, b"k", b"a"), LegacyRecord(3, 6, None, b"b")], 1)
    header, batch = up(blob)
    assert (header.base_offset, header.records_count, header.compression) == (0, 2, 0)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in decode_records(batch)] == [
        (0, 5, b"k", b"a"), (1, 6, None, b"b")]


def test_uncompressed_compression_type_decompresses():
    blob = build_message_set([LegacyRecord(0, 5, b"k", b"a")], 1, compression=Compression.GZIP)
    header, _ = up(blob, compression_type="uncompressed")
    assert header.compression == Compression.NONE


def stored(records, base: int, **kw) -> bytes:
    return with_base_offset(build_batch(records, **kw), base)


@pytest.mark.parametrize("magic", [0, 1])
def test_down_convert_skips_control_batches_headers_and_earlier_records(magic):
    batches = [stored([(b"k", b"a", [("h", b"x")], 10), (None, b"b", (), 11)], 0),
               stored([(None, b"", (), 12)], 2, control=True),
               stored([(b"k", b"c", (), 13)], 3)]
    got = read_message_set(down_convert(batches, magic, 1, LIMIT))
    ts = (lambda t: t) if magic else (lambda t: -1)
    assert got == [LegacyRecord(1, ts(11), None, b"b"), LegacyRecord(3, ts(13), b"k", b"c")]


def test_down_convert_compressed_keeps_the_whole_wrapper():
    batch = stored([(None, b"a", (), 1), (None, b"b", (), 2)], 5, compression=Compression.GZIP)
    got = read_message_set(down_convert([batch], 1, 6, LIMIT))
    assert [r.offset for r in got] == [5, 6]


def test_down_convert_log_append_time():
    batch = stored([(None, b"a", (), 1)], 0, timestamp_type=TimestampType.LOG_APPEND_TIME,
                   max_timestamp=777)
    assert read_message_set(down_convert([batch], 1, 0, LIMIT))[0].timestamp == 777


def test_down_convert_zstd_is_unsupported_compression_type():
    batch = stored([(None, b"a", (), 1)], 0, compression=Compression.ZSTD)
    with pytest.raises(RecordError) as info:
        down_convert([batch], 1, 0, LIMIT)
    assert info.value.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


# --- arbitrary input: only the record errors ------------------------------------------------

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.binary(max_size=400), st.booleans(), st.booleans())
def test_up_convert_of_arbitrary_bytes_raises_only_record_errors(data, compacted, lat):
    try:
        up(data, compacted=compacted, log_append_time=lat,
           budget=DecompressionBudget(LIMIT))
    except RecordError:
        pass


@FAST
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=8)), st.binary(max_size=30)),
                min_size=1, max_size=4),
       st.sampled_from([0, 1]), st.sampled_from([0, 1, 2, 3]), st.data())
def test_up_convert_of_mutated_message_sets_raises_only_record_errors(items, magic, codec, data):
    blob = bytearray(build_message_set(
        [LegacyRecord(i, 5 if magic else -1, k, v) for i, (k, v) in enumerate(items)], magic,
        compression=codec))
    for _ in range(data.draw(st.integers(1, 3))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    try:
        result = up(bytes(blob), budget=DecompressionBudget(LIMIT))
    except RecordError:
        return
    if result is not None:   # what was accepted is a valid batch
        decode_records(result[1])
