"""Building magic-2 batches, any codec (tests, bench, tools), and the broker's own
(transaction markers; the coordinators' records, :func:`build_key_value_batch`).

Compression is written the way Kafka's Java producer writes it, so what the
builder makes is what real clients send: gzip members (:mod:`zlib`), a zstd
frame, a standard LZ4 frame (cramjam, as the broker reads them), snappy in
xerial's framing (32 KiB blocks).
"""

from __future__ import annotations

import importlib
import zlib
from typing import Iterable, Union

from kafka_net.protocol.primitives import Writer, encode_uvarint
from kafka_net.protocol.records.compression import XERIAL_MAGIC
from kafka_net.protocol.records.decoding import Record
from kafka_net.protocol.records.framing import (
    COMPRESSION_MASK, CONTROL_MASK, CRC_OFFSET, HEADER_STRUCT, LOG_OVERHEAD, MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, UINT32, Compression,
    TimestampType, compute_crc)

RecordLike = Union[Record, tuple]

XERIAL_BLOCK_SIZE = 32 * 1024  # xerial SnappyOutputStream's default block
_XERIAL_VERSIONS = (1).to_bytes(4, "big") * 2  # version 1, compatible with version 1


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


# -64..63 take one byte: most lengths and deltas of a coordinator's records.
_ONE_BYTE_VARINTS = {v: bytes([(v << 1) ^ (v >> 31)]) for v in range(-64, 64)}


def _varint(v: int) -> bytes:
    """A signed (ZigZag) varint of an int32, as records write lengths and deltas."""
    small = _ONE_BYTE_VARINTS.get(v)
    return small if small is not None else encode_uvarint((v << 1) ^ (v >> 31))


def build_key_value_batch(pairs: list[tuple[bytes | None, bytes | None]], timestamp: int,
                          **fields) -> bytes:
    """An uncompressed batch of key/value records without headers, all at
    ``timestamp``: the same bytes as :func:`build_batch` makes of them, written
    without a Writer or Record per record (a coordinator builds one per
    OffsetCommit).  ``fields`` as for :func:`batch_from_payload`."""
    body = bytearray()
    for delta, (key, value) in enumerate(pairs):
        # attributes 0, timestamp delta 0, offset delta, key, value, no headers
        record = (b"\x00\x00" + _varint(delta)
                  + (b"\x01" if key is None else _varint(len(key)) + key)
                  + (b"\x01" if value is None else _varint(len(value)) + value) + b"\x00")
        body += _varint(len(record))
        body += record
    return batch_from_payload(bytes(body), len(pairs), base_timestamp=timestamp,
                              max_timestamp=timestamp, **fields)


def compress(codec: int, data: bytes, gzip_level: int = 6) -> bytes:
    """``data`` compressed as a producer compresses a batch's records."""
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        packer = zlib.compressobj(gzip_level, zlib.DEFLATED, 31)
        return packer.compress(data) + packer.flush()
    if codec == Compression.ZSTD:
        return bytes(importlib.import_module("cramjam").zstd.compress(data))
    if codec == Compression.LZ4:
        return bytes(importlib.import_module("cramjam").lz4.compress(data))
    if codec == Compression.SNAPPY:
        snappy = importlib.import_module("cramjam").snappy
        out = bytearray(XERIAL_MAGIC + _XERIAL_VERSIONS)
        for start in range(0, len(data), XERIAL_BLOCK_SIZE):
            block = bytes(snappy.compress_raw(data[start:start + XERIAL_BLOCK_SIZE]))
            out += len(block).to_bytes(4, "big") + block
        return bytes(out)
    raise ValueError(f"unknown compression {codec!r}")


def build_batch(records: Iterable[RecordLike], *, compression: int = Compression.NONE,
                max_timestamp: int | None = None, gzip_level: int = 6, **fields) -> bytes:
    """Build a valid magic-2 batch from records, compressed with any codec.

    ``records`` holds :class:`Record` objects or ``(key, value[, headers[,
    timestamp]])`` tuples; offset deltas are 0, 1, 2, ...  The base timestamp
    is the first record's, ``max_timestamp`` defaults to the largest (pass the
    append time for LogAppendTime batches).  Other keywords are header fields
    of :func:`batch_from_payload` (``base_offset``, ``producer_id``, ...).
    """
    items = [_as_record(item) for item in records]
    timestamps = [NO_TIMESTAMP if rec.timestamp is None else rec.timestamp for rec in items]
    base_timestamp = timestamps[0] if timestamps else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max(timestamps) if timestamps else NO_TIMESTAMP
    body = Writer()
    for index, (rec, ts) in enumerate(zip(items, timestamps)):
        encode_record(body, rec, index, ts - base_timestamp)
    return batch_from_payload(compress(compression, body.getvalue(), gzip_level), len(items),
                              compression=compression, base_timestamp=base_timestamp,
                              max_timestamp=max_timestamp, **fields)


def batch_from_payload(payload: bytes, count: int, *,
                       base_offset: int = 0,
                       compression: int = Compression.NONE,
                       timestamp_type: int = TimestampType.CREATE_TIME,
                       partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                       producer_id: int = NO_PRODUCER_ID,
                       producer_epoch: int = NO_PRODUCER_EPOCH,
                       base_sequence: int = NO_SEQUENCE,
                       transactional: bool = False,
                       control: bool = False,
                       base_timestamp: int = NO_TIMESTAMP,
                       max_timestamp: int = NO_TIMESTAMP) -> bytes:
    """A signed batch around an already encoded (and compressed) records area.

    For tests and benchmarks that need records no :class:`Record` describes
    (a million empty ones, a payload that inflates past a bound).
    """
    attributes = int(compression) & COMPRESSION_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK
    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += payload
    HEADER_STRUCT.pack_into(
        out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_V2,
        0, attributes, count - 1, base_timestamp, max_timestamp,
        producer_id, producer_epoch, base_sequence, count)
    UINT32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)
