"""Framing of magic-2 record batches: layout, errors, header, size/magic/CRC checks.

Every check on a batch's frame is written once here and used by the broker's
validation (:mod:`.validation`), the consumer-side decoder (:mod:`.decoding`)
and the blob splitter (:func:`iter_batches`).  Layout (big-endian;
Kafka's ``DefaultRecordBatch.java``)::

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
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Iterator, NamedTuple, Union

from kafka_net.protocol.error_codes import ErrorCode

# --- layout ---------------------------------------------------------------------------

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
LOG_OVERHEAD = 12  # base_offset + batch_length: the part batch_length does not count
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = 17
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35   # after base_timestamp
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
# base_sequence, records_count: one unpack for the whole header.
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
assert HEADER_STRUCT.size == RECORD_BATCH_OVERHEAD
# The same fields up to max_timestamp: what a log needs to place a stored batch
# (:func:`read_header_prefix`), read without the producer fields.
_HEADER_PREFIX_STRUCT = struct.Struct(">qiibIhiqq")
HEADER_PREFIX_SIZE = _HEADER_PREFIX_STRUCT.size   # 43
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
UINT32 = struct.Struct(">I")

# Decompressed records of one batch may not exceed this unless the caller says
# otherwise (the broker passes message.max.uncompressed.bytes): a few KB of
# gzip can otherwise inflate to gigabytes.
DEFAULT_MAX_UNCOMPRESSED_BYTES = 4 * 1024 * 1024

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


Buffer = Union[bytes, bytearray, memoryview]

# --- errors ---------------------------------------------------------------------------


class RecordError(Exception):
    """A record batch the broker refuses; ``error_code`` goes in the partition response."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR


class CorruptRecordError(RecordError):
    """Kafka's ``CorruptRecordException``: bad framing, short batch or CRC mismatch."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class DecompressionLimitError(CorruptRecordError):
    """A compressed batch inflates past message.max.uncompressed.bytes (a "zip bomb").

    Kafka has no such limit.  CORRUPT_MESSAGE is what a bad batch already
    gets; Java producers treat it as retriable (``CorruptRecordException`` is
    a ``RetriableException``), so a producer resends such a batch until its
    delivery.timeout.ms and then fails it, as for a batch with a bad CRC.
    """


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


class BatchHeader(NamedTuple):
    """The 61-byte header of a magic-2 batch, as read by :func:`read_header`.

    A named tuple: made straight from the ``struct`` unpack, about 1 µs
    cheaper per batch than a frozen dataclass (every produced batch makes one).
    """

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


_new_tuple = tuple.__new__


def read_header(batch: Buffer, pos: int = 0) -> BatchHeader:
    """Read the v2 header at ``pos``; fewer than 61 bytes there is a CorruptRecordError."""
    if len(batch) - pos < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"record batch is corrupt: {len(batch) - pos} bytes is less than the "
            f"{RECORD_BATCH_OVERHEAD}-byte batch header")
    # tuple.__new__ straight (the unpack has the 13 fields): _make is one more call
    return _new_tuple(BatchHeader, HEADER_STRUCT.unpack_from(batch, pos))


def read_attributes(batch: Buffer) -> int | None:
    """The attributes field, or None when the batch is too short to hold it."""
    if len(batch) < ATTRIBUTES_OFFSET + 2:
        return None
    return _INT16.unpack_from(batch, ATTRIBUTES_OFFSET)[0]


def read_base_offset(batch: Buffer, pos: int = 0) -> int:
    return _INT64.unpack_from(batch, pos + BASE_OFFSET_OFFSET)[0]


def read_batch_size(batch: Buffer, pos: int = 0) -> int:
    """Bytes of the whole batch at ``pos`` as its size field claims (LOG_OVERHEAD
    included); unchecked: the caller judges it."""
    return LOG_OVERHEAD + _INT32.unpack_from(batch, pos + LENGTH_OFFSET)[0]


def read_header_prefix(batch: Buffer, pos: int = 0) -> tuple[int, int, int, int, int]:
    """(base_offset, size, last_offset, max_timestamp, magic) of the batch at
    ``pos``, from its first :data:`HEADER_PREFIX_SIZE` bytes, unchecked: what a
    log reads to place a stored batch in its file (Kafka's
    ``FileLogInputStream``), one unpack."""
    base, length, _, magic, _, _, delta, _, max_ts = _HEADER_PREFIX_STRUCT.unpack_from(
        batch, pos)
    return base, LOG_OVERHEAD + length, base + delta, max_ts, magic


# --- the checks (each written once) ---------------------------------------------------


def check_size_field(batch_length: int) -> None:
    """Kafka's ``ByteBufferLogInputStream.nextBatchSize``: no record is under 14 bytes."""
    if batch_length < LEGACY_RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"record size {batch_length} is less than the minimum record overhead "
            f"({LEGACY_RECORD_OVERHEAD_V0})")


def check_magic(magic_byte: int) -> int:
    """The magic byte as a signed int8; outside 0..2 is a CorruptRecordError."""
    magic = magic_byte - 256 if magic_byte > 127 else magic_byte
    if magic < 0 or magic > CURRENT_MAGIC:
        raise CorruptRecordError(f"invalid magic found in record: {magic}")
    return magic


def frame_batch(view: memoryview) -> BatchHeader:
    """Check that ``view`` is exactly one complete magic-2 batch; return its header.

    Size field, size against the bytes there, magic (unknown: corrupt; legacy:
    invalid, as this broker stores magic 2 only) and the 61-byte header, in
    Kafka's order.  Not the CRC: :func:`check_crc` (the broker checks the base
    offset and max.message.bytes first, as ``UnifiedLog.analyzeAndValidateRecords``).
    """
    size = len(view)
    if size < LOG_OVERHEAD:
        raise CorruptRecordError(f"record batch of {size} bytes has no size field")
    batch_length = _INT32.unpack_from(view, LENGTH_OFFSET)[0]
    check_size_field(batch_length)
    if size != LOG_OVERHEAD + batch_length:
        raise CorruptRecordError(
            f"batch_length {batch_length} says the batch is {LOG_OVERHEAD + batch_length} "
            f"bytes, but it is {size}")
    magic = check_magic(view[MAGIC_OFFSET])
    if magic != MAGIC_V2:
        raise InvalidRecordError(
            f"record batches must use magic 2, found a magic {magic} message set")
    return read_header(view)


_crc32c_function = None


def _crc32c(data: memoryview) -> int:
    function = _crc32c_function
    if function is None:
        function = crc32c_function()
    return function(data)


def crc32c_function():
    """The CRC32C function every batch check uses (loaded on first use): for a
    caller that computes many itself, such as the compiled batch checks."""
    global _crc32c_function
    if _crc32c_function is None:
        _crc32c_function = _load_crc32c()
    return _crc32c_function


def _load_crc32c():
    """The crc32c package's C function, loaded on first use from its extension
    module alone.  The package's ``__init__`` asks importlib.metadata for its own
    version, which scans every installed distribution: ~30 ms, paid by every
    broker start that reads a batch or a producer snapshot, and it imports socket,
    threading and selectors, which importing kafka_net.protocol must not
    (tests/test_layering.py).  The plain import stays as the fallback should the
    package ever rename its extension."""
    import importlib.machinery
    import importlib.util
    package = importlib.util.find_spec("crc32c")   # found, not executed
    spec = (importlib.machinery.PathFinder.find_spec(
        "crc32c._crc32c", package.submodule_search_locations) if package else None)
    if spec is None or spec.loader is None:
        from crc32c import crc32c as function
        return function
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.crc32c


def compute_crc(batch: Buffer, pos: int = 0, size: int | None = None) -> int:
    """CRC32C of the batch from its attributes to its end (what the crc field holds)."""
    view = memoryview(batch)
    end = len(view) if size is None else pos + size
    return _crc32c(view[pos + ATTRIBUTES_OFFSET:end])


def check_crc(view: memoryview, header: BatchHeader) -> None:
    """Kafka's ``DefaultRecordBatch.ensureValid``: ``view`` is the whole batch."""
    computed = _crc32c(view[ATTRIBUTES_OFFSET:])
    if computed != header.crc:
        raise CorruptRecordError(
            f"record is corrupt (stored crc = {header.crc}, computed crc = {computed})")


def next_whole_batch(view: memoryview, start: int) -> int | None:
    """The first position from ``start`` holding a whole magic-2 batch whose CRC
    matches: where reading can resume past damage, whose batch boundaries are lost
    (``kafka-dump-log``-style tools, the metadata log's loader)."""
    for position in range(start, len(view) - RECORD_BATCH_OVERHEAD + 1):
        if view[position + MAGIC_OFFSET] != MAGIC_V2:
            continue
        size = read_batch_size(view, position)
        if size < RECORD_BATCH_OVERHEAD or position + size > len(view):
            continue
        stored = UINT32.unpack_from(view, position + CRC_OFFSET)[0]
        if compute_crc(view, position, size) == stored:
            return position
    return None


def check_compression_id(header: BatchHeader) -> None:
    compression = header.attributes & COMPRESSION_MASK
    if compression > Compression.ZSTD:
        # Kafka fails here with an IllegalArgumentException from CompressionType.forId.
        raise UnsupportedCompressionTypeError(f"unknown compression type id {compression}")


# --- splitting a records blob ---------------------------------------------------------


def as_byte_view(data: Buffer) -> memoryview:
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def complete_batch_size(view: memoryview, pos: int) -> int:
    """Bytes of the complete batch at ``pos``, or 0 if the bytes there do not make one.

    Kafka's ``ByteBufferLogInputStream.nextBatchSize``: the size field and the
    magic byte are checked as soon as they are there (:func:`check_size_field`,
    :func:`check_magic`), even in an incomplete batch.
    """
    remaining = len(view) - pos
    if remaining < LOG_OVERHEAD:
        return 0
    batch_length = _INT32.unpack_from(view, pos + LENGTH_OFFSET)[0]
    check_size_field(batch_length)
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        return 0
    check_magic(view[pos + MAGIC_OFFSET])
    size = LOG_OVERHEAD + batch_length
    return size if remaining >= size else 0


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
    view = as_byte_view(data)
    pos, end = 0, len(view)
    while pos < end:
        size = complete_batch_size(view, pos)
        if not size:
            break
        yield view[pos:pos + size]
        pos += size
    if pos < end and not allow_partial_tail:
        raise CorruptRecordError(
            f"{end - pos} trailing bytes at offset {pos} do not make a complete record batch")


def split_batches(data: Buffer | None, *, allow_partial_tail: bool = False) -> list[memoryview]:
    """All batches of a records blob (see :func:`iter_batches`)."""
    return list(iter_batches(data, allow_partial_tail=allow_partial_tail))


# --- in-place rewrites ----------------------------------------------------------------


def set_base_offset(buf: bytearray | memoryview, base_offset: int, pos: int = 0) -> None:
    """Write the batch's base offset in place; the CRC does not cover it."""
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def with_base_offset(batch: Buffer, base_offset: int) -> bytes:
    """A copy of the batch with its base offset set (one copy; the CRC does not cover it)."""
    return _INT64.pack(base_offset) + memoryview(batch)[LENGTH_OFFSET:]


_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")   # the batch's first 16 bytes


def with_base_offset_and_epoch(batch: Buffer, base_offset: int, leader_epoch: int) -> bytes:
    """A copy of the batch with its base offset and partition leader epoch set, as
    Kafka's leader stamps every batch it appends (one copy; the CRC covers neither)."""
    view = memoryview(batch)
    length = _INT32.unpack_from(view, LENGTH_OFFSET)[0]
    return (_OFFSET_LENGTH_EPOCH.pack(base_offset, length, leader_epoch)
            + view[PARTITION_LEADER_EPOCH_OFFSET + 4:])


def set_partition_leader_epoch(buf: bytearray | memoryview, epoch: int, pos: int = 0) -> None:
    """Write the batch's partition leader epoch in place; the CRC does not cover it."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(batch: bytearray, now_ms: int) -> None:
    """Kafka's ``DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, now)``: the
    timestamp type bit and the max timestamp change, both under the CRC, so the
    CRC is computed again."""
    attributes = _INT16.unpack_from(batch, ATTRIBUTES_OFFSET)[0]
    _INT16.pack_into(batch, ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(batch, MAX_TIMESTAMP_OFFSET, now_ms)
    UINT32.pack_into(batch, CRC_OFFSET, compute_crc(batch))


def read_records_count(batch: Buffer) -> int:
    """The batch header's records count (its last field)."""
    return _INT32.unpack_from(batch, RECORDS_COUNT_OFFSET)[0]
