"""Rewriting one stored batch for log compaction (Kafka's ``MemoryRecords.filterTo``), sans-IO.

The log cleaner (:mod:`kafka_net.server.storage.cleaner`) decides, batch by
batch, what to keep: the whole batch gone (:data:`DELETE`), kept even if no
record survives (:data:`RETAIN_EMPTY`: the last batch of a producer, which
carries its last sequence, or the last batch of a cleaning round), or gone
once empty (:data:`DELETE_EMPTY`); and record by record, through a
predicate.  :func:`filter_batch` then writes what is kept as Kafka does:

* a batch whose records all survive, and that needs no delete horizon, is
  copied as it is (same bytes, same CRC);
* otherwise it is rebuilt: the same base offset and ``last_offset_delta``
  (so offsets never move and the producer's last sequence stays readable),
  the same producer id, epoch, base sequence, partition leader epoch and
  attribute flags, each kept record with its own offset delta, the records
  compressed again with the batch's codec, the CRC computed again;
* a batch holding a tombstone (a record with a null value), or a marker of
  an empty transaction, gets a *delete horizon* the first time it is cleaned
  (KIP-534): the ``DELETE_HORIZON_MASK`` attribute set and the base
  timestamp replaced by ``now + delete.retention.ms``, the records'
  timestamp deltas rewritten against it so each record keeps its timestamp;
* an empty batch kept (:data:`RETAIN_EMPTY`) is a bare 61-byte header with
  no records and no compression (Kafka's ``DefaultRecordBatch.writeEmptyHeader``).

Records are parsed only as far as the cleaner needs (offset, timestamp, key,
whether the value is null); the rest of a record (value and headers) is
carried over as bytes.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from kafka_net.protocol.primitives import Writer
from kafka_net.protocol.records.building import compress
from kafka_net.protocol.records.compression import decompress
from kafka_net.protocol.records.framing import (
    CRC_OFFSET, DEFAULT_MAX_UNCOMPRESSED_BYTES, DELETE_HORIZON_MASK, HEADER_STRUCT,
    LOG_OVERHEAD, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_MASK, UINT32,
    BatchHeader, Buffer, Compression, as_byte_view, compute_crc, read_header)
from kafka_net.protocol.records.validation import _varint

# Kafka's RecordFilter.BatchRetention
DELETE = 0          # drop the whole batch
DELETE_EMPTY = 1    # drop it if no record is kept
RETAIN_EMPTY = 2    # keep it even if no record is kept (as an empty batch)


class CleanRecord(NamedTuple):
    """One record of a stored batch, as the cleaner sees it."""

    offset: int
    timestamp: int
    key: bytes | None
    has_value: bool       # False: a tombstone (null value)
    rest: bytes           # the value and headers, exactly as stored


def has_delete_horizon(header: BatchHeader) -> bool:
    return bool(header.attributes & DELETE_HORIZON_MASK)


def delete_horizon_ms(header: BatchHeader) -> int | None:
    """The batch's delete horizon (its base timestamp when the flag is set), else None."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_MASK else None


def batch_records(batch: Buffer, header: BatchHeader | None = None,
                  max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES,
                  ) -> list[CleanRecord]:
    """The records of a stored (already validated) batch."""
    view = as_byte_view(batch)
    if header is None:
        header = read_header(view)
    payload = view[RECORD_BATCH_OVERHEAD:LOG_OVERHEAD + header.batch_length]
    if header.compression == Compression.NONE:
        buf = bytes(payload)
    else:
        buf = decompress(header.compression, payload, max_uncompressed_bytes)
    log_append = bool(header.attributes & TIMESTAMP_TYPE_MASK)
    out = []
    pos = 0
    for _ in range(header.records_count):
        size, pos = _varint(buf, pos, 5)
        end = pos + size
        timestamp_delta, p = _varint(buf, pos + 1, 10)     # after the attributes byte
        offset_delta, p = _varint(buf, p, 5)
        key_length, p = _varint(buf, p, 5)
        key = None
        if key_length >= 0:
            key, p = buf[p:p + key_length], p + key_length
        value_length = _varint(buf, p, 5)[0]
        timestamp = header.max_timestamp if log_append else header.base_timestamp + timestamp_delta
        out.append(CleanRecord(header.base_offset + offset_delta, timestamp, key,
                               value_length >= 0, buf[p:end]))
        pos = end
    return out


class FilterResult(NamedTuple):
    output: bytes | None       # the batch to keep (maybe the input itself), or None
    messages_read: int
    messages_retained: int
    max_timestamp: int         # of the output batch (NO_TIMESTAMP if none)


RecordPredicate = Callable[[BatchHeader, CleanRecord], bool]


def filter_batch(batch: bytes, retention: int, should_retain: RecordPredicate, *,
                 now_ms: int, delete_retention_ms: int,
                 contains_marker_for_empty_txn: bool = False,
                 header: BatchHeader | None = None,
                 max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES) -> FilterResult:
    """One batch through Kafka's ``MemoryRecords.filterTo``; see the module docstring."""
    if header is None:
        header = read_header(batch)
    if retention == DELETE:
        return FilterResult(None, 0, 0, NO_TIMESTAMP)
    records = batch_records(batch, header, max_uncompressed_bytes)
    retained = [r for r in records if should_retain(header, r)]
    if not retained:
        if retention == RETAIN_EMPTY:
            return FilterResult(empty_batch(header), len(records), 0, header.max_timestamp)
        return FilterResult(None, len(records), 0, NO_TIMESTAMP)
    tombstones = any(not r.has_value for r in retained)
    horizon = delete_horizon_ms(header)
    set_horizon = (tombstones or contains_marker_for_empty_txn) and horizon is None
    if len(retained) == len(records) and not set_horizon:
        return FilterResult(batch, len(records), len(retained), header.max_timestamp)
    if set_horizon:
        horizon = now_ms + delete_retention_ms
    rebuilt = rebuild_batch(header, retained, horizon)
    return FilterResult(rebuilt, len(records), len(retained), read_header(rebuilt).max_timestamp)


def rebuild_batch(header: BatchHeader, records: list[CleanRecord],
                  horizon: int | None) -> bytes:
    """A batch like ``header``'s holding ``records`` (Kafka's ``buildRetainedRecordsInto``):
    the base offset and last offset delta kept, the base timestamp the delete
    horizon if there is one (the flag set), else the first record's timestamp."""
    log_append = bool(header.attributes & TIMESTAMP_TYPE_MASK)
    base_timestamp = horizon if horizon is not None else records[0].timestamp
    if log_append:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max(r.timestamp for r in records)
    body = Writer()
    for record in records:
        inner = Writer()
        inner.int8(0)
        # LogAppendTime records are read as the batch's max timestamp whatever their delta
        inner.varlong(0 if log_append else record.timestamp - base_timestamp)
        inner.varint(record.offset - header.base_offset)
        if record.key is None:
            inner.varint(-1)
        else:
            inner.varint(len(record.key))
            inner.raw(record.key)
        inner.raw(record.rest)
        body.varint(len(inner.buf))
        body.raw(inner.buf)
    attributes = header.attributes
    if horizon is not None:
        attributes |= DELETE_HORIZON_MASK
    payload = compress(header.compression, body.getvalue())
    return _signed(header, attributes, payload, len(records), base_timestamp, max_timestamp)


def empty_batch(header: BatchHeader) -> bytes:
    """The header alone, no records, no compression (``writeEmptyHeader``): it keeps
    the batch's offsets, producer id, epoch and sequence in the log."""
    attributes = header.attributes & ~(DELETE_HORIZON_MASK | 0x07)
    return _signed(header, attributes, b"", 0, NO_TIMESTAMP, header.max_timestamp)


def _signed(header: BatchHeader, attributes: int, payload: bytes, count: int,
            base_timestamp: int, max_timestamp: int) -> bytes:
    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += payload
    HEADER_STRUCT.pack_into(
        out, 0, header.base_offset, len(out) - LOG_OVERHEAD, header.partition_leader_epoch,
        header.magic, 0, attributes, header.last_offset_delta, base_timestamp, max_timestamp,
        header.producer_id, header.producer_epoch, header.base_sequence, count)
    UINT32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)
