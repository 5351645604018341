"""Legacy message sets (message formats v0 and v1, "magic 0" and "magic 1"), sans-IO.

Before record batches (Kafka 0.11), Produce v0-2 carried and Fetch v0-3
returned *message sets*: messages one after another, each in its log entry
(Kafka's ``LegacyRecord`` and ``AbstractLegacyRecordBatch``).  kafka-net
stores magic 2 only; this module reads a producer's message set (to convert
it up) and builds one for an old consumer (converted down).  Layout
(big-endian)::

    log entry   offset        int64   the message's offset (a wrapper: its last inner one)
                message_size  int32   bytes of the message after this field (>= 14)
    message     crc           uint32  CRC-32 (IEEE, zlib.crc32) of magic .. end
                magic         int8    0 or 1
                attributes    int8    bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4),
                                      bit 3 timestamp type (magic 1: 0 CreateTime,
                                      1 LogAppendTime)
                timestamp     int64   magic 1 only (magic 0 messages have none: -1)
                key           int32 length (negative = null), then the bytes
                value         int32 length (negative = null), then the bytes

A compressed message (a *wrapper*) has a null key and a value holding a whole
message set compressed with its codec: gzip, snappy (xerial framing), lz4
(an LZ4 frame; magic 0 frames carry Kafka's historical wrong header checksum,
computed over the frame's magic bytes too, KAFKA-3160).  zstd never existed
for these formats.  Inner messages have the wrapper's magic and are not
compressed themselves.  In magic 1 their offsets are relative (0, 1, 2, ...)
and the wrapper's offset is the last inner message's absolute offset (Kafka
also accepts a wrapper offset of 0, as certain librdkafka versions send); a
magic 1 wrapper whose timestamp type is LogAppendTime gives its timestamp to
every inner message.

Errors, as Kafka maps them: a size field under 14, a CRC mismatch or a
message cut short inside its fields is :class:`CorruptRecordError`
(CORRUPT_MESSAGE); a wrapper with a null value or no inner messages, a zstd
wrapper, an inner message of another magic or itself compressed, or a bad
wrapper offset is :class:`InvalidRecordError` (INVALID_RECORD); decompression
is bounded as for batches (:func:`.compression.decompress`).  Bytes after the
last complete entry are ignored, as Kafka's log input streams do.
"""

from __future__ import annotations

import struct
import zlib
from typing import Iterable, Iterator, NamedTuple

from kafka_net.protocol.records.building import compress
from kafka_net.protocol.records.compression import decompress
from kafka_net.protocol.records.framing import (
    LEGACY_RECORD_OVERHEAD_V0, LOG_OVERHEAD, NO_TIMESTAMP, Buffer, Compression,
    CorruptRecordError, InvalidRecordError, TimestampType, UnsupportedCompressionTypeError,
    as_byte_view)

MAGIC_V0 = 0
MAGIC_V1 = 1
LEGACY_RECORD_OVERHEAD_V1 = 22   # crc, magic, attributes, timestamp, key and value lengths
LEGACY_CODEC_MASK = 0x07
LEGACY_TIMESTAMP_TYPE_MASK = 0x08

_ENTRY_HEAD = struct.Struct(">qi")          # offset, message size
_MESSAGE_HEAD = struct.Struct(">Ibb")       # crc, magic, attributes
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


class LegacyRecord(NamedTuple):
    """One (uncompressed) message as a consumer sees it: absolute offset, timestamp
    (-1 for magic 0), key, value."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


class LegacyEntry(NamedTuple):
    """A log entry's message, as read from the wire (a wrapper's value is compressed)."""

    offset: int
    size: int          # bytes of the whole entry, log overhead included
    magic: int
    attributes: int
    timestamp: int     # -1 for magic 0
    key: bytes | None
    value: bytes | None

    @property
    def compression(self) -> int:
        return self.attributes & LEGACY_CODEC_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_V1 and self.attributes & LEGACY_TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME


# --- reading --------------------------------------------------------------------------


def entry_size(view: memoryview, pos: int) -> int:
    """Bytes of the complete log entry at ``pos``, or 0 if the bytes there do not make one.

    The size field is checked as soon as it is there (Kafka's ``nextBatchSize``).
    """
    if len(view) - pos < LOG_OVERHEAD:
        return 0
    size = _INT32.unpack_from(view, pos + 8)[0]
    if size < LEGACY_RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"Record size is less than the minimum record overhead ({LEGACY_RECORD_OVERHEAD_V0})")
    return LOG_OVERHEAD + size if len(view) - pos >= LOG_OVERHEAD + size else 0


def iter_entries(data: Buffer) -> Iterator[memoryview]:
    """Each complete log entry of a message set, as a zero-copy slice; a partial
    tail ends the iteration."""
    view = as_byte_view(data)
    pos = 0
    while True:
        size = entry_size(view, pos)
        if not size:
            return
        yield view[pos:pos + size]
        pos += size


def check_crc(entry: memoryview) -> None:
    """Kafka's ``LegacyRecord.ensureValid``: the stored CRC-32 matches magic .. end."""
    stored = _MESSAGE_HEAD.unpack_from(entry, LOG_OVERHEAD)[0]
    computed = zlib.crc32(entry[LOG_OVERHEAD + 4:])
    if stored != computed:
        raise CorruptRecordError(
            f"Record is corrupt (stored crc = {stored}, computed crc = {computed})")


def read_entry(entry: memoryview, verify_crc: bool = True) -> LegacyEntry:
    """One complete log entry (from :func:`iter_entries`): CRC first, then the fields."""
    if verify_crc:
        check_crc(entry)
    end = len(entry)
    offset = _INT64.unpack_from(entry, 0)[0]
    _, magic, attributes = _MESSAGE_HEAD.unpack_from(entry, LOG_OVERHEAD)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise CorruptRecordError(f"Invalid magic found in record: {magic}")
    pos = LOG_OVERHEAD + 6
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        if end - pos < 8:
            raise _cut_short(end - LOG_OVERHEAD, magic)
        timestamp = _INT64.unpack_from(entry, pos)[0]
        pos += 8
    key, pos = _sized_bytes(entry, pos, end, magic)
    value, pos = _sized_bytes(entry, pos, end, magic)
    if attributes & LEGACY_CODEC_MASK > Compression.ZSTD:
        raise UnsupportedCompressionTypeError(
            f"unknown compression type id {attributes & LEGACY_CODEC_MASK}")
    return LegacyEntry(offset, end, magic, attributes, timestamp, key, value)


def _sized_bytes(view: memoryview, pos: int, end: int, magic: int) -> tuple[bytes | None, int]:
    if end - pos < 4:
        raise _cut_short(end - LOG_OVERHEAD, magic)
    n = _INT32.unpack_from(view, pos)[0]
    pos += 4
    if n < 0:
        return None, pos
    if n > end - pos:
        raise _cut_short(end - LOG_OVERHEAD, magic)
    return bytes(view[pos:pos + n]), pos + n


def _cut_short(size: int, magic: int) -> CorruptRecordError:
    return CorruptRecordError(
        f"Record is corrupt (a magic {magic} message of {size} bytes ends inside its fields)")


def deep_records(entry: LegacyEntry, max_uncompressed_bytes: int) -> list[LegacyRecord]:
    """The messages of an entry: itself, or a wrapper's inner messages (CRC checked,
    offsets absolute, LogAppendTime from the wrapper)."""
    if not entry.compression:
        return [LegacyRecord(entry.offset, entry.timestamp, entry.key, entry.value)]
    if entry.compression == Compression.ZSTD:
        raise InvalidRecordError(
            "Invalid wrapper compressionType found in legacy deep record iterator "
            f"{entry.magic}")
    if entry.value is None:
        raise InvalidRecordError(
            f"Found invalid compressed record set with null value (magic = {entry.magic})")
    payload = memoryview(entry.value)
    if entry.compression == Compression.LZ4 and entry.magic == MAGIC_V0:
        payload = memoryview(lz4_fix_header_checksum(bytes(payload), broken=False))
    inner = [read_entry(e) for e in iter_entries(
        decompress(entry.compression, payload, max_uncompressed_bytes))]
    if not inner:
        raise InvalidRecordError("Found invalid compressed record set with no inner records")
    for message in inner:
        if message.magic != entry.magic:
            raise InvalidRecordError(
                f"Compressed message magic {message.magic} does not match wrapper magic "
                f"{entry.magic}")
        if message.compression:
            raise InvalidRecordError("Inner messages must not be compressed")
    if entry.magic == MAGIC_V0:
        return [LegacyRecord(m.offset, NO_TIMESTAMP, m.key, m.value) for m in inner]
    base = _absolute_base_offset(entry.offset, inner[-1].offset)
    log_append = entry.timestamp_type == TimestampType.LOG_APPEND_TIME
    return [LegacyRecord(base + m.offset, entry.timestamp if log_append else m.timestamp,
                         m.key, m.value) for m in inner]


def _absolute_base_offset(wrapper_offset: int, last_inner: int) -> int:
    if wrapper_offset == 0:   # produce data of certain librdkafka versions
        return 0
    if wrapper_offset < last_inner:
        raise InvalidRecordError(
            "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
            f"'{wrapper_offset}' is less than the last inner message offset '{last_inner}' "
            "and it is not zero.")
    return wrapper_offset - last_inner


def read_message_set(data: Buffer, max_uncompressed_bytes: int = 4 * 1024 * 1024
                     ) -> list[LegacyRecord]:
    """Every message of a message set, wrappers opened (a consumer's view)."""
    out: list[LegacyRecord] = []
    for view in iter_entries(data):
        out.extend(deep_records(read_entry(view), max_uncompressed_bytes))
    return out


def trim_message_set(data: bytes, limit: int, min_one: bool) -> bytes:
    """The whole log entries of ``data`` that fit in ``limit`` bytes (with
    ``min_one``, at least the first, whatever its size: a consumer must always
    make progress, KIP-74)."""
    view = memoryview(data)
    pos = 0
    while pos < len(view):
        size = LOG_OVERHEAD + _INT32.unpack_from(view, pos + 8)[0]
        if pos + size > limit and not (min_one and pos == 0):
            break
        pos += size
    return bytes(view[:pos])


# --- building -------------------------------------------------------------------------


def encode_message(offset: int, magic: int, attributes: int, timestamp: int,
                   key: bytes | None, value: bytes | None) -> bytes:
    """One log entry: offset, size, and the message with its CRC."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == MAGIC_V1:
        body += _INT64.pack(timestamp)
    for part in (key, value):
        if part is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(part))
            body += part
    return _ENTRY_HEAD.pack(offset, len(body) + 4) + struct.pack(">I", zlib.crc32(body)) + body


def build_message_set(records: Iterable[LegacyRecord], magic: int, *,
                      compression: int = Compression.NONE,
                      timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                      log_append_time: int = NO_TIMESTAMP) -> bytes:
    """A message set of ``records`` (absolute offsets), as Kafka's builder writes
    it down-converting: one message each, or one wrapper of ``compression``
    holding them all (magic 1: relative inner offsets, the wrapper at the last
    offset and the largest timestamp, or ``log_append_time``)."""
    if compression == Compression.ZSTD:
        raise UnsupportedCompressionTypeError(
            "zstd compression is not supported for magic 0 and 1 message sets")
    items = list(records)
    if not items:
        return b""
    log_append = magic == MAGIC_V1 and timestamp_type == TimestampType.LOG_APPEND_TIME
    type_bit = LEGACY_TIMESTAMP_TYPE_MASK if log_append else 0

    def stamp(record: LegacyRecord) -> int:
        if magic == MAGIC_V0:
            return NO_TIMESTAMP
        return log_append_time if log_append else record.timestamp

    if compression == Compression.NONE:
        return b"".join(encode_message(r.offset, magic, type_bit, stamp(r), r.key, r.value)
                        for r in items)
    base = items[0].offset
    inner = b"".join(
        encode_message(r.offset - base if magic == MAGIC_V1 else r.offset, magic, 0,
                       stamp(r), r.key, r.value) for r in items)
    packed = compress(compression, inner)
    if compression == Compression.LZ4 and magic == MAGIC_V0:
        packed = lz4_fix_header_checksum(packed, broken=True)
    wrapper_ts = NO_TIMESTAMP if magic == MAGIC_V0 else (
        log_append_time if log_append else max(r.timestamp for r in items))
    return encode_message(items[-1].offset, magic, int(compression) | type_bit, wrapper_ts,
                          None, packed)


# --- LZ4 frames of magic 0 (KAFKA-3160) -----------------------------------------------

_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


def lz4_fix_header_checksum(frame: bytes, broken: bool) -> bytes:
    """``frame`` with its header checksum byte rewritten: the standard one
    (xxh32 of the frame descriptor), or with ``broken`` Kafka's magic-0 one
    (xxh32 of the frame's magic bytes and descriptor).  Not a frame: unchanged
    (the decompressor then reports it)."""
    if len(frame) < 7 or frame[:4] != _LZ4_FRAME_MAGIC:
        return frame
    flags = frame[4]
    hc_pos = 6 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0)
    if len(frame) <= hc_pos:
        return frame
    start = 0 if broken else 4
    checksum = (xxh32(frame[start:hc_pos]) >> 8) & 0xFF
    return frame[:hc_pos] + bytes([checksum]) + frame[hc_pos + 1:]


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 (the LZ4 frame format's checksum) of a few header bytes."""
    n, pos = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos:pos + 4], "little")
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (h + int.from_bytes(data[pos:pos + 4], "little") * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (h + data[pos] * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)
