"""Legacy message sets (magic 0 and 1): reading, building, and the errors Kafka gives.

Cross-checked with kafka-python 3.0.12's own legacy codec (kafka/record/
legacy_records.py), which real old clients use: what it builds we read, and
what we build it reads.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import Compression, CorruptRecordError, RecordError
from kafka_net.protocol.records.legacy import (
    LegacyRecord, build_message_set, encode_message, iter_entries, lz4_fix_header_checksum,
    read_entry, read_message_set, xxh32)

FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def test_xxh32_known_vectors():
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_magic0_message_layout():
    entry = encode_message(7, 0, 0, -1, b"k", b"value")
    offset, size, crc, magic, attributes = struct.unpack_from(">qiIbb", entry)
    assert (offset, size, magic, attributes) == (7, len(entry) - 12, 0, 0)
    assert crc == zlib.crc32(entry[16:])
    assert entry[18:] == struct.pack(">i", 1) + b"k" + struct.pack(">i", 5) + b"value"


def test_magic1_message_has_a_timestamp():
    entry = encode_message(0, 1, 0, 1234, None, None)
    assert struct.unpack_from(">q", entry, 18)[0] == 1234
    assert read_message_set(entry) == [LegacyRecord(0, 1234, None, None)]


def test_corrupt_crc_is_corrupt_message():
    entry = bytearray(encode_message(0, 1, 0, 1, b"k", b"v"))
    entry[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError) as info:
        read_message_set(bytes(entry))
    assert info.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert "stored crc" in str(info.value)


def test_size_below_overhead_is_corrupt():
    with pytest.raises(CorruptRecordError, match="minimum record overhead"):
        read_message_set(struct.pack(">qi", 0, 13) + bytes(13))


def test_partial_tail_is_ignored():
    one = encode_message(0, 0, 0, -1, b"a", b"b")
    assert read_message_set(one + one[:-3]) == [LegacyRecord(0, -1, b"a", b"b")]


def _wrapper(magic: int, codec: int, inner: bytes, offset: int, **kw) -> bytes:
    from kafka_net.protocol.records import compress
    packed = compress(codec, inner)
    if codec == Compression.LZ4 and magic == 0:
        packed = lz4_fix_header_checksum(packed, broken=True)
    return encode_message(offset, magic, codec | kw.get("type_bit", 0), kw.get("ts", 5),
                          None, packed)


def test_magic1_wrapper_offsets_are_relative_to_its_last_offset():
    inner = b"".join(encode_message(i, 1, 0, 100 + i, None, b"x%d" % i) for i in range(3))
    records = read_message_set(_wrapper(1, Compression.GZIP, inner, 42))
    assert [r.offset for r in records] == [40, 41, 42]
    assert [r.timestamp for r in records] == [100, 101, 102]


def test_magic1_wrapper_offset_zero_is_accepted():
    inner = b"".join(encode_message(i, 1, 0, 1, None, b"x") for i in range(2))
    assert [r.offset for r in read_message_set(_wrapper(1, Compression.GZIP, inner, 0))] == [0, 1]


def test_log_append_time_wrapper_stamps_inner_messages():
    inner = encode_message(0, 1, 0, 100, None, b"x")
    records = read_message_set(_wrapper(1, Compression.GZIP, inner, 0, type_bit=8, ts=999))
    assert records[0].timestamp == 999


@pytest.mark.parametrize("inner, message", [
    (b"", "no inner records"),
    (encode_message(0, 0, 0, -1, None, b"x"), "does not match wrapper magic"),
    (encode_message(0, 1, 1, 1, None, b"x"), "must not be compressed"),
])
def test_bad_wrappers_are_invalid_record(inner, message):
    with pytest.raises(RecordError, match=message) as info:
        read_message_set(_wrapper(1, Compression.GZIP, inner, 0))
    assert info.value.error_code == ErrorCode.INVALID_RECORD


def test_wrapper_with_null_value_or_zstd_is_invalid_record():
    for entry in (encode_message(0, 1, Compression.GZIP, 1, None, None),
                  encode_message(0, 1, Compression.ZSTD, 1, None, b"x")):
        with pytest.raises(RecordError) as info:
            read_message_set(entry)
        assert info.value.error_code == ErrorCode.INVALID_RECORD


def test_wrapper_offset_below_last_inner_is_invalid_record():
    inner = b"".join(encode_message(i, 1, 0, 1, None, b"x") for i in range(3))
    with pytest.raises(RecordError, match="invalid wrapper offset"):
        read_message_set(_wrapper(1, Compression.GZIP, inner, 1))


def test_corrupt_inner_crc_is_corrupt_message():
    inner = bytearray(encode_message(0, 1, 0, 1, None, b"x"))
    inner[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        read_message_set(_wrapper(1, Compression.GZIP, bytes(inner), 0))


def test_magic0_lz4_uses_kafkas_broken_header_checksum():
    built = build_message_set([LegacyRecord(0, -1, None, b"v")], 0, compression=Compression.LZ4)
    frame = read_entry(next(iter_entries(built))).value
    assert frame != lz4_fix_header_checksum(frame, broken=False)   # not the standard byte
    assert read_message_set(built) == [LegacyRecord(0, -1, None, b"v")]


_record = st.tuples(st.integers(-1, 2**40), st.one_of(st.none(), st.binary(max_size=20)),
                    st.one_of(st.none(), st.binary(max_size=40)))


@FAST
@given(st.lists(_record, min_size=1, max_size=8), st.sampled_from([0, 1]),
       st.sampled_from(LEGACY_CODECS), st.integers(0, 2**40))
def test_round_trip(items, magic, codec, base):
    records = [LegacyRecord(base + i, ts if magic else -1, k, v)
               for i, (ts, k, v) in enumerate(items)]
    assert read_message_set(build_message_set(records, magic, compression=codec)) == records


@FAST
@given(st.binary(max_size=400))
def test_arbitrary_bytes_raise_only_record_errors(data):
    try:
        read_message_set(data)
    except RecordError:
        pass


@FAST
@given(st.lists(_record, min_size=1, max_size=4), st.sampled_from([0, 1]),
       st.sampled_from(LEGACY_CODECS), st.data())
def test_mutated_message_sets_raise_only_record_errors(items, magic, codec, data):
    records = [LegacyRecord(i, ts if magic else -1, k, v) for i, (ts, k, v) in enumerate(items)]
    blob = bytearray(build_message_set(records, magic, compression=codec))
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    try:
        read_message_set(bytes(blob))
    except RecordError:
        pass


# --- kafka-python's legacy codec (what kafka-python 3.0.12 sends and reads) -----------

import kafka.record as kafka_records  # noqa: E402  (kafka-python, in the test venv)
import kafka.record.legacy_records as kafka_legacy  # noqa: E402


# kafka-python needs the xxhash package (not installed) for magic 0 lz4 frames, both
# ways; that pair is covered by test_magic0_lz4_uses_kafkas_broken_header_checksum.
KAFKA_PYTHON_PAIRS = [(m, c) for m in (0, 1) for c in LEGACY_CODECS
                      if (m, c) != (0, Compression.LZ4)]


@pytest.mark.parametrize("magic, codec", KAFKA_PYTHON_PAIRS)
def test_kafka_python_builds_what_we_read(magic, codec):
    builder = kafka_legacy.LegacyRecordBatchBuilder(magic, int(codec), batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=1000 + i, key=b"k%d" % i, value=b"v%d" % i)
    blob = bytes(builder.build())
    expected = [LegacyRecord(i, (1000 + i) if magic else -1, b"k%d" % i, b"v%d" % i)
                for i in range(3)]
    assert read_message_set(blob) == expected


@pytest.mark.parametrize("magic, codec", KAFKA_PYTHON_PAIRS)
def test_kafka_python_reads_what_we_build(magic, codec):
    records = [LegacyRecord(10 + i, (1000 + i) if magic else -1, b"k", b"v%d" % i)
               for i in range(3)]
    blob = build_message_set(records, magic, compression=codec)
    memory = kafka_records.MemoryRecords(blob)
    got = []
    while memory.has_next():
        got += [(r.offset, r.timestamp, r.key, r.value) for r in memory.next_batch()]
    assert got == [(r.offset, r.timestamp if magic else None, r.key, r.value) for r in records]
