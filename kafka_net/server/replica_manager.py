"""ReplicaManager: the partitions this broker leads, and appends and reads on them.

Named after Kafka's ``ReplicaManager``, reduced to one node: this broker
leads every partition, the ISR is itself, so the high watermark is the log
end offset and ``acks=-1`` is satisfied by the local append.

Appends (``append_records``) validate the batch (:mod:`kafka_net.protocol.records`),
check idempotent-producer sequences (:mod:`.producer_state`), assign offsets
and store the batch, all under the partition's lock; then they wake any
delayed Fetch watching the partition (``fetch_purgatory``).

Topic configs (:class:`~kafka_net.server.config_repository.ConfigRepository`)
act here: ``max.message.bytes`` bounds a batch (MESSAGE_TOO_LARGE) and so does
``segment.bytes`` (RECORD_LIST_TOO_LARGE), ``message.timestamp.type=
LogAppendTime`` stamps it, and a topic that sets ``retention.ms`` or
``retention.bytes`` has whole old batches deleted after each append and
whenever its configs change.  Kafka checks every
``log.retention.check.interval.ms`` (5 minutes, first after 30 s); checking
at once makes a test's retention visible without waiting, and leaving topics
on the defaults (7 days, no size limit) untouched keeps a test's records with
old timestamps readable, as they stay on Kafka for minutes.
``delete_records`` is DeleteRecords (never on an internal topic:
INVALID_TOPIC_EXCEPTION, as Kafka's "Cannot delete records of internal topic").
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    DEFAULT_MAX_UNCOMPRESSED_BYTES, NO_PRODUCER_ID, TRANSACTIONAL_MASK,
    DecompressionBudget, DecompressionLimitError, KeylessRecordsError, RecordError,
    iter_batches, read_header, read_records_count, set_log_append_time,
    validate_produce_records)
from kafka_net.protocol.records.conversion import up_convert_produce
from kafka_net.server.broker_topic_stats import BrokerTopicStats
from kafka_net.server.config_repository import ConfigRepository
from kafka_net.server.internal_topics import is_internal
from kafka_net.server.producer_state import ProducerStateManager, SequenceError
from kafka_net.server.purgatory import Purgatory
from kafka_net.server.storage import FetchResult, InMemoryLog, PartitionLog
from kafka_net.server.storage.base import (
    CorruptRecordException, KafkaStorageException, OffsetOutOfRange)
from kafka_net.server.storage.txn_index import TransactionIndex

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass
class Partition:
    """One partition this broker leads: its log, producer state, transaction index and
    lock."""

    topic: str
    index: int
    topic_id: uuid.UUID
    log: PartitionLog = field(default_factory=InMemoryLog)
    producers: ProducerStateManager = field(default_factory=ProducerStateManager)
    txns: TransactionIndex = field(default_factory=TransactionIndex)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Kafka's Partition.leaderEpoch: 0 when the topic is created; the controller
    # bumps it at each leader change, which on one node happens only across a
    # restart (the node is fenced, the partition leaderless, then led again).
    leader_epoch: int = 0

    def make_leader(self, leader_epoch: int) -> None:
        """Become the leader at ``leader_epoch`` (Kafka's ``Partition.makeLeader``):
        the epoch starts at the log end offset in the log's epoch cache.  A replay
        passes older epochs on its way to the current one; a durable log's cache
        (loaded from its checkpoint) may know newer ones: those are not rewritten."""
        with self.lock:
            self.leader_epoch = leader_epoch
            cache = self.log.leader_epoch_cache
            if leader_epoch >= cache.latest_epoch:
                cache.assign(leader_epoch, self.log.log_end_offset)

    def leader_epoch_error(self, current_leader_epoch: int) -> int:
        """A request's current_leader_epoch against ours (``Partition.checkCurrentLeaderEpoch``;
        -1 = not given): older FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    # The LogConfig last given to the log (UnifiedLog.updateConfig): compared by
    # identity on append, as the repository replaces a topic's LogConfig on change.
    config: object = None


class ProduceResult(NamedTuple):
    """One partition's append; the Produce handler unpacks it in this field order."""

    error_code: int
    base_offset: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    log_append_time_ms: int = -1
    # Produce v8+ record_errors: [{"batch_index", "batch_index_error_message"}]
    record_errors: tuple | list = ()


HIGH_WATERMARK = -1   # DeleteRecordsRequest.HIGH_WATERMARK
READ_COMMITTED = 1    # IsolationLevel.READ_COMMITTED

# (topic, partition, producer id, epoch) -> None, or (error code, message) refusing a
# transactional batch (the transaction coordinator's check, see transaction/coordinator.py).
# (topic, index, producer id, epoch, add_partition=False) -> None or (error, message)
TxnVerifier = Callable[..., "tuple[int, str] | None"]
# Produce v12+ (KIP-890 part 2): a transactional batch adds its partition to the
# transaction (Kafka's AddPartitionsToTxnManager with the addPartition operation).
IMPLICIT_ADD_PARTITION_PRODUCE_VERSION = 12


# (topic, partition index, topic id) -> the partition's log: Kafka's
# LogManager.getOrCreateLog.  The default keeps every log in memory.
LogFactory = Callable[[str, int, uuid.UUID], PartitionLog]


def in_memory_log(topic: str, index: int, topic_id: uuid.UUID) -> PartitionLog:
    return InMemoryLog()


class ReplicaManager:
    def __init__(self, max_message_bytes: int = 1048588,
                 max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES,
                 config_repository: ConfigRepository | None = None,
                 log_factory: LogFactory = in_memory_log) -> None:
        self._partitions: dict[TopicPartition, Partition] = {}
        self.log_factory = log_factory
        self._lock = threading.Lock()
        self.max_message_bytes = max_message_bytes   # the broker default; topics may override
        self.max_uncompressed_bytes = max_uncompressed_bytes  # message.max.uncompressed.bytes
        self.config_repository = config_repository or ConfigRepository(max_message_bytes)
        # A client can send bad batches as fast as it likes: one line per kind of
        # rejection per interval, with the count of the lines held back.
        self._rejections = RateLimitedLog(log)
        self.fetch_purgatory = Purgatory("Fetch")
        self.topic_stats = BrokerTopicStats()   # BytesInPerSec, ... per topic
        self.clock_ms = lambda: int(time.time() * 1000)   # tests may replace it
        # Set by the broker: transactional batches only for partitions of an ongoing
        # transaction (Kafka's transaction.partition.verification.enable).
        self.transaction_verifier: TxnVerifier | None = None

    # -- partitions ---------------------------------------------------------------------

    def ensure_partitions(self, topic: str, topic_id: uuid.UUID, count: int) -> None:
        with self._lock:
            for index in range(count):
                if (topic, index) not in self._partitions:
                    self._partitions[(topic, index)] = self._new_partition(
                        topic, index, topic_id)

    def _new_partition(self, topic: str, index: int, topic_id: uuid.UUID,
                       leader_epoch: int | None = None) -> Partition:
        partition_log = self.log_factory(topic, index, topic_id)
        partition = Partition(topic, index, topic_id, partition_log)
        # A durable log rebuilt its producer state and transaction index on load
        # (UnifiedLog); the partition works on those, so they survive a restart.
        producers = getattr(partition_log, "producer_state", None)
        if producers is not None:
            partition.producers = producers
            partition.txns = partition_log.txns
        partition.make_leader(partition.leader_epoch if leader_epoch is None else leader_epoch)
        return partition

    def ensure_partition(self, topic: str, topic_id: uuid.UUID, index: int,
                         leader_epoch: int = 0) -> None:
        """One partition (a PartitionRecord applied), its log opened or created, led
        by this node at the record's leader epoch."""
        with self._lock:
            if (topic, index) not in self._partitions:
                self._partitions[(topic, index)] = self._new_partition(
                    topic, index, topic_id, leader_epoch)

    def delete_topic(self, topic: str) -> None:
        with self._lock:
            deleted = [tp for tp in self._partitions if tp[0] == topic]
            logs = [self._partitions.pop(tp).log for tp in deleted]
        for partition_log in logs:
            partition_log.delete()
        self.topic_stats.remove_topic(topic)
        # Wake fetches waiting on the deleted partitions: they answer with an error now.
        for tp in deleted:
            self.fetch_purgatory.check_and_complete(tp)

    def replace_log(self, partition: Partition,
                    replace: Callable[[PartitionLog], PartitionLog]) -> None:
        """The partition's log swapped for ``replace(its log)`` (AlterReplicaLogDirs
        moving it to another log dir).  Under the partition lock, as every append,
        marker, retention run and DeleteRecords, so none lands in the old log once
        the copy began; reads already under way finish on the old log's files."""
        with partition.lock:
            new = replace(partition.log)
            partition.log = new
            partition.producers = new.producer_state
            partition.txns = new.txns
            partition.config = None   # the next append gives the new log its config

    def partition(self, topic: str, index: int) -> Partition | None:
        return self._partitions.get((topic, index))

    def all_partitions(self) -> list[Partition]:
        """Every partition, sorted by (topic, index): the metrics' view."""
        with self._lock:
            return [self._partitions[tp] for tp in sorted(self._partitions)]

    @staticmethod
    def _update_config(partition: Partition, config) -> None:
        update = getattr(partition.log, "update_config", None)
        if update is not None:
            update(config)
        partition.config = config

    # -- produce ------------------------------------------------------------------------

    def decompression_budget(self) -> DecompressionBudget:
        """A fresh budget for the compressed batches of one Produce request."""
        return DecompressionBudget(self.max_uncompressed_bytes)

    def append_records(self, topic: str, index: int, records: bytes | None,
                       api_version: int, budget: DecompressionBudget | None = None,
                       legacy: bool = False) -> ProduceResult:
        """Validate and append one partition's records.  ``legacy``: Produce
        v0-v2 while playing a Kafka release before 4.0, whose message sets are
        converted to one magic-2 batch first (:func:`up_convert_produce`)."""
        partition = self._partitions.get((topic, index))   # self.partition, once per batch
        if partition is None:
            return ProduceResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if legacy:
            result, count = self._append_legacy(partition, topic, index, records, api_version,
                                                budget)
        else:
            result = self._append_records(partition, topic, index, records, api_version, budget)
            count = -1
        if result[0]:   # error_code
            self.topic_stats.produce_failed(topic)
        else:
            # Kafka's BytesIn is the records' size; magic 2 sends one batch per
            # partition, whose count field says how many records were appended.
            self.topic_stats.produced(topic, len(records),
                                      read_records_count(records) if count < 0 else count)
        return result

    def _append_records(self, partition: Partition, topic: str, index: int,
                        records: bytes | None, api_version: int,
                        budget: DecompressionBudget | None) -> ProduceResult:
        config = self.config_repository.log_config(topic)
        try:
            header, batch = validate_produce_records(
                records, api_version, max_batch_size=config.max_message_bytes,
                max_uncompressed_bytes=self.max_uncompressed_bytes, budget=budget,
                compacted=config.compact)
        except KeylessRecordsError as exc:
            return self._refuse_keyless(topic, index, exc)
        except RecordError as exc:
            return self._refuse(topic, index, exc)
        return self._append_validated(partition, topic, index, config, header, batch,
                                      api_version)

    def _append_legacy(self, partition: Partition, topic: str, index: int,
                       records: bytes | None, api_version: int,
                       budget: DecompressionBudget | None) -> tuple[ProduceResult, int]:
        """Produce v0-v2 (as.version before 4.0): (the result, records appended)."""
        config = self.config_repository.log_config(topic)
        try:
            converted = up_convert_produce(
                records, max_batch_size=config.max_message_bytes,
                max_uncompressed_bytes=self.max_uncompressed_bytes, budget=budget,
                compacted=config.compact, log_append_time=config.log_append_time,
                compression_type=config.compression_type)
        except KeylessRecordsError as exc:
            return self._refuse_keyless(topic, index, exc), 0
        except RecordError as exc:
            return self._refuse(topic, index, exc), 0
        if converted is None:   # no complete message: Kafka appends nothing, and says so
            return ProduceResult(ErrorCode.NONE, -1, partition.log.log_start_offset), 0
        header, batch = converted
        return (self._append_validated(partition, topic, index, config, header, batch,
                                       api_version), header.records_count)

    def _refuse(self, topic: str, index: int, exc: RecordError) -> ProduceResult:
        # A batch inflating past the bound is most likely an attack: a warning.
        level = logging.WARNING if isinstance(exc, DecompressionLimitError) else logging.INFO
        self._rejections.log(level, type(exc).__name__,
                             "Rejected a record batch for %s-%d with error code %d: %s",
                             escape(topic), index, exc.error_code, exc)
        return ProduceResult(exc.error_code, error_message=str(exc))

    def _append_validated(self, partition: Partition, topic: str, index: int, config,
                          header, batch, api_version: int) -> ProduceResult:
        if len(batch) > config.segment_bytes:
            # UnifiedLog.append: a batch must fit in one segment.
            return ProduceResult(
                ErrorCode.RECORD_LIST_TOO_LARGE,
                error_message=f"Message batch size is {len(batch)} bytes in append to partition "
                              f"{topic}-{index} which exceeds the maximum configured segment "
                              f"size of {config.segment_bytes}.")
        verify = self.transaction_verifier
        if verify is not None and api_version >= IMPLICIT_ADD_PARTITION_PRODUCE_VERSION:
            verify = functools.partial(verify, add_partition=True)
        with partition.lock:
            if partition.config is not config:   # the topic's configs changed
                self._update_config(partition, config)
            try:
                result = self._append_locked(
                    partition, header, batch,
                    self.clock_ms() if config.log_append_time else -1, verify)
            except SequenceError as exc:
                return ProduceResult(exc.error_code, error_message=str(exc))
            except KafkaStorageException as exc:   # logged by the LogDirFailureChannel
                return ProduceResult(ErrorCode.KAFKA_STORAGE_ERROR, error_message=str(exc))
        self._apply_retention(partition, config)
        self.fetch_purgatory.check_and_complete((topic, index))
        return result

    def _refuse_keyless(self, topic: str, index: int, exc: KeylessRecordsError) -> ProduceResult:
        """Kafka's ``LogValidator``: a record error per keyless record, and the
        partition's message naming the first three (``processRecordErrors``)."""
        message = ("Compacted topic cannot accept message without key in topic partition "
                   f"{topic}-{index}")
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{message}')"
                          for i in exc.indexes[:3])
        self._rejections.log(logging.INFO, "KeylessRecordsError",
                             "Rejected a record batch for %s-%d with error code %d: %d record(s) "
                             "without a key in a compacted topic", escape(topic), index,
                             exc.error_code, len(exc.indexes))
        return ProduceResult(
            exc.error_code, error_message=(
                f"One or more records have been rejected due to {len(exc.indexes)} record "
                f"errors in total, and only showing the first three errors at most: [{shown}]"),
            record_errors=[{"batch_index": i, "batch_index_error_message": message}
                           for i in exc.indexes])

    @staticmethod
    def _append_locked(partition: Partition, header, batch, log_append_time_ms: int,
                       verify: TxnVerifier | None = None) -> ProduceResult:
        count = header.records_count
        # The header's flags read once (each property is a call; this runs per batch).
        transactional = header.attributes & TRANSACTIONAL_MASK
        has_producer_id = header.producer_id > NO_PRODUCER_ID
        if transactional and verify is not None:
            # Under the partition lock, so no marker of the transaction can come between.
            refused = verify(partition.topic, partition.index, header.producer_id,
                             header.producer_epoch)
            if refused is not None:
                return ProduceResult(refused[0], error_message=refused[1])
        if has_producer_id:
            duplicate = partition.producers.check(
                header.producer_id, header.producer_epoch, header.base_sequence, count)
            if duplicate is not None:
                # A retry of a batch we already have: acknowledge the original offsets.
                return ProduceResult(ErrorCode.NONE, duplicate.first_offset,
                                     partition.log.log_start_offset)
        data, max_timestamp = batch, header.max_timestamp
        if log_append_time_ms >= 0:
            data = bytearray(batch)
            set_log_append_time(data, log_append_time_ms)
            max_timestamp = log_append_time_ms
        appended = partition.log.append(data, count, max_timestamp, log_append_time_ms,
                                        partition.leader_epoch)
        if has_producer_id:
            partition.producers.record(header.producer_id, header.producer_epoch,
                                       header.base_sequence, count,
                                       appended.base_offset, appended.last_offset,
                                       max_timestamp)
        if transactional:
            partition.txns.on_transactional_append(header.producer_id, appended.base_offset)
        # positional: a named tuple built with keywords costs twice as much
        return ProduceResult(ErrorCode.NONE, appended.base_offset, appended.log_start_offset,
                             None, appended.log_append_time_ms)

    def append_txn_marker(self, topic: str, index: int, batch: bytearray, producer_id: int,
                          producer_epoch: int, commit: bool) -> int:
        """Append a COMMIT or ABORT control batch (built by the transaction
        coordinator's marker writer) ending ``producer_id``'s transaction here."""
        partition = self.partition(topic, index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        with partition.lock:
            appended = partition.log.append(batch, 1, self.clock_ms(),
                                            leader_epoch=partition.leader_epoch)
            partition.producers.record_marker(producer_id, producer_epoch)
            partition.txns.on_marker(producer_id, commit, appended.base_offset)
        self.fetch_purgatory.check_and_complete((topic, index))
        return ErrorCode.NONE

    def append_coordinator_records(self, topic: str, index: int, batch: bytes,
                                   record_count: int, max_timestamp: int,
                                   transactional: bool = False) -> ProduceResult:
        """Append a batch a coordinator built for its internal topic (Kafka's
        ``appendRecords`` with ``AppendOrigin.COORDINATOR`` and internal topics
        allowed): trusted, so none of a client batch's checks.  A transactional
        one (TxnOffsetCommit's offsets) holds back the last stable offset as a
        producer's does."""
        partition = self._partitions.get((topic, index))
        if partition is None:
            return ProduceResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        with partition.lock:
            appended = partition.log.append(batch, record_count, max_timestamp)
            if transactional:
                partition.txns.on_transactional_append(read_header(batch).producer_id,
                                                       appended.base_offset)
        self.fetch_purgatory.check_and_complete((topic, index))
        return ProduceResult(ErrorCode.NONE, appended.base_offset, appended.log_start_offset)

    def read_batches(self, topic: str, index: int, chunk_bytes: int = 1 << 20):
        """Every batch of a partition from its log start to its end now, as
        (header, batch bytes): a coordinator loading its state (Kafka's
        ``doLoadGroupsAndOffsets`` reading ``offsets.load.buffer.size`` at a time)."""
        partition = self.partition(topic, index)
        if partition is None:
            return
        offset, end = partition.log.log_start_offset, partition.log.log_end_offset
        while offset < end:
            records = partition.log.read(offset, chunk_bytes, True).records
            data = records if isinstance(records, (bytes, bytearray)) else records.read_bytes()
            if not data:
                return
            for view in iter_batches(data):
                header = read_header(view)
                if header.next_offset > offset:
                    yield header, bytes(view)
                offset = max(offset, header.next_offset)

    @staticmethod
    def last_stable_offset_of(partition: Partition) -> int:
        """The first offset of the oldest open transaction, else the high watermark."""
        if not partition.txns.has_ongoing:   # no transaction: no lock needed
            return partition.log.log_end_offset
        with partition.lock:
            return partition.txns.last_stable_offset(partition.log.log_end_offset)

    def last_stable_offset(self, topic: str, index: int) -> int:
        partition = self.partition(topic, index)
        return -1 if partition is None else self.last_stable_offset_of(partition)

    # -- the log start offset: retention and DeleteRecords --------------------------------

    def _apply_retention(self, partition: Partition, config) -> int:
        if not (config.delete and config.retention_overridden):
            return 0   # cleanup.policy=compact alone: Kafka never deletes by retention
        # Under the partition lock, as appends: deleting every segment rolls a new
        # one, and a roll snapshots the producer state appends change.
        with partition.lock:
            deleted = partition.log.delete_retained(self.clock_ms(), config.retention_ms,
                                                    config.retention_bytes)
            if deleted:
                partition.txns.truncate_before(partition.log.log_start_offset)
        if deleted:
            # whole segments on disk (UnifiedLog), whole batches in memory
            unit = "segment(s)" if hasattr(partition.log, "segments") else "batch(es)"
            log.info("Deleted %d old %s of %s-%d by retention; log start offset %d",
                     deleted, unit, partition.topic, partition.index,
                     partition.log.log_start_offset)
        return deleted

    def apply_retention(self, topic: str | None = None) -> int:
        """Enforce ``topic``'s retention now (after its configs changed), or every
        topic's (None: the periodic kafka-log-retention task); batches deleted."""
        with self._lock:
            partitions = [p for (t, _), p in self._partitions.items()
                          if topic is None or t == topic]
        configs: dict = {}
        deleted = 0
        for partition in partitions:
            if partition.topic not in configs:
                configs[partition.topic] = self.config_repository.log_config(partition.topic)
            deleted += self._apply_retention(partition, configs[partition.topic])
        return deleted

    def delete_records(self, topic: str, index: int, offset: int) -> tuple[int, int]:
        """(error_code, low_watermark) for one partition of DeleteRecords
        (Kafka's ``Partition.deleteRecordsOnLeader``)."""
        partition = self.partition(topic, index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        if is_internal(topic):   # ReplicaManager.deleteRecordsOnLocalLog: never from a client
            return ErrorCode.INVALID_TOPIC_EXCEPTION, -1
        if not self.config_repository.log_config(topic).delete:
            return ErrorCode.POLICY_VIOLATION, -1
        with partition.lock:
            high_watermark = partition.log.log_end_offset
            wanted = high_watermark if offset == HIGH_WATERMARK else offset
            if wanted < 0 or wanted > high_watermark:
                return ErrorCode.OFFSET_OUT_OF_RANGE, -1
            low_watermark = partition.log.delete_records_before(wanted)
            partition.txns.truncate_before(low_watermark)   # aborted spans deleted with them
            return ErrorCode.NONE, low_watermark

    def active_producers(self, topic: str, index: int):
        """(error_code, [(producer id, epoch, last sequence, last timestamp)]) for
        DescribeProducers (Kafka's ``Partition.activeProducerState``)."""
        partition = self.partition(topic, index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []
        with partition.lock:
            return ErrorCode.NONE, [(pid, e.epoch, e.last_seq, e.last_timestamp)
                                    for pid, e in partition.producers.active_producers()]

    # -- leader epochs ------------------------------------------------------------------

    def last_offset_for_leader_epoch(self, topic: str, index: int, current_leader_epoch: int,
                                     leader_epoch: int) -> tuple[int, int, int]:
        """(error_code, epoch, end offset) for OffsetForLeaderEpoch (Kafka's
        ``Partition.lastOffsetForLeaderEpoch``): the current epoch is checked first;
        an epoch the log cannot place answers -1 / -1 with no error."""
        partition = self.partition(topic, index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
        with partition.lock:
            error = partition.leader_epoch_error(current_leader_epoch)
            if error:
                return error, -1, -1
            partition_log = partition.log
            epoch, end_offset = partition_log.leader_epoch_cache.end_offset_for(
                leader_epoch, partition_log.log_end_offset)
        if end_offset < 0:
            return ErrorCode.NONE, -1, -1
        return ErrorCode.NONE, epoch, end_offset

    def leader_epoch(self, topic: str, index: int) -> int:
        """The partition's leader epoch for Metadata (-1 if it does not exist)."""
        partition = self._partitions.get((topic, index))
        return -1 if partition is None else partition.leader_epoch

    # -- fetch --------------------------------------------------------------------------

    def read(self, topic: str, index: int, fetch_offset: int, max_bytes: int,
             min_one_batch: bool, isolation_level: int = 0) -> tuple[int, FetchResult | None]:
        """(error_code, result) for one partition of a Fetch; read_committed
        reads up to the last stable offset and lists the aborted transactions."""
        partition = self.partition(topic, index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        lso = self.last_stable_offset_of(partition)
        committed = isolation_level == READ_COMMITTED
        try:
            result = partition.log.read(fetch_offset, max_bytes, min_one_batch,
                                        max_offset=lso if committed else None)
        except OffsetOutOfRange:
            self.topic_stats.fetch_failed(topic)
            return ErrorCode.OFFSET_OUT_OF_RANGE, None
        except CorruptRecordException as exc:
            # Kafka's ReplicaManager.readFromLog: logged, CORRUPT_MESSAGE to the client.
            self.topic_stats.fetch_failed(topic)
            self._rejections.log(logging.ERROR, ("corrupt", topic, index),
                                 "Error processing fetch at offset %d on partition %s-%d: %s",
                                 fetch_offset, escape(topic), index, exc)
            return ErrorCode.CORRUPT_MESSAGE, None
        except KafkaStorageException:   # logged by the LogDirFailureChannel
            self.topic_stats.fetch_failed(topic)
            return ErrorCode.KAFKA_STORAGE_ERROR, None
        self.topic_stats.fetched(topic, len(result.records))
        if not committed:
            if result.last_stable_offset == lso:   # no open transaction: the common case
                return ErrorCode.NONE, result
            return ErrorCode.NONE, result._replace(last_stable_offset=lso)
        with partition.lock:
            aborted = [(t.producer_id, t.first_offset)
                       for t in partition.txns.aborted_between(fetch_offset, lso)]
        return ErrorCode.NONE, result._replace(last_stable_offset=lso,
                                               aborted_transactions=aborted)

    def bytes_available(self, topic: str, index: int, fetch_offset: int,
                        isolation_level: int = 0) -> int:
        """Rough bytes readable from ``fetch_offset`` (for a delayed fetch's min_bytes);
        read_committed: nothing at or past the last stable offset."""
        partition = self.partition(topic, index)
        if partition is None:
            return 1  # an error is an answer: complete the fetch
        if isolation_level == READ_COMMITTED \
                and fetch_offset >= self.last_stable_offset_of(partition) \
                and fetch_offset <= partition.log.log_end_offset:
            return 0
        try:
            return partition.log.bytes_from(fetch_offset)
        except CorruptRecordException:
            return 1   # the read answers the error at once
