"""Record batches (message format v2, "magic 2"), sans-IO.

Produce requests carry, per partition, a ``records`` blob; Fetch responses
return the same bytes.  Since Kafka 0.11 that blob holds record batches of
this layout (all integers big-endian; ``DefaultRecordBatch.java``)::

    offset  size  field
         0     8  base_offset             int64  assigned by the broker (0 from producers)
         8     4  batch_length            int32  bytes after this field (whole batch = 12 + it)
        12     4  partition_leader_epoch  int32  set by the broker (producers send -1 or 0)
        16     1  magic                   int8   2 (0 and 1 are the legacy formats)
        17     4  crc                     uint32 CRC32C of bytes 21 .. end
        21     2  attributes              int16  see below
        23     4  last_offset_delta       int32  offset of the last record - base_offset
        27     8  base_timestamp          int64  timestamp of the first record
        35     8  max_timestamp           int64  largest record timestamp (or log append time)
        43     8  producer_id             int64  -1 unless idempotent / transactional
        51     2  producer_epoch          int16  -1 likewise
        53     4  base_sequence           int32  -1 likewise
        57     4  records_count           int32
        61     .  records                        compressed as a whole if attributes say so

Attributes: bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
bit 3 timestamp type (0 CreateTime, 1 LogAppendTime), bit 4 transactional,
bit 5 control batch, bit 6 "has delete horizon" (set by log compaction).

The CRC covers everything from ``attributes`` on, so the two fields the broker
rewrites when it appends a batch, ``base_offset`` and ``partition_leader_epoch``,
can be changed in place without recomputing it (:func:`set_base_offset`,
:func:`set_partition_leader_epoch`).  The magic byte sits at offset 16 in the
legacy formats too, which is how a reader tells the formats apart.

Each record (after decompression) is::

    length          varint   bytes of the record after this field
    attributes      int8     unused (0)
    timestamp_delta varlong  timestamp - base_timestamp
    offset_delta    varint   offset - base_offset
    key_length      varint   -1 (any negative) = null key
    key             bytes
    value_length    varint   -1 (any negative) = null value
    value           bytes
    header_count    varint
    headers         header_count x (key_length varint >= 0, key UTF-8,
                                    value_length varint (negative = null), value)

Varints here are the signed ZigZag ones (:meth:`Reader.varint`), not the
unsigned ones of the flexible request encoding.

Errors: everything wrong with a batch raises a :class:`RecordError` whose
``error_code`` is what Kafka puts in that partition's Produce response:

* :class:`CorruptRecordError` -> CORRUPT_MESSAGE (2): the size field or magic
  byte cannot be framed, the batch is shorter than its 61-byte header, or the
  CRC does not match;
* :class:`InvalidRecordError` -> INVALID_RECORD (87): the batch frames and its
  CRC is right but its content breaks the rules (wrong magic for the request,
  base offset not 0, count/offset-delta mismatch, bad record structure, ...);
* :class:`RecordTooLargeError` -> MESSAGE_TOO_LARGE (10);
* :class:`UnsupportedCompressionTypeError` -> UNSUPPORTED_COMPRESSION_TYPE (76).

These are per-partition answers, not :class:`InvalidRequestError`: a bad batch
never closes the connection.  The checks and their order follow Kafka's
``ProduceRequest.validateRecords``, ``ByteBufferLogInputStream.nextBatchSize``,
``UnifiedLog.analyzeAndValidateRecords``, ``LogValidator.validateBatch`` and
``DefaultRecord.readFrom``; where Kafka fails with an unexpected exception
instead (unknown compression id, undecodable gzip data) we pick the nearest
code, noted at the check.

Compression: gzip uses the stdlib :mod:`zlib`; snappy, lz4 and zstd batches are
checked up to their CRC (the broker stores them as they came) but their
records cannot be decoded here.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Iterable, Iterator, Sequence, Union

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.primitives import Reader, Writer

# --- layout ---------------------------------------------------------------------------

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
LOG_OVERHEAD = 12  # base_offset + batch_length: the part batch_length does not count
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = 17
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
RECORDS_COUNT_OFFSET = 57
RECORD_BATCH_OVERHEAD = 61  # the whole v2 header; also the smallest valid batch
# The smallest legacy (magic 0) message: Kafka refuses any size field below it
# before it even looks at the magic byte.
LEGACY_RECORD_OVERHEAD_V0 = 14

MAGIC_V2 = 2
CURRENT_MAGIC = MAGIC_V2

NO_OFFSET = -1
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

# base_offset, batch_length, partition_leader_epoch, magic, crc, attributes,
# last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
# base_sequence, records_count
_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == RECORD_BATCH_OVERHEAD
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# Decompressed records of one batch may not exceed this unless the caller says
# otherwise: a few KB of gzip can otherwise inflate to gigabytes.
DEFAULT_MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024

UNSUPPORTED_COMPRESSION_TYPE = 76  # Errors.UNSUPPORTED_COMPRESSION_TYPE


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


# --- errors ---------------------------------------------------------------------------


class RecordError(Exception):
    """A record batch the broker refuses; ``error_code`` goes in the partition response."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR


class CorruptRecordError(RecordError):
    """Kafka's ``CorruptRecordException``: bad framing, short batch or CRC mismatch."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(RecordError):
    """Kafka's ``InvalidRecordException``: the batch is intact but breaks the rules."""

    error_code = ErrorCode.INVALID_RECORD


class RecordTooLargeError(RecordError):
    """Kafka's ``RecordTooLargeException``: the batch exceeds max.message.bytes."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class UnsupportedCompressionTypeError(RecordError):
    """Kafka's ``UnsupportedCompressionTypeException`` (e.g. zstd before Produce v7)."""

    error_code = UNSUPPORTED_COMPRESSION_TYPE


# --- the batch header -----------------------------------------------------------------


@dataclass(frozen=True)
class BatchHeader:
    """The 61-byte header of a magic-2 batch, as read by :func:`read_header`."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes of the whole batch, base_offset and batch_length included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def compression(self) -> int:
        """Compression id (bits 0-2); not necessarily a :class:`Compression` member."""
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType(1 if self.attributes & TIMESTAMP_TYPE_MASK else 0)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


Buffer = Union[bytes, bytearray, memoryview]


def read_header(batch: Buffer, pos: int = 0) -> BatchHeader:
    """Read the v2 header at ``pos``; fewer than 61 bytes there is a CorruptRecordError."""
    if len(batch) - pos < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"record batch is corrupt: {len(batch) - pos} bytes is less than the "
            f"{RECORD_BATCH_OVERHEAD}-byte batch header")
    return BatchHeader(*_HEADER.unpack_from(batch, pos))


_crc32c_function = None


def _crc32c(data: memoryview) -> int:
    # Imported on first use: the crc32c package's __init__ pulls in
    # importlib.metadata, which imports socket, threading and selectors, and
    # importing kafka_net.protocol must not (tests/test_layering.py).
    global _crc32c_function
    if _crc32c_function is None:
        from crc32c import crc32c as _crc32c_function
    return _crc32c_function(data)


def compute_crc(batch: Buffer, pos: int = 0, size: int | None = None) -> int:
    """CRC32C of the batch from its attributes to its end (what the crc field holds)."""
    view = memoryview(batch)
    end = len(view) if size is None else pos + size
    return _crc32c(view[pos + ATTRIBUTES_OFFSET:end])


# --- splitting a records blob ---------------------------------------------------------


def iter_batches(data: Buffer | None, *, allow_partial_tail: bool = False) -> Iterator[memoryview]:
    """Yield each batch of a records blob as a zero-copy ``memoryview`` slice.

    Framing only, as Kafka's ``ByteBufferLogInputStream`` does it: a size field
    below 14 or a magic byte outside 0..2 is a :class:`CorruptRecordError`
    (checked as soon as those bytes are present, even in an incomplete batch).
    Bytes left over that do not make a complete batch end the iteration when
    ``allow_partial_tail`` (Kafka's behaviour: a produce request's trailing
    partial batch is dropped), and are a :class:`CorruptRecordError` otherwise.
    Slices of a ``bytearray`` are writable, so :func:`set_base_offset` works on them.
    """
    if data is None:
        return
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    pos, end = 0, len(view)
    while pos < end:
        remaining = end - pos
        if remaining < LOG_OVERHEAD:
            break
        batch_length = _INT32.unpack_from(view, pos + LENGTH_OFFSET)[0]
        if batch_length < LEGACY_RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"record size {batch_length} is less than the minimum record overhead "
                f"({LEGACY_RECORD_OVERHEAD_V0})")
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            break
        magic = _signed8(view[pos + MAGIC_OFFSET])
        if magic < 0 or magic > CURRENT_MAGIC:
            raise CorruptRecordError(f"invalid magic found in record: {magic}")
        size = LOG_OVERHEAD + batch_length
        if remaining < size:
            break
        yield view[pos:pos + size]
        pos += size
    if pos < end and not allow_partial_tail:
        raise CorruptRecordError(
            f"{end - pos} trailing bytes at offset {pos} do not make a complete record batch")


def split_batches(data: Buffer | None, *, allow_partial_tail: bool = False) -> list[memoryview]:
    """All batches of a records blob (see :func:`iter_batches`)."""
    return list(iter_batches(data, allow_partial_tail=allow_partial_tail))


def _signed8(byte: int) -> int:
    return byte - 256 if byte > 127 else byte


# --- validation -----------------------------------------------------------------------


def validate_batch(batch: Buffer, *, from_client: bool = True,
                   max_batch_size: int | None = None,
                   check_record_offsets: bool = False,
                   max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES) -> BatchHeader:
    """Check one batch as Kafka's broker does before appending it; return its header.

    ``from_client`` applies the rules Kafka keeps for producer appends
    (``AppendOrigin.CLIENT``): base offset 0, a positive record count equal to
    ``last_offset_delta + 1``, no control batches, a sequence number when there
    is a producer id.  ``max_batch_size`` is the topic's max.message.bytes.

    Records of uncompressed and gzip batches are decoded one by one (structure,
    count, nothing left over).  Kafka does not check each record's offset delta
    (only the count against ``last_offset_delta``); ``check_record_offsets``
    additionally requires them to be 0, 1, 2, ... as every producer writes them.
    """
    view = memoryview(batch)
    size = len(view)
    if size < LOG_OVERHEAD:
        raise CorruptRecordError(f"record batch of {size} bytes has no size field")
    batch_length = _INT32.unpack_from(view, LENGTH_OFFSET)[0]
    if batch_length < LEGACY_RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"record size {batch_length} is less than the minimum record overhead "
            f"({LEGACY_RECORD_OVERHEAD_V0})")
    if size != LOG_OVERHEAD + batch_length:
        raise CorruptRecordError(
            f"batch_length {batch_length} says the batch is {LOG_OVERHEAD + batch_length} "
            f"bytes, but it is {size}")
    magic = _signed8(view[MAGIC_OFFSET])
    if magic < 0 or magic > CURRENT_MAGIC:
        raise CorruptRecordError(f"invalid magic found in record: {magic}")
    if magic != MAGIC_V2:
        raise InvalidRecordError(
            f"record batches must use magic 2, found a magic {magic} message set")
    if from_client:
        base_offset = _INT64.unpack_from(view, BASE_OFFSET_OFFSET)[0]
        if base_offset != 0:
            raise InvalidRecordError(
                f"the base offset of a produced record batch must be 0, but it is {base_offset}")
    if max_batch_size is not None and size > max_batch_size:
        raise RecordTooLargeError(
            f"the record batch is {size} bytes, more than the maximum {max_batch_size}")
    header = read_header(view)
    computed = compute_crc(view)
    if computed != header.crc:
        raise CorruptRecordError(
            f"record is corrupt (stored crc = {header.crc}, computed crc = {computed})")
    if header.compression > Compression.ZSTD:
        # Kafka fails here with an IllegalArgumentException from CompressionType.forId.
        raise UnsupportedCompressionTypeError(f"unknown compression type id {header.compression}")

    count = header.records_count
    if from_client:
        count_from_offsets = header.last_offset_delta + 1
        if count_from_offsets <= 0:
            raise InvalidRecordError(
                f"batch has an invalid offset range: [{header.base_offset}, {header.last_offset}]")
        if count <= 0:
            raise InvalidRecordError(f"invalid reported count for record batch: {count}")
        if count_from_offsets != count:
            raise InvalidRecordError(
                f"inconsistent batch offset range [{header.base_offset}, {header.last_offset}] "
                f"and count of records {count}")
        if header.is_control:
            raise InvalidRecordError("clients are not allowed to write control records")
        if header.has_producer_id and header.base_sequence < 0:
            raise InvalidRecordError(
                f"invalid sequence number {header.base_sequence} in record batch with "
                f"producer id {header.producer_id}")
    elif count < 0:
        raise InvalidRecordError(f"found invalid record count {count} in magic v2 batch")

    if header.compression in (Compression.NONE, Compression.GZIP):
        _read_records(header, _records_payload(header, view, max_uncompressed_bytes),
                      check_record_offsets=check_record_offsets, keep=False)
    return header


def validate_produce_records(records: Buffer | None, api_version: int, *,
                             max_batch_size: int | None = None,
                             check_record_offsets: bool = False,
                             max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES,
                             ) -> tuple[BatchHeader, memoryview]:
    """Check one partition's ``records`` from a Produce request; return the batch.

    Kafka's rules for Produce v3+ (``ProduceRequest.validateRecords``): exactly
    one complete batch, magic 2, no zstd before v7; then :func:`validate_batch`
    with the client rules.  Bytes after the batch that do not form a second
    complete batch are ignored, as Kafka trims them; the returned slice is the
    batch alone.  Versions 0-2 carry legacy message sets in Kafka 3.9 and are
    refused outright by Kafka 4.0; this broker only stores magic 2, so they get
    the same INVALID_RECORD as a legacy message set in v3+.
    """
    batches = iter_batches(records, allow_partial_tail=True)
    first = next(batches, None)
    if first is None:
        raise InvalidRecordError(
            f"produce requests with version {api_version} must have at least one record "
            "batch per partition")
    magic = _signed8(first[MAGIC_OFFSET])
    if magic != MAGIC_V2:
        raise InvalidRecordError(
            f"produce requests with version {api_version} are only allowed to contain "
            "record batches with magic version 2")
    if api_version < 7 and len(first) >= ATTRIBUTES_OFFSET + 2:
        attributes = struct.unpack_from(">h", first, ATTRIBUTES_OFFSET)[0]
        if attributes & COMPRESSION_MASK == Compression.ZSTD:
            raise UnsupportedCompressionTypeError(
                f"produce requests with version {api_version} are not allowed to use "
                "ZStandard compression")
    if next(batches, None) is not None:
        raise InvalidRecordError(
            f"produce requests with version {api_version} are only allowed to contain "
            "exactly one record batch per partition")
    header = validate_batch(first, from_client=True, max_batch_size=max_batch_size,
                            check_record_offsets=check_record_offsets,
                            max_uncompressed_bytes=max_uncompressed_bytes)
    return header, first


# --- in-place rewrites ----------------------------------------------------------------


def set_base_offset(buf: bytearray | memoryview, base_offset: int, pos: int = 0) -> None:
    """Write the batch's base offset in place; the CRC does not cover it."""
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, epoch: int, pos: int = 0) -> None:
    """Write the batch's partition leader epoch in place; the CRC does not cover it."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


# --- records --------------------------------------------------------------------------

Header = tuple[str, Union[bytes, None]]  # (key, value); a header value may be null


@dataclass(frozen=True)
class Record:
    """One record.  ``offset`` and ``timestamp`` are absolute (base + delta) when decoded.

    When building a batch, ``offset`` is ignored (records get deltas 0, 1, 2, ...)
    and a ``timestamp`` of None means :data:`NO_TIMESTAMP`.
    """

    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[Header] = field(default_factory=tuple)
    timestamp: int | None = None
    offset: int = 0


def decode_records(batch: Buffer, *, verify_crc: bool = True,
                   max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES) -> list[Record]:
    """The records of one uncompressed or gzip batch.

    Offsets are ``base_offset + offset_delta``; timestamps ``base_timestamp +
    timestamp_delta``, or ``max_timestamp`` for LogAppendTime batches (as Kafka
    reads them).  Raises :class:`RecordError` subclasses only.
    """
    view = memoryview(batch)
    header = read_header(view)
    if header.magic != MAGIC_V2:
        raise InvalidRecordError(f"cannot decode a magic {header.magic} batch")
    if header.size != len(view):
        raise CorruptRecordError(
            f"batch_length says {header.size} bytes, the batch is {len(view)}")
    if verify_crc:
        computed = compute_crc(view)
        if computed != header.crc:
            raise CorruptRecordError(
                f"record is corrupt (stored crc = {header.crc}, computed crc = {computed})")
    if header.compression not in (Compression.NONE, Compression.GZIP):
        raise UnsupportedCompressionTypeError(
            f"cannot decode records compressed with codec {header.compression}")
    if header.records_count < 0:
        raise InvalidRecordError(f"found invalid record count {header.records_count}")
    return _read_records(header, _records_payload(header, view, max_uncompressed_bytes),
                         check_record_offsets=False, keep=True)


def _records_payload(header: BatchHeader, view: memoryview, limit: int) -> memoryview:
    payload = view[RECORD_BATCH_OVERHEAD:header.size]
    if header.compression == Compression.GZIP:
        return memoryview(_gunzip(payload, limit))
    return payload


def _gunzip(data: memoryview, limit: int) -> bytes:
    """Decompress one or more concatenated gzip members, at most ``limit`` bytes out.

    Like Java's GZIPInputStream, bytes after a member that do not start another
    valid member are ignored.  A stream that ends early is INVALID_RECORD (Kafka
    hits EOF while reading records); data that is not gzip at all is
    CORRUPT_MESSAGE (Kafka fails with "Failed to decompress record stream").
    """
    out = bytearray()
    rest = bytes(data)
    first = True
    while first or rest:
        d = zlib.decompressobj(wbits=31)
        try:
            chunk = d.decompress(rest, limit - len(out) + 1)
        except zlib.error as exc:
            if first:
                raise CorruptRecordError(f"failed to decompress gzip records: {exc}") from None
            break
        out += chunk
        if len(out) > limit:
            raise InvalidRecordError(f"decompressed records exceed {limit} bytes")
        if not d.eof:
            if first:
                raise InvalidRecordError("gzip record stream ends early (premature EOF)")
            break
        rest = d.unused_data
        first = False
    return bytes(out)


def _int32(value: int, what: str) -> int:
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise InvalidRecordError(f"{what} varint {value} does not fit an int32")
    return value


def _nullable_bytes(r: Reader, what: str) -> bytes | None:
    n = _int32(r.varint(), what)
    if n < 0:
        return None  # Kafka treats any negative length as null
    return r.raw(n)


def _read_records(header: BatchHeader, payload: memoryview, *,
                  check_record_offsets: bool, keep: bool) -> list[Record]:
    """Decode ``records_count`` records filling ``payload`` exactly."""
    out: list[Record] = []
    r = Reader(payload)
    count = header.records_count
    log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    try:
        for index in range(count):
            if r.remaining() == 0:
                raise InvalidRecordError(
                    f"incorrect declared batch size, premature EOF reached after {index} of "
                    f"{count} records")
            size = _int32(r.varint(), "record length")
            if size < 0 or size > r.remaining():
                raise InvalidRecordError(
                    f"invalid record size: expected {size} bytes in record payload, "
                    f"{r.remaining()} remaining")
            body = Reader(payload[r.pos:r.pos + size])
            r.pos += size
            body.int8()  # record attributes: unused in v2
            timestamp_delta = body.varlong()
            if not _INT64_MIN <= timestamp_delta <= _INT64_MAX:
                raise InvalidRecordError(
                    f"timestamp delta {timestamp_delta} does not fit an int64")
            offset_delta = _int32(body.varint(), "offset delta")
            key = _nullable_bytes(body, "key length")
            value = _nullable_bytes(body, "value length")
            header_count = _int32(body.varint(), "header count")
            if header_count < 0:
                raise InvalidRecordError(f"found invalid number of record headers {header_count}")
            if header_count > body.remaining():
                raise InvalidRecordError(
                    f"found invalid number of record headers: {header_count} is larger than "
                    "the remaining size of the record")
            headers = []
            for _ in range(header_count):
                key_size = _int32(body.varint(), "header key length")
                if key_size < 0:
                    raise InvalidRecordError(f"invalid negative header key size {key_size}")
                header_key = body.raw(key_size)
                header_value = _nullable_bytes(body, "header value length")
                if keep:
                    # Java decodes header keys leniently (malformed bytes become U+FFFD).
                    headers.append((header_key.decode("utf-8", "replace"), header_value))
            if body.remaining():
                raise InvalidRecordError(
                    f"invalid record size: expected to read {size} bytes in record payload, "
                    f"but instead read {size - body.remaining()}")
            if check_record_offsets and offset_delta != index:
                raise InvalidRecordError(
                    f"record {index} has offset delta {offset_delta}, expected {index}")
            if keep:
                timestamp = (header.max_timestamp if log_append
                             else header.base_timestamp + timestamp_delta)
                out.append(Record(key, value, tuple(headers), timestamp,
                                  header.base_offset + offset_delta))
    except InvalidRequestError as exc:  # the Reader ran out of bytes or met a bad varint
        raise InvalidRecordError(f"found invalid record structure: {exc}") from None
    if r.remaining():
        raise InvalidRecordError(
            f"incorrect declared batch size, {r.remaining()} bytes of records still remaining")
    return out


# --- building (tests, tools) ----------------------------------------------------------

RecordLike = Union[Record, tuple]


def _as_record(item: RecordLike) -> Record:
    if isinstance(item, Record):
        return item
    return Record(*item)


def _write_varint_bytes(w: Writer, data: bytes | None) -> None:
    """Record-level bytes: a signed varint length (-1 = null), then the bytes."""
    if data is None:
        w.varint(-1)
        return
    w.varint(len(data))
    w.raw(data)


def encode_record(w: Writer, record: Record, offset_delta: int, timestamp_delta: int) -> None:
    """Append one record (length-prefixed) to ``w``."""
    body = Writer()
    body.int8(0)
    body.varlong(timestamp_delta)
    body.varint(offset_delta)
    _write_varint_bytes(body, record.key)
    _write_varint_bytes(body, record.value)
    body.varint(len(record.headers))
    for header_key, header_value in record.headers:
        _write_varint_bytes(body, header_key.encode("utf-8"))
        _write_varint_bytes(body, header_value)
    w.varint(len(body.buf))
    w.raw(body.buf)


def build_batch(records: Iterable[RecordLike], *,
                base_offset: int = 0,
                compression: int = Compression.NONE,
                timestamp_type: int = TimestampType.CREATE_TIME,
                partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                producer_id: int = NO_PRODUCER_ID,
                producer_epoch: int = NO_PRODUCER_EPOCH,
                base_sequence: int = NO_SEQUENCE,
                transactional: bool = False,
                control: bool = False,
                max_timestamp: int | None = None,
                gzip_level: int = 6) -> bytes:
    """Build a valid magic-2 batch (uncompressed or gzip) from records.

    ``records`` holds :class:`Record` objects or ``(key, value[, headers[,
    timestamp]])`` tuples; offset deltas are 0, 1, 2, ...  The base timestamp
    is the first record's, ``max_timestamp`` defaults to the largest (pass the
    append time for LogAppendTime batches).
    """
    items = [_as_record(item) for item in records]
    timestamps = [NO_TIMESTAMP if rec.timestamp is None else rec.timestamp for rec in items]
    base_timestamp = timestamps[0] if timestamps else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max(timestamps) if timestamps else NO_TIMESTAMP

    body = Writer()
    for index, (rec, ts) in enumerate(zip(items, timestamps)):
        encode_record(body, rec, index, ts - base_timestamp)
    payload = body.getvalue()
    if compression == Compression.GZIP:
        packer = zlib.compressobj(gzip_level, zlib.DEFLATED, 31)
        payload = packer.compress(payload) + packer.flush()
    elif compression != Compression.NONE:
        raise ValueError(f"build_batch supports no compression and gzip, not {compression!r}")

    attributes = int(compression) & COMPRESSION_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK

    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += payload
    _HEADER.pack_into(
        out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_V2,
        0, attributes, len(items) - 1, base_timestamp, max_timestamp,
        producer_id, producer_epoch, base_sequence, len(items))
    _UINT32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)
