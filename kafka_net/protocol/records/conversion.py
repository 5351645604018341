"""Converting between legacy message sets (magic 0/1) and record batches (magic 2), sans-IO.

kafka-net stores magic 2 only.  Playing a Kafka release before 4.0
(``as.version``), it speaks the legacy formats at the edges, as Kafka 3.x's
broker did with ``log.message.format.version`` at its 3.x default (magic 2):

* **Up** (Produce v0-v2, :func:`up_convert_produce`): Kafka's
  ``UnifiedLog.analyzeAndValidateRecords`` and ``LogValidator``.  Each entry
  is checked against max.message.bytes (MESSAGE_TOO_LARGE) and its CRC
  (CORRUPT_MESSAGE) first; then every message becomes one record of a single
  new magic-2 batch: magic-0 messages get timestamp -1 (the log's timestamp
  type stamps them on a LogAppendTime topic), keys are required on
  compacted topics, a producer's LogAppendTime timestamp type is refused on a
  LogAppendTime topic or without a timestamp (INVALID_TIMESTAMP), and the
  batch is compressed with the topic's compression.type (``producer``: the
  wrapper's codec).  Several uncompressed messages are allowed, but a
  compressed wrapper must be the only entry ("Compressed outer record has more
  than one batch").  The converted batch is checked against
  max.message.bytes again.  Legacy producers have no producer id, so the
  batch is neither idempotent nor transactional.  Produce v0-v2 may carry a
  magic-2 batch too (Kafka does not check the magic below v3); it is
  validated as in v3+.
* **Down** (Fetch v0-v3, :func:`down_convert`): Kafka's
  ``RecordsUtil.downConvert``.  Each stored batch becomes one uncompressed
  message per record, or one wrapper of the batch's codec; control batches
  and headers are dropped; records of an uncompressed batch below the fetch
  offset are skipped (a compressed batch keeps them, as Kafka's, to keep the
  wrapper whole; consumers skip them); a LogAppendTime batch gives its time
  to every message (magic 1).  A zstd batch cannot be written in these
  formats: :class:`UnsupportedCompressionTypeError` for that partition.
"""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records.building import build_batch
from kafka_net.protocol.records.decoding import Record, decode_records
from kafka_net.protocol.records.framing import (
    MAGIC_OFFSET, MAGIC_V2, NO_TIMESTAMP, BatchHeader, Buffer, Compression,
    DecompressionLimitError, InvalidRecordError, RecordError, RecordTooLargeError,
    TimestampType, UnsupportedCompressionTypeError, as_byte_view, complete_batch_size,
    read_header)
from kafka_net.protocol.records.legacy import (
    LegacyEntry, LegacyRecord, build_message_set, check_crc, deep_records, read_entry)
from kafka_net.protocol.records.validation import (
    DecompressionBudget, KeylessRecordsError, _over_budget, validate_batch)

# compression.type values (topic config) -> codec; "producer" keeps the source's.
TOPIC_CODECS = {"uncompressed": Compression.NONE, "gzip": Compression.GZIP,
                "snappy": Compression.SNAPPY, "lz4": Compression.LZ4,
                "zstd": Compression.ZSTD}


class InvalidTimestampError(RecordError):
    """Kafka's ``InvalidTimestampException`` (LogValidator.validateTimestamp)."""

    error_code = ErrorCode.INVALID_TIMESTAMP


def up_convert_produce(records: Buffer | None, *, max_batch_size: int | None = None,
                       max_uncompressed_bytes: int,
                       budget: DecompressionBudget | None = None,
                       compacted: bool = False, log_append_time: bool = False,
                       compression_type: str = "producer",
                       ) -> tuple[BatchHeader, bytes] | None:
    """One partition's ``records`` of a Produce v0-v2 request as one magic-2 batch
    (base offset 0, ready to append); None if it holds no complete entry (Kafka
    appends nothing and answers NONE).  Raises :class:`RecordError` subclasses."""
    view = as_byte_view(b"" if records is None else records)
    entries = _split(view)
    if not entries:
        return None
    first_magic = entries[0][MAGIC_OFFSET]
    if first_magic == MAGIC_V2:
        return _magic2(entries, max_batch_size, max_uncompressed_bytes, budget, compacted)
    parsed = []
    for entry in entries:   # analyzeAndValidateRecords: size, then CRC, entry by entry
        if max_batch_size is not None and len(entry) > max_batch_size:
            raise RecordTooLargeError(
                f"the message is {len(entry)} bytes, more than the maximum {max_batch_size}")
        check_crc(entry)
        parsed.append(read_entry(entry, verify_crc=False))
    source = next((e.compression for e in parsed if e.compression), Compression.NONE)
    if source != Compression.NONE and len(parsed) > 1:
        raise InvalidRecordError("Compressed outer record has more than one batch")
    converted = []
    for entry in parsed:
        if entry.magic != first_magic:
            raise InvalidRecordError(
                f"Batch magic {entry.magic} is not the same as the first batch's magic byte "
                f"{first_magic}")
        converted += _deep(entry, max_uncompressed_bytes, budget)
    _check_records(parsed[0], converted, compacted, log_append_time)
    codec = TOPIC_CODECS.get(compression_type, source)
    batch = build_batch([Record(r.key, r.value, (), r.timestamp) for r in converted],
                        compression=codec)
    if max_batch_size is not None and len(batch) > max_batch_size:
        raise RecordTooLargeError(
            f"the converted record batch is {len(batch)} bytes, more than the maximum "
            f"{max_batch_size}")
    return read_header(batch), batch


def _split(view: memoryview) -> list[memoryview]:
    """The complete entries of any magic (a partial tail is dropped, as Kafka's
    ``ByteBufferLogInputStream``; a bad size field or magic is CORRUPT_MESSAGE)."""
    out, pos = [], 0
    while True:
        size = complete_batch_size(view, pos)
        if not size:
            return out
        out.append(view[pos:pos + size])
        pos += size


def _magic2(entries: list[memoryview], max_batch_size, max_uncompressed_bytes, budget,
            compacted) -> tuple[BatchHeader, memoryview]:
    if len(entries) > 1:
        raise InvalidRecordError("Compressed outer record has more than one batch")
    first = entries[0]
    header = validate_batch(first, max_batch_size=max_batch_size,
                            max_uncompressed_bytes=max_uncompressed_bytes, budget=budget,
                            compacted=compacted)
    return header, first


def _deep(entry: LegacyEntry, limit: int, budget: DecompressionBudget | None
          ) -> list[LegacyRecord]:
    """The entry's messages; a wrapper's inflation is charged to the request's budget."""
    if not entry.compression or budget is None:
        return deep_records(entry, limit)
    room = max(0, min(limit, budget.bytes_left))
    try:
        records = deep_records(entry, room)
    except DecompressionLimitError:
        budget.bytes_left -= room
        if room < limit:
            raise _over_budget(f"more than the {room} bytes left") from None
        raise
    budget.bytes_left -= sum(len(r.key or b"") + len(r.value or b"") for r in records)
    if len(records) > budget.items_left:
        raise _over_budget(f"{len(records)} records, {budget.items_left} left")
    budget.items_left -= len(records)
    return records


def _check_records(first: LegacyEntry, records: list[LegacyRecord], compacted: bool,
                   log_append_time: bool) -> None:
    """LogValidator.validateRecord's key and timestamp rules, every record."""
    if compacted:
        keyless = [i for i, r in enumerate(records) if r.key is None]
        if keyless:
            raise KeylessRecordsError(keyless)
    if first.timestamp_type == TimestampType.LOG_APPEND_TIME and (
            log_append_time or any(r.timestamp == NO_TIMESTAMP for r in records)):
        raise InvalidTimestampError(
            "One or more records have been rejected due to invalid timestamp: a producer "
            "should not set timestamp type to LogAppendTime")


# --- down-conversion (Fetch v0-v3) ---------------------------------------------------------


def down_convert(batches, to_magic: int, fetch_offset: int,
                 max_uncompressed_bytes: int) -> bytes:
    """Stored magic-2 ``batches`` (each a complete batch) as a message set of
    ``to_magic`` (0 or 1)."""
    out = bytearray()
    for batch in batches:
        header = read_header(batch)
        if header.is_control:
            continue
        codec = header.compression
        if codec == Compression.ZSTD:
            raise UnsupportedCompressionTypeError(
                "zstd batches cannot be down-converted to message format "
                f"v{to_magic} (fetch offset {fetch_offset})")
        records = decode_records(batch, verify_crc=False,
                                 max_uncompressed_bytes=max_uncompressed_bytes)
        if codec == Compression.NONE:
            records = [r for r in records if r.offset >= fetch_offset]
        if not records:
            continue
        out += build_message_set(
            [LegacyRecord(r.offset, r.timestamp, r.key, r.value) for r in records],
            to_magic, compression=codec, timestamp_type=header.timestamp_type,
            log_append_time=header.max_timestamp)
    return bytes(out)
