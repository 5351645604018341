"""Record timestamps inside a stored batch, for ListOffsets.

A batch header only carries the base and the max timestamp; a record's own
timestamp is the base timestamp plus its delta (or, in a LogAppendTime
batch, the batch's max timestamp for every record).  Kafka answers
ListOffsets by timestamp per record (``LogSegment.findOffsetByTimestamp``),
so the batch is decoded with :func:`kafka_net.protocol.records.decode_records`.

Every codec Kafka uses (gzip, snappy, lz4, zstd) is decoded.  A stored
batch that still cannot be decoded (it was validated on the way in, so only
a bug could cause it) is answered per batch: its first offset and max
timestamp, exact for LogAppendTime batches and one-record batches.
"""

from __future__ import annotations

from kafka_net.protocol.records import (
    RecordError, TimestampType, decode_records, read_header)


def _records(batch: bytes) -> list[tuple[int, int]] | None:
    """[(offset, timestamp)] of the batch's records, or None if it cannot be decoded."""
    header = read_header(batch)
    if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
        return [(offset, header.max_timestamp)
                for offset in range(header.base_offset, header.next_offset)]
    try:
        return [(r.offset, r.timestamp) for r in decode_records(batch, verify_crc=False)]
    except RecordError:
        return None


def first_record_at_or_after(batch: bytes, target: int,
                             min_offset: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record with offset >= ``min_offset`` and
    timestamp >= ``target``."""
    records = _records(batch)
    if records is None:
        header = read_header(batch)
        return max(header.base_offset, min_offset), header.max_timestamp
    for offset, timestamp in records:
        if offset >= min_offset and timestamp >= target:
            return offset, timestamp
    return None


def first_record_with(batch: bytes, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record whose timestamp equals ``timestamp``."""
    records = _records(batch)
    if records is None:
        return read_header(batch).base_offset, timestamp
    for offset, ts in records:
        if ts == timestamp:
            return offset, ts
    return None
