"""ReplicaManager: the partitions this broker leads, and appends and reads on them.

Named after Kafka's ``ReplicaManager``, reduced to one node: this broker
leads every partition, the ISR is itself, so the high watermark is the log
end offset and ``acks=-1`` is satisfied by the local append.

Appends (``append_records``) validate the batch (:mod:`kafka_net.protocol.records`),
check idempotent-producer sequences (:mod:`.producer_state`), assign offsets
and store the batch, all under the partition's lock; then they wake any
delayed Fetch watching the partition (``fetch_purgatory``).
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass, field

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import RecordError, validate_produce_records
from kafka_net.server.producer_state import ProducerStateManager, SequenceError
from kafka_net.server.purgatory import Purgatory
from kafka_net.server.storage import FetchResult, InMemoryLog
from kafka_net.server.storage.base import OffsetOutOfRange

log = logging.getLogger(__name__)
# One client can send bad batches as fast as it likes: one line per partition per 10 s.
_rejected_log = RateLimitedLog(log)

TopicPartition = tuple[str, int]


@dataclass
class Partition:
    topic: str
    index: int
    topic_id: uuid.UUID
    log: InMemoryLog = field(default_factory=InMemoryLog)
    producers: ProducerStateManager = field(default_factory=ProducerStateManager)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class ProduceResult:
    error_code: int
    base_offset: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


class ReplicaManager:
    def __init__(self, max_message_bytes: int = 1048588) -> None:
        self._partitions: dict[TopicPartition, Partition] = {}
        self._lock = threading.Lock()
        self.max_message_bytes = max_message_bytes
        self.fetch_purgatory = Purgatory("Fetch")

    # -- partitions ---------------------------------------------------------------------

    def ensure_partitions(self, topic: str, topic_id: uuid.UUID, count: int) -> None:
        with self._lock:
            for index in range(count):
                self._partitions.setdefault((topic, index), Partition(topic, index, topic_id))

    def delete_topic(self, topic: str) -> None:
        with self._lock:
            deleted = [tp for tp in self._partitions if tp[0] == topic]
            for tp in deleted:
                del self._partitions[tp]
        # Wake fetches waiting on the deleted partitions: they answer with an error now.
        for tp in deleted:
            self.fetch_purgatory.check_and_complete(tp)

    def partition(self, topic: str, index: int) -> Partition | None:
        return self._partitions.get((topic, index))

    # -- produce ------------------------------------------------------------------------

    def append_records(self, topic: str, index: int, records: bytes | None,
                       api_version: int) -> ProduceResult:
        partition = self.partition(topic, index)
        if partition is None:
            return ProduceResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            header, batch = validate_produce_records(
                records, api_version, max_batch_size=self.max_message_bytes)
        except RecordError as exc:
            _rejected_log.log(logging.INFO, (topic, index),
                              "Rejected a batch for %s-%d: %s", topic, index, escape(exc))
            return ProduceResult(exc.error_code, error_message=str(exc))
        with partition.lock:
            try:
                result = self._append_locked(partition, header, batch)
            except SequenceError as exc:
                return ProduceResult(exc.error_code, error_message=str(exc))
        self.fetch_purgatory.check_and_complete((topic, index))
        return result

    @staticmethod
    def _append_locked(partition: Partition, header, batch) -> ProduceResult:
        count = header.records_count
        if header.has_producer_id:
            duplicate = partition.producers.check(
                header.producer_id, header.producer_epoch, header.base_sequence, count)
            if duplicate is not None:
                # A retry of a batch we already have: acknowledge the original offsets.
                return ProduceResult(ErrorCode.NONE, duplicate.first_offset,
                                     partition.log.log_start_offset)
        appended = partition.log.append(bytearray(batch), count, header.max_timestamp)
        if header.has_producer_id:
            partition.producers.record(header.producer_id, header.producer_epoch,
                                       header.base_sequence, count,
                                       appended.base_offset, appended.last_offset)
        return ProduceResult(ErrorCode.NONE, appended.base_offset, appended.log_start_offset)

    # -- fetch --------------------------------------------------------------------------

    def read(self, topic: str, index: int, fetch_offset: int, max_bytes: int,
             min_one_batch: bool) -> tuple[int, FetchResult | None]:
        """(error_code, result) for one partition of a Fetch."""
        partition = self.partition(topic, index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        try:
            return ErrorCode.NONE, partition.log.read(fetch_offset, max_bytes, min_one_batch)
        except OffsetOutOfRange:
            return ErrorCode.OFFSET_OUT_OF_RANGE, None

    def bytes_available(self, topic: str, index: int, fetch_offset: int) -> int:
        """Rough bytes readable from ``fetch_offset`` (for a delayed fetch's min_bytes)."""
        partition = self.partition(topic, index)
        if partition is None:
            return 1  # an error is an answer: complete the fetch
        return partition.log.bytes_from(fetch_offset)
