"""Bounded decompression of a batch's records: gzip, snappy, lz4, zstd.

A compressed batch is at most message.max.bytes (1 MB) on the wire, but zeros
compress about 1000:1 with gzip and far more with zstd, so "decompress, then
look" would let one request allocate gigabytes.  Every codec here produces at
most ``limit`` bytes, using the codec's own way to stop early:

* gzip: ``zlib.decompressobj().decompress(data, max_length)``, member by member
  (Java's ``GZIPInputStream`` reads concatenated members too);
* zstd: ``zstandard``'s stream reader, read at most ``limit + 1`` bytes; the
  window the frame may ask for is capped as well (a window is allocated
  before a single byte comes out);
* lz4: ``lz4.frame.LZ4FrameDecompressor.decompress(data, max_length)``
  (Kafka writes the standard LZ4 frame format for magic 2);
* snappy: Kafka's Java client writes xerial's framing (an 8-byte magic, two
  version ints, then blocks of ``int32 length + raw snappy``); librdkafka
  does too.  Each raw snappy block starts with its uncompressed length, which
  is checked against what is left of ``limit`` *before* the block is
  decompressed.  Input without the xerial magic is read as one raw snappy
  block, as xerial's ``SnappyInputStream`` does.

Past ``limit``: :class:`DecompressionLimitError` (CORRUPT_MESSAGE).  Data the
codec cannot read: :class:`CorruptRecordError` (Kafka: "Failed to decompress
record stream").  A gzip or lz4 stream that stops early is INVALID_RECORD
(Kafka hits EOF while reading records); zstd's reader returns what it has,
and the record walk reports the missing records as INVALID_RECORD too.

The codec libraries are imported on first use, so importing this package
costs nothing for a reader of uncompressed batches.
"""

from __future__ import annotations

import importlib
import zlib

from kafka_net.protocol.records.framing import (
    Compression, CorruptRecordError, DecompressionLimitError, InvalidRecordError,
    UnsupportedCompressionTypeError)

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_SIZE = 16  # magic, int32 version, int32 compatible version
# zstd refuses frames whose window is larger than this (or than the limit, when
# that is larger): 8 MiB covers every compression level up to 19 (windowLog 23)
# for streams of unknown size.  Kafka's zstd-jni allows 128 MiB (windowLog 27).
ZSTD_MIN_WINDOW_CAP = 1 << 23
ZSTD_MAX_WINDOW_CAP = 1 << 27


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


def zstd_window_cap(limit: int) -> int:
    """Largest zstd window accepted: no output may exceed ``limit`` anyway."""
    cap = ZSTD_MIN_WINDOW_CAP
    while cap < limit and cap < ZSTD_MAX_WINDOW_CAP:
        cap <<= 1
    return cap


def _unzstd(data: memoryview, limit: int) -> bytes:
    zstandard = _module("zstandard")
    out = bytearray()
    try:
        dctx = zstandard.ZstdDecompressor(max_window_size=zstd_window_cap(limit))
        reader = dctx.stream_reader(data, read_across_frames=True)
        while True:
            chunk = reader.read(limit - len(out) + 1)
            if not chunk:
                break
            out += chunk
            if len(out) > limit:
                raise _too_big("zstd", limit)
    except zstandard.ZstdError as exc:
        raise CorruptRecordError(f"failed to decompress zstd records: {exc}") from None
    return bytes(out)


def _unlz4(data: memoryview, limit: int) -> bytes:
    frame = _module("lz4.frame")
    decompressor = frame.LZ4FrameDecompressor()
    try:
        out = decompressor.decompress(data, max_length=limit + 1)
    except RuntimeError as exc:  # lz4.frame's only error type
        raise CorruptRecordError(f"failed to decompress lz4 records: {exc}") from None
    if len(out) > limit:
        raise _too_big("lz4", limit)
    if not decompressor.eof:
        raise InvalidRecordError("lz4 record stream ends early (premature EOF)")
    return out


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
