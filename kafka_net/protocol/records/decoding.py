"""Consumer-side decoding of a batch into :class:`Record` objects (tests, capture, tools).

The broker never calls this: it validates with :mod:`.validation`, which
builds no per-record objects.  The decoder runs the same checks first (frame,
CRC, compression id, bounded decompression, :func:`walk_records`), so every
batch it decodes is known to be well formed and the parse below checks nothing.

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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, Union

from kafka_net.protocol.primitives import Reader
from kafka_net.protocol.records.compression import decompress
from kafka_net.protocol.records.framing import (
    DEFAULT_MAX_UNCOMPRESSED_BYTES, RECORD_BATCH_OVERHEAD, BatchHeader, Buffer, Compression,
    InvalidRecordError, TimestampType, as_byte_view, check_compression_id, check_crc,
    frame_batch)
from kafka_net.protocol.records.validation import walk_records

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
    """The records of one batch, any codec.

    Offsets are ``base_offset + offset_delta``; timestamps ``base_timestamp +
    timestamp_delta``, or ``max_timestamp`` for LogAppendTime batches (as Kafka
    reads them).  Raises :class:`RecordError` subclasses only.
    """
    view = as_byte_view(batch)
    header = frame_batch(view)
    if verify_crc:
        check_crc(view, header)
    check_compression_id(header)
    if header.records_count < 0:
        raise InvalidRecordError(f"found invalid record count {header.records_count}")
    payload = view[RECORD_BATCH_OVERHEAD:]
    if header.compression == Compression.NONE:
        records = bytes(payload)
    else:
        records = decompress(header.compression, payload, max_uncompressed_bytes)
    walk_records(records, header.records_count)
    return _parse_records(header, records)


def _nullable_bytes(r: Reader) -> bytes | None:
    n = r.varint()
    return None if n < 0 else r.raw(n)  # Kafka treats any negative length as null


def _parse_records(header: BatchHeader, payload: bytes) -> list[Record]:
    """Parse records :func:`walk_records` has already checked."""
    log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    r = Reader(payload)
    out: list[Record] = []
    for _ in range(header.records_count):
        r.varint()  # record length
        r.int8()  # record attributes: unused in v2
        timestamp_delta = r.varlong()
        offset_delta = r.varint()
        key = _nullable_bytes(r)
        value = _nullable_bytes(r)
        headers = []
        for _ in range(r.varint()):
            # Java decodes header keys leniently (malformed bytes become U+FFFD).
            header_key = r.raw(r.varint()).decode("utf-8", "replace")
            headers.append((header_key, _nullable_bytes(r)))
        timestamp = header.max_timestamp if log_append else header.base_timestamp + timestamp_delta
        out.append(Record(key, value, tuple(headers), timestamp,
                          header.base_offset + offset_delta))
    return out
