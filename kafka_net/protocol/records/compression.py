"""Bounded decompression of a batch's records: gzip, snappy, lz4, zstd.

A compressed batch is at most message.max.bytes (1 MB) on the wire, but zeros
compress about 1000:1 with gzip and far more with zstd, so "decompress, then
look" would let one request allocate gigabytes.  Every codec here produces at
most ``limit`` bytes, using the codec's own way to stop early:

* gzip: ``zlib.decompressobj().decompress(data, max_length)``, member by member
  (Java's ``GZIPInputStream`` reads concatenated members too);
* zstd and lz4: cramjam's ``decompress_into`` a buffer of at most ``limit + 1``
  bytes, which stops the codec when the buffer is full.  zstd frames (and
  concatenated frames) are read as Kafka's zstd-jni reads them, with the
  decoder's default window bound (2^27 bytes, as zstd-jni's); the window fills
  only as output is written, so what a bomb costs is the limit.  lz4 is the
  standard LZ4 frame format Kafka writes for magic 2;
* snappy: Kafka's Java client writes xerial's framing (an 8-byte magic, two
  version ints, then blocks of ``int32 length + raw snappy``); librdkafka
  does too.  Each raw snappy block starts with its uncompressed length, which
  is checked against what is left of ``limit`` *before* the block is
  decompressed.  Input without the xerial magic is read as one raw snappy
  block, as xerial's ``SnappyInputStream`` does.

Past ``limit``: :class:`DecompressionLimitError` (CORRUPT_MESSAGE).  Data the
codec cannot read: :class:`CorruptRecordError` (Kafka: "Failed to decompress
record stream").  A gzip, lz4 or zstd stream that stops early is INVALID_RECORD
(Kafka hits EOF while reading records).

One library, cramjam, gives zstd, lz4 and snappy (gzip is the stdlib's zlib),
so the broker's install stays small (README, "Install size").

The codec libraries are imported on first use, so importing this package
costs nothing for a reader of uncompressed batches.
"""

from __future__ import annotations

import importlib
import zlib

from kafka_net.protocol.records.framing import (
    Compression, CorruptRecordError, DecompressionLimitError, InvalidRecordError, RecordError,
    UnsupportedCompressionTypeError)

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_SIZE = 16  # magic, int32 version, int32 compatible version


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:  # a broker installed without the codec cannot read the batch
        raise UnsupportedCompressionTypeError(
            f"the {name} package is not installed, so this broker cannot read the batch"
        ) from None


def decompress(codec: int, data: memoryview, limit: int) -> bytes:
    """The records of a batch compressed with ``codec``, at most ``limit`` bytes of them."""
    if codec == Compression.GZIP:
        return _gunzip(data, limit)
    if codec == Compression.ZSTD:
        return _unzstd(data, limit)
    if codec == Compression.LZ4:
        return _unlz4(data, limit)
    if codec == Compression.SNAPPY:
        return _unsnappy(data, limit)
    raise UnsupportedCompressionTypeError(f"unknown compression type id {codec}")


def _too_big(codec: str, limit: int) -> DecompressionLimitError:
    return DecompressionLimitError(
        f"{codec} records decompress to more than message.max.uncompressed.bytes "
        f"({limit} bytes)")


def _gunzip(data: memoryview, limit: int) -> bytes:
    """One or more concatenated gzip members.

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
            raise _too_big("gzip", limit)
        if not d.eof:
            if first:
                raise InvalidRecordError("gzip record stream ends early (premature EOF)")
            break
        rest = d.unused_data
        first = False
    return bytes(out)


# A first output buffer of this many times the compressed size (at least
# FIRST_GUESS_MIN) holds ordinary batches; only a batch that inflates further
# (a bomb, or zeros) is decompressed a second time into a buffer of the limit.
FIRST_GUESS_RATIO = 8
FIRST_GUESS_MIN = 64 * 1024


def _bounded(name: str, codec, data: memoryview, limit: int) -> bytes:
    """``codec.decompress_into`` (cramjam) into a buffer of at most ``limit + 1``
    bytes: the codec stops when the buffer is full, so a bomb costs the limit,
    never what it would inflate to."""
    size = min(limit + 1, max(FIRST_GUESS_MIN, FIRST_GUESS_RATIO * len(data)))
    while True:
        out = bytearray(size)
        try:
            written = codec.decompress_into(data, out)
        except Exception as exc:   # cramjam.DecompressionError (and ValueError on bad input)
            message = str(exc)
            if "failed to write whole buffer" not in message:
                raise _unreadable(name, message) from None
            if size > limit:
                raise _too_big(name, limit) from None
            size = limit + 1       # the first guess was short: once more, at the bound
            continue
        if written > limit:
            raise _too_big(name, limit)
        return bytes(memoryview(out)[:written])


def _unreadable(name: str, message: str) -> RecordError:
    # A frame that stops early is INVALID_RECORD, as Kafka hits EOF reading records;
    # anything else the codec cannot read is CORRUPT_MESSAGE.
    if any(word in message for word in ("incomplete", "truncated", "empty input")):
        return InvalidRecordError(f"{name} record stream ends early (premature EOF): {message}")
    return CorruptRecordError(f"failed to decompress {name} records: {message}")


def _unzstd(data: memoryview, limit: int) -> bytes:
    return _bounded("zstd", _module("cramjam").zstd, data, limit)


def _unlz4(data: memoryview, limit: int) -> bytes:
    return _bounded("lz4", _module("cramjam").lz4, data, limit)


def _unsnappy(data: memoryview, limit: int) -> bytes:
    cramjam = _module("cramjam")
    if bytes(data[:len(XERIAL_MAGIC)]) != XERIAL_MAGIC:
        return _snappy_block(cramjam, data, limit, limit)
    out = bytearray()
    pos, end = XERIAL_HEADER_SIZE, len(data)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError("snappy (xerial) block length cut short")
        size = int.from_bytes(data[pos:pos + 4], "big")
        pos += 4
        if size > end - pos:
            raise CorruptRecordError(
                f"snappy (xerial) block of {size} bytes, only {end - pos} bytes left")
        out += _snappy_block(cramjam, data[pos:pos + size], limit - len(out), limit)
        pos += size
    return bytes(out)


def _snappy_block(cramjam, block: memoryview, room: int, limit: int) -> bytes:
    """One raw snappy block, refused on its declared length if that exceeds ``room``."""
    try:
        declared = cramjam.snappy.decompress_raw_len(block)
        if declared > room:
            raise _too_big("snappy", limit)
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"failed to decompress snappy records: {exc}") from None
