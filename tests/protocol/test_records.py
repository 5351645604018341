"""Record batches (magic 2): build, split, validate, decode, rewrite offsets.

Each broker check is exercised with a batch that breaks exactly that rule
(re-signed with a fresh CRC where the rule is not the CRC itself), and
Hypothesis feeds garbage and mutated batches to make sure nothing but our
RecordError classes escapes.  kafka-python's own record builder and reader
are used as an independent implementation in both directions.
"""

from __future__ import annotations

import importlib

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.protocol import records as R
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.primitives import Writer
from kafka_net.protocol.records import (
    Compression, CorruptRecordError, InvalidRecordError, Record, RecordError,
    RecordTooLargeError, TimestampType, UnsupportedCompressionTypeError)

RECORDS = [
    Record(b"k0", b"v0", (("h1", b"x"), ("h2", None)), 1_700_000_000_000),
    Record(None, b"value without key", (), 1_700_000_000_005),
    Record(b"k2", None, (("\u00e9t\u00e9", b""),), 1_699_999_999_990),  # earlier: negative delta
    Record(b"", b"", (), 1_700_000_000_001),
]


def _patch(batch: bytes, offset: int, fmt: str, value, recrc: bool = True) -> bytes:
    """Overwrite a header field; re-sign the batch so only that rule is broken."""
    buf = bytearray(batch)
    struct.pack_into(fmt, buf, offset, value)
    if recrc:
        struct.pack_into(">I", buf, R.CRC_OFFSET, R.compute_crc(buf))
    return bytes(buf)


def _with_payload(batch: bytes, payload: bytes, **fields) -> bytes:
    """Replace the records area (and batch_length), set header fields, re-sign."""
    buf = bytearray(batch[:R.RECORD_BATCH_OVERHEAD] + payload)
    struct.pack_into(">i", buf, R.LENGTH_OFFSET, len(buf) - R.LOG_OVERHEAD)
    layout = {"records_count": (57, ">i"), "last_offset_delta": (23, ">i"),
              "attributes": (21, ">h")}
    for name, value in fields.items():
        offset, fmt = layout[name]
        struct.pack_into(fmt, buf, offset, value)
    struct.pack_into(">I", buf, R.CRC_OFFSET, R.compute_crc(buf))
    return bytes(buf)


def _framed(body: bytes) -> bytes:
    """A record: its body behind a (ZigZag varint) length."""
    w = Writer()
    w.varint(len(body))
    w.raw(body)
    return w.getvalue()


# attributes 0, timestamp delta 0, offset delta 0, key "k", value "v"
_KV = b"\x00\x00\x00" + b"\x02k" + b"\x02v"


# --- layout and round trips -----------------------------------------------------------


def test_header_layout_of_a_built_batch():
    batch = R.build_batch(RECORDS, producer_id=77, producer_epoch=3, base_sequence=10,
                          transactional=True, partition_leader_epoch=-1)
    assert len(batch) == R.LOG_OVERHEAD + struct.unpack_from(">i", batch, 8)[0]
    (base_offset, length, ple, magic, crc, attributes, lod, base_ts, max_ts, pid, epoch,
     seq, count) = struct.unpack_from(">qiibIhiqqqhii", batch)
    assert (base_offset, ple, magic) == (0, -1, 2)
    assert crc == R.compute_crc(batch)
    assert attributes == 0x10  # transactional, no compression, CreateTime
    assert (lod, count) == (3, 4)
    assert base_ts == RECORDS[0].timestamp
    assert max_ts == max(r.timestamp for r in RECORDS)
    assert (pid, epoch, seq) == (77, 3, 10)
    header = R.read_header(batch)
    assert header.size == len(batch) and header.is_transactional and not header.is_control
    assert header.has_producer_id and header.last_offset == 3 and header.next_offset == 4


@pytest.mark.parametrize("compression", list(Compression))
def test_build_validate_decode_round_trip(compression):
    batch = R.build_batch(RECORDS, compression=compression)
    header = R.validate_batch(batch)
    assert header.compression == compression
    assert header.records_count == len(RECORDS)
    decoded = R.decode_records(batch)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in decoded] == \
        [(r.key, r.value, r.headers, r.timestamp) for r in RECORDS]
    assert [r.offset for r in decoded] == [0, 1, 2, 3]


def test_gzip_batch_is_actually_compressed_and_smaller():
    values = [(b"key", b"abc" * 1000, (), 5)] * 10
    plain, packed = R.build_batch(values), R.build_batch(values, compression=Compression.GZIP)
    assert len(packed) < len(plain) // 10
    gz = bytes(packed[R.RECORD_BATCH_OVERHEAD:])
    assert gz[:2] == b"\x1f\x8b"  # gzip magic, not raw zlib
    assert zlib.decompress(gz, wbits=31) == bytes(plain[R.RECORD_BATCH_OVERHEAD:])


def test_log_append_time_batches_report_the_max_timestamp():
    batch = R.build_batch(RECORDS, timestamp_type=TimestampType.LOG_APPEND_TIME,
                          max_timestamp=123456)
    assert R.read_header(batch).timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in R.decode_records(batch)} == {123456}


def test_tuples_and_missing_timestamps():
    batch = R.build_batch([(b"a", b"1"), (None, None, [("k", b"v")])])
    header = R.validate_batch(batch)
    assert header.base_timestamp == header.max_timestamp == R.NO_TIMESTAMP
    assert [(r.key, r.value, r.headers) for r in R.decode_records(batch)] == [
        (b"a", b"1", ()), (None, None, (("k", b"v"),))]


def test_split_several_batches():
    first, second = R.build_batch(RECORDS[:2]), R.build_batch(RECORDS[2:], base_offset=2)
    parts = R.split_batches(first + second)
    assert [bytes(p) for p in parts] == [first, second]
    assert R.split_batches(b"") == [] and R.split_batches(None) == []


# --- offset / epoch rewrite -----------------------------------------------------------


def test_base_offset_rewrite_keeps_the_crc_valid():
    batch = R.build_batch(RECORDS)
    buf = bytearray(batch)
    R.set_base_offset(buf, 1_000_000)
    R.set_partition_leader_epoch(buf, 42)
    assert buf[R.CRC_OFFSET:] == batch[R.CRC_OFFSET:]  # nothing under the CRC moved
    header = R.validate_batch(buf, from_client=False)
    assert (header.base_offset, header.partition_leader_epoch) == (1_000_000, 42)
    assert header.crc == R.compute_crc(buf)
    assert [r.offset for r in R.decode_records(buf)] == [1_000_000 + i for i in range(4)]
    # The broker refuses a non-zero base offset from a producer...
    with pytest.raises(InvalidRecordError, match="base offset"):
        R.validate_batch(buf)


def test_rewrite_through_split_views_of_a_bytearray():
    blob = bytearray(R.build_batch(RECORDS[:1]) + R.build_batch(RECORDS[1:]))
    next_offset = 500
    for view in R.split_batches(blob):
        R.set_base_offset(view, next_offset)
        next_offset = R.read_header(view).next_offset
    offsets = [r.offset for v in R.split_batches(blob) for r in R.decode_records(v)]
    assert offsets == [500, 501, 502, 503]


def test_rewrite_refuses_read_only_bytes():
    with pytest.raises(TypeError):
        R.set_base_offset(R.build_batch(RECORDS), 5)


# --- the broker's checks, one rule at a time ------------------------------------------


def test_error_classes_map_to_kafka_error_codes():
    assert CorruptRecordError.error_code == ErrorCode.CORRUPT_MESSAGE == 2
    assert InvalidRecordError.error_code == ErrorCode.INVALID_RECORD == 87
    assert RecordTooLargeError.error_code == ErrorCode.MESSAGE_TOO_LARGE == 10
    assert UnsupportedCompressionTypeError.error_code == 76
    for cls in (CorruptRecordError, InvalidRecordError, RecordTooLargeError,
                UnsupportedCompressionTypeError):
        assert issubclass(cls, RecordError)


@pytest.mark.parametrize("offset", [21, 40, R.RECORD_BATCH_OVERHEAD + 3, -1])
def test_corrupt_crc(offset):
    buf = bytearray(R.build_batch(RECORDS))
    buf[offset] ^= 0x01
    with pytest.raises(CorruptRecordError, match="crc"):
        R.validate_batch(buf)
    with pytest.raises(CorruptRecordError):
        R.decode_records(buf)


def test_wrong_stored_crc():
    batch = R.build_batch(RECORDS)
    bad = _patch(batch, R.CRC_OFFSET, ">I", (R.compute_crc(batch) + 1) % 2**32, recrc=False)
    with pytest.raises(CorruptRecordError, match="stored crc"):
        R.validate_batch(bad)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_magic_is_invalid_record(magic):
    bad = _patch(R.build_batch(RECORDS), R.MAGIC_OFFSET, ">b", magic)
    with pytest.raises(InvalidRecordError, match="magic"):
        R.validate_batch(bad)
    with pytest.raises(InvalidRecordError, match="magic version 2"):
        R.validate_produce_records(bad, 9)


@pytest.mark.parametrize("magic", [3, 127, -1])
def test_unknown_magic_is_corrupt(magic):
    bad = _patch(R.build_batch(RECORDS), R.MAGIC_OFFSET, ">b", magic)
    for check in (R.validate_batch, R.split_batches,
                  lambda b: R.validate_produce_records(b, 9)):
        with pytest.raises(CorruptRecordError, match="magic"):
            check(bad)


@pytest.mark.parametrize("cut", [1, 10, 30, 60])
def test_truncated_batch(cut):
    batch = R.build_batch(RECORDS)
    short = batch[:-cut]
    with pytest.raises(CorruptRecordError):
        R.validate_batch(short)
    with pytest.raises(CorruptRecordError, match="trailing bytes"):
        R.split_batches(short)
    assert R.split_batches(short, allow_partial_tail=True) == []
    # Kafka: no complete batch in a Produce partition is INVALID_RECORD.
    with pytest.raises(InvalidRecordError, match="at least one record batch"):
        R.validate_produce_records(short, 9)


def test_batch_longer_than_its_length_field():
    with pytest.raises(CorruptRecordError, match="batch_length"):
        R.validate_batch(R.build_batch(RECORDS) + b"\x00")


@pytest.mark.parametrize("length", [-1, 0, 13])
def test_size_field_below_the_minimum_overhead(length):
    bad = _patch(R.build_batch(RECORDS), R.LENGTH_OFFSET, ">i", length, recrc=False)
    for check in (R.validate_batch, R.split_batches,
                  lambda b: R.validate_produce_records(b, 9)):
        with pytest.raises(CorruptRecordError, match="minimum record overhead"):
            check(bad)


def test_batch_shorter_than_the_v2_header():
    batch = R.build_batch(RECORDS)[:40]
    short = _patch(batch, R.LENGTH_OFFSET, ">i", 40 - R.LOG_OVERHEAD, recrc=False)
    assert len(R.split_batches(short)) == 1
    with pytest.raises(CorruptRecordError, match="61-byte"):
        R.validate_batch(short)


def test_empty_or_null_produce_records():
    for data in (None, b"", b"\x00" * 11):
        with pytest.raises(InvalidRecordError, match="at least one"):
            R.validate_produce_records(data, 9)


def test_produce_allows_exactly_one_batch():
    one = R.build_batch(RECORDS)
    header, view = R.validate_produce_records(one, 9)
    assert bytes(view) == one and header.records_count == 4
    with pytest.raises(InvalidRecordError, match="exactly one"):
        R.validate_produce_records(one + one, 9)
    # A partial second batch is dropped, as Kafka trims it.
    header, view = R.validate_produce_records(one + one[:30], 9)
    assert bytes(view) == one


def test_zstd_needs_produce_v7():
    zstd = R.build_batch(RECORDS, compression=Compression.ZSTD)
    with pytest.raises(UnsupportedCompressionTypeError, match="ZStandard"):
        R.validate_produce_records(zstd, 6)
    header, _ = R.validate_produce_records(zstd, 7)
    assert header.compression == Compression.ZSTD


def test_compressed_payload_the_codec_cannot_read_is_corrupt():
    plain = R.build_batch(RECORDS)
    for codec in (Compression.ZSTD, Compression.LZ4, Compression.SNAPPY):
        bad = _patch(plain, R.ATTRIBUTES_OFFSET, ">h", codec)
        with pytest.raises(CorruptRecordError, match="decompress"):
            R.validate_batch(bad)


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_compression_id(codec):
    bad = _patch(R.build_batch(RECORDS), R.ATTRIBUTES_OFFSET, ">h", codec)
    with pytest.raises(UnsupportedCompressionTypeError, match="unknown compression"):
        R.validate_batch(bad)


def test_max_batch_size():
    batch = R.build_batch(RECORDS)
    R.validate_batch(batch, max_batch_size=len(batch))
    with pytest.raises(RecordTooLargeError):
        R.validate_batch(batch, max_batch_size=len(batch) - 1)
    with pytest.raises(RecordTooLargeError):
        R.validate_produce_records(batch, 9, max_batch_size=100)


def test_count_and_offset_range_rules_for_producers():
    batch = R.build_batch(RECORDS)
    with pytest.raises(InvalidRecordError, match="inconsistent"):
        R.validate_batch(_patch(batch, 57, ">i", 3))
    with pytest.raises(InvalidRecordError, match="invalid offset range"):
        R.validate_batch(_patch(batch, 23, ">i", -1))
    with pytest.raises(InvalidRecordError, match="reported count"):
        R.validate_batch(_patch(_patch(batch, 57, ">i", 0), 23, ">i", 0))
    with pytest.raises(InvalidRecordError, match="count"):
        R.validate_batch(_patch(batch, 57, ">i", -5), from_client=False)


def test_empty_batch_only_allowed_when_not_from_a_client():
    empty = R.build_batch([])
    assert R.read_header(empty).records_count == 0
    with pytest.raises(InvalidRecordError):
        R.validate_batch(empty)
    assert R.validate_batch(empty, from_client=False).records_count == 0
    assert R.decode_records(empty) == []


def test_control_batches_and_sequences_from_producers():
    with pytest.raises(InvalidRecordError, match="control"):
        R.validate_batch(R.build_batch(RECORDS, control=True))
    assert R.validate_batch(R.build_batch(RECORDS, control=True), from_client=False)
    with pytest.raises(InvalidRecordError, match="sequence"):
        R.validate_batch(R.build_batch(RECORDS, producer_id=5, producer_epoch=0))
    R.validate_batch(R.build_batch(RECORDS, producer_id=5, producer_epoch=0, base_sequence=0))


# --- record structure -----------------------------------------------------------------


def test_more_records_than_counted():
    batch = R.build_batch(RECORDS)
    bad = _with_payload(batch, bytes(batch[R.RECORD_BATCH_OVERHEAD:]), records_count=3,
                        last_offset_delta=2)
    with pytest.raises(InvalidRecordError, match="still remaining"):
        R.validate_batch(bad)


def test_fewer_records_than_counted():
    batch = R.build_batch(RECORDS)
    bad = _with_payload(batch, bytes(batch[R.RECORD_BATCH_OVERHEAD:]), records_count=5,
                        last_offset_delta=4)
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        R.validate_batch(bad)


@pytest.mark.parametrize("payload,message", [
    (b"\x7f", "record size"),                          # length -64
    (b"\x40\x00", "record size"),                      # length 32, 1 byte there
    (b"\x00", "invalid record structure"),             # empty body: no attributes byte
    (b"\xff\xff\xff\xff\xff\x01", "invalid record structure"),  # 6-byte varint
    (_framed(b"\x00\x00\x00" + b"\x64k"), "invalid record structure"),  # key of 50 bytes
    (_framed(_KV + b"\x01"), "number of record headers"),   # header count -1
    (_framed(_KV + b"\x7e"), "number of record headers"),   # 63 headers in 0 bytes
    (_framed(_KV + b"\x02\x01"), "negative header key size"),
    (_framed(_KV + b"\x02\x04a"), "invalid record structure"),  # header key cut short
    (_framed(_KV + b"\x02\x02a\x04"), "invalid record structure"),  # header value cut short
])
def test_bad_record_structure(payload, message):
    bad = _with_payload(R.build_batch([(b"k", b"v")]), payload)
    with pytest.raises(InvalidRecordError, match=message):
        R.validate_batch(bad)
    with pytest.raises(InvalidRecordError, match=message):
        R.decode_records(bad)


def test_bytes_left_inside_a_record():
    bad = _with_payload(R.build_batch([(b"k", b"v")]), _framed(_KV + b"\x00" + b"\x00\x00"))
    with pytest.raises(InvalidRecordError, match="expected to read"):
        R.validate_batch(bad)


def test_any_negative_key_length_is_null_as_in_kafka():
    body = b"\x00\x00\x00" + b"\x05" + b"\x02v" + b"\x00"  # key length -3
    batch = _with_payload(R.build_batch([(b"k", b"v")]), _framed(body))
    R.validate_batch(batch)
    assert R.decode_records(batch)[0].key is None


def test_record_offset_deltas_are_checked_only_on_request():
    w = Writer()
    R.encode_record(w, Record(b"a", b"1"), 0, 0)
    R.encode_record(w, Record(b"b", b"2"), 5, 0)  # Kafka does not look at this delta
    batch = _with_payload(R.build_batch([(b"k", b"v")] * 2), w.getvalue())
    R.validate_batch(batch)
    assert [r.offset for r in R.decode_records(batch)] == [0, 5]
    with pytest.raises(InvalidRecordError, match="offset delta 5"):
        R.validate_batch(batch, check_record_offsets=True)


# --- gzip failures --------------------------------------------------------------------


def test_gzip_payload_that_is_not_gzip_is_corrupt():
    batch = R.build_batch(RECORDS, compression=Compression.GZIP)
    bad = _with_payload(batch, b"definitely not gzip data")
    with pytest.raises(CorruptRecordError, match="decompress"):
        R.validate_batch(bad)


def test_truncated_gzip_stream_is_invalid():
    batch = R.build_batch(RECORDS, compression=Compression.GZIP)
    gz = bytes(batch[R.RECORD_BATCH_OVERHEAD:])
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        R.validate_batch(_with_payload(batch, gz[:len(gz) // 2]))


def test_concatenated_gzip_members_and_trailing_garbage():
    batch = R.build_batch(RECORDS, compression=Compression.GZIP)
    raw = zlib.decompress(bytes(batch[R.RECORD_BATCH_OVERHEAD:]), wbits=31)
    half = len(raw) // 2

    def gz(data):
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    two_members = _with_payload(batch, gz(raw[:half]) + gz(raw[half:]))
    assert len(R.decode_records(two_members)) == 4
    with_garbage = _with_payload(batch, gz(raw) + b"garbage")
    assert len(R.decode_records(with_garbage)) == 4


# --- Hypothesis: nothing but RecordError escapes --------------------------------------

FAST = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def _only_record_errors(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except RecordError:
        pass


@FAST
@given(st.binary(max_size=300))
def test_garbage_raises_only_record_errors(data):
    _only_record_errors(R.split_batches, data)
    _only_record_errors(R.split_batches, data, allow_partial_tail=True)
    _only_record_errors(R.validate_batch, data)
    _only_record_errors(R.validate_batch, data, from_client=False)
    _only_record_errors(R.validate_produce_records, data, 9)
    _only_record_errors(R.decode_records, data)


_HEADER_PREFIX = R.build_batch([(b"k", b"v")])[:R.RECORD_BATCH_OVERHEAD]


@FAST
@given(payload=st.binary(max_size=200), count=st.integers(-3, 6),
       compression=st.sampled_from(list(Compression)), raw=st.booleans())
def test_garbage_records_behind_a_valid_header(payload, count, compression, raw):
    """A correct header and CRC in front of garbage (compressed or not): the parser must cope."""
    if not raw:
        payload = R.compress(compression, payload)
    batch = _with_payload(_HEADER_PREFIX, payload, records_count=count,
                          last_offset_delta=count - 1, attributes=compression)
    _only_record_errors(R.validate_batch, batch)
    _only_record_errors(R.validate_batch, batch, from_client=False, check_record_offsets=True)
    _only_record_errors(R.decode_records, batch)


@FAST
@given(st.data())
def test_mutated_batches_raise_only_record_errors(data):
    batch = bytearray(R.build_batch(RECORDS,
                                    compression=data.draw(st.sampled_from(list(Compression)))))
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(batch) - 1))
        batch[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        struct.pack_into(">I", batch, R.CRC_OFFSET, R.compute_crc(batch))
    _only_record_errors(R.validate_batch, batch)
    _only_record_errors(R.decode_records, batch)
    _only_record_errors(R.validate_produce_records, batch, 9)


_records = st.lists(st.builds(
    Record,
    key=st.none() | st.binary(max_size=20),
    value=st.none() | st.binary(max_size=50),
    headers=st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)),
                     max_size=3).map(tuple),
    timestamp=st.integers(0, 2**41)), min_size=1, max_size=6)


@settings(FAST, max_examples=100)
@given(_records, st.sampled_from(list(Compression)))
def test_any_records_round_trip(records, compression):
    batch = R.build_batch(records, compression=compression)
    R.validate_batch(batch, check_record_offsets=True)
    decoded = R.decode_records(batch)
    assert [(r.key, r.value, tuple(r.headers), r.timestamp) for r in decoded] == \
        [(r.key, r.value, r.headers, r.timestamp) for r in records]


# --- cross-check with kafka-python's record implementation ----------------------------

kp_default_records = importlib.import_module("kafka.record.default_records")
kp_memory_records = importlib.import_module("kafka.record.memory_records")


def _kp_build(records, compression=0, producer=(-1, -1, -1), transactional=False):
    builder = kp_default_records.DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=transactional,
        producer_id=producer[0], producer_epoch=producer[1], base_sequence=producer[2],
        batch_size=1 << 20)
    for offset, rec in enumerate(records):
        assert builder.append(offset, timestamp=rec.timestamp, key=rec.key, value=rec.value,
                              headers=list(rec.headers)) is not None
    return bytes(builder.build())


COMPRESSIBLE = [Record(b"key-%d" % i, b"payload " * 40, (("trace", b"%d" % i),), 1000 + i)
                for i in range(5)] + RECORDS


@pytest.mark.parametrize("compression", [0, 1])
def test_we_read_kafka_python_batches(compression):
    batch = _kp_build(COMPRESSIBLE, compression, producer=(1234, 5, 17), transactional=True)
    header = R.validate_batch(batch)
    assert header.compression == compression  # kafka-python keeps gzip when it pays off
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 5, 17)
    assert header.is_transactional and header.records_count == len(COMPRESSIBLE)
    decoded = R.decode_records(batch)
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in decoded] == \
        [(i, r.key, r.value, r.headers, r.timestamp) for i, r in enumerate(COMPRESSIBLE)]
    # and the validated batch survives the broker's rewrite
    buf = bytearray(batch)
    R.set_base_offset(buf, 99)
    kp_batch = kp_default_records.DefaultRecordBatch(bytes(buf))
    assert kp_batch.validate_crc() and kp_batch.base_offset == 99


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_kafka_python_reads_our_batches(compression):
    ours = R.build_batch(COMPRESSIBLE, compression=compression, producer_id=9,
                         producer_epoch=1, base_sequence=3, base_offset=40,
                         partition_leader_epoch=6)
    batch = kp_default_records.DefaultRecordBatch(ours)
    assert batch.validate_crc()
    assert (batch.base_offset, batch.leader_epoch, batch.magic) == (40, 6, 2)
    assert batch.compression_type == compression
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 3)
    assert batch.last_offset_delta == len(COMPRESSIBLE) - 1
    got = [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in batch]
    assert got == [(40 + i, r.key, r.value, list(r.headers), r.timestamp)
                   for i, r in enumerate(COMPRESSIBLE)]


def test_kafka_python_splits_our_blobs_like_we_do():
    first = R.build_batch(RECORDS[:2])
    second = bytearray(R.build_batch(RECORDS[2:]))
    R.set_base_offset(second, 2)
    blob = first + bytes(second)
    kp = kp_memory_records.MemoryRecords(blob)
    kp_batches = []
    while kp.has_next():
        kp_batches.append(kp.next_batch())
    ours = R.split_batches(blob)
    assert len(kp_batches) == len(ours) == 2
    assert [b.base_offset for b in kp_batches] == [R.read_header(v).base_offset for v in ours]
    assert [r.offset for b in kp_batches for r in b] == \
        [r.offset for v in ours for r in R.decode_records(v)]


def test_set_log_append_time_stamps_the_batch_and_keeps_it_valid():
    batch = bytearray(R.build_batch([(b"k", b"v", (), 5), (b"k", b"w", (), 7)]))
    assert R.read_records_count(batch) == 2
    R.set_log_append_time(batch, 1_700_000_000_000)
    header = R.validate_batch(batch)   # the CRC was computed again
    assert header.timestamp_type == R.TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 1_700_000_000_000
