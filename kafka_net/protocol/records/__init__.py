"""Record batches (message format v2, "magic 2"), sans-IO, split by audience.

Produce requests carry, per partition, a ``records`` blob; Fetch responses
return the same bytes.  Since Kafka 0.11 that blob holds record batches
(``DefaultRecordBatch.java``).  The modules:

* :mod:`.framing`: layout, errors, the 61-byte header, and the checks on a
  batch's frame (size field, magic, CRC32C), each written once; splitting a
  blob into batches; rewriting base offset and leader epoch in place.
* :mod:`.compression`: decompression bounded by message.max.uncompressed.bytes
  (gzip, snappy, lz4, zstd).
* :mod:`.validation`: the broker's path (Kafka's ``LogValidator``): every
  check on a produced batch, records walked without building objects.
* :mod:`.decoding`: :class:`Record` objects for consumers (tests, capture, tools).
* :mod:`.building`: batches for tests and benchmarks.
* :mod:`.control`: the marker record of a control batch (ABORT or COMMIT),
  read and written; :mod:`.compaction`: one stored batch rewritten for log
  compaction.
* :mod:`.legacy`: message sets of the formats before batches (magic 0 and 1),
  read and built; :mod:`.conversion`: converting them up (Produce v0-v2) and
  stored batches down (Fetch v0-v3) while playing a Kafka release before 4.0.

Every name below stays importable as ``from kafka_net.protocol.records import X``.
"""

from kafka_net.protocol.records.building import (
    RecordLike, batch_from_payload, build_batch, build_key_value_batch, compress,
    encode_record)
from kafka_net.protocol.records.compression import decompress
from kafka_net.protocol.records.decoding import Header, Record, decode_records
from kafka_net.protocol.records.framing import (
    ATTRIBUTES_OFFSET, BASE_OFFSET_OFFSET, COMPRESSION_MASK, CONTROL_MASK, CRC_OFFSET,
    CURRENT_MAGIC, DEFAULT_MAX_UNCOMPRESSED_BYTES, DELETE_HORIZON_MASK, HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_RECORD_OVERHEAD_V0, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2,
    NO_OFFSET, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
    NO_TIMESTAMP, PARTITION_LEADER_EPOCH_OFFSET, RECORD_BATCH_OVERHEAD, RECORDS_COUNT_OFFSET,
    TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, UNSUPPORTED_COMPRESSION_TYPE, BatchHeader, Buffer,
    Compression, CorruptRecordError, DecompressionLimitError, InvalidRecordError, RecordError,
    RecordTooLargeError, TimestampType, UnsupportedCompressionTypeError, compute_crc,
    iter_batches, read_header, read_records_count, set_base_offset, set_log_append_time,
    set_partition_leader_epoch, split_batches,
    with_base_offset, with_base_offset_and_epoch)
from kafka_net.protocol.records.validation import (
    DecompressionBudget, KeylessRecordsError, keyless_records, validate_batch,
    validate_produce_records, walk_records)

__all__ = [
    "ATTRIBUTES_OFFSET", "BASE_OFFSET_OFFSET", "COMPRESSION_MASK", "CONTROL_MASK", "CRC_OFFSET",
    "CURRENT_MAGIC", "DEFAULT_MAX_UNCOMPRESSED_BYTES", "DELETE_HORIZON_MASK",
    "HEADER_SIZE_UP_TO_MAGIC", "LEGACY_RECORD_OVERHEAD_V0", "LENGTH_OFFSET", "LOG_OVERHEAD",
    "MAGIC_OFFSET", "MAGIC_V2", "NO_OFFSET", "NO_PARTITION_LEADER_EPOCH", "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID", "NO_SEQUENCE", "NO_TIMESTAMP", "PARTITION_LEADER_EPOCH_OFFSET",
    "RECORD_BATCH_OVERHEAD", "RECORDS_COUNT_OFFSET", "TIMESTAMP_TYPE_MASK", "TRANSACTIONAL_MASK",
    "UNSUPPORTED_COMPRESSION_TYPE", "BatchHeader", "Buffer", "Compression", "CorruptRecordError",
    "DecompressionBudget", "DecompressionLimitError", "Header", "InvalidRecordError",
    "KeylessRecordsError", "Record",
    "RecordError", "RecordLike", "RecordTooLargeError", "TimestampType",
    "UnsupportedCompressionTypeError",
    "batch_from_payload", "build_batch", "build_key_value_batch", "compress", "compute_crc",
    "decode_records", "decompress", "encode_record", "iter_batches", "keyless_records",
    "read_header", "read_records_count", "set_base_offset", "set_log_append_time",
    "set_partition_leader_epoch", "split_batches", "validate_batch", "validate_produce_records",
    "walk_records", "with_base_offset", "with_base_offset_and_epoch",
]
