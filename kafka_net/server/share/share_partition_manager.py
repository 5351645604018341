"""SharePartitionManager: the share-partitions of every share group on this broker.

Kafka's ``SharePartitionManager`` (core/src/main/java/kafka/server/share):
ShareFetch and ShareAcknowledge come here, by way of the share sessions
(:mod:`kafka_net.server.share.share_session`).  A share-partition is made at
its first fetch (Kafka's ``getOrCreateSharePartition`` then
``maybeInitialize``):

* with state in ``__share_group_state`` (ReadShareGroupState): that state;
* without: the start offset ``share.auto.offset.reset`` picks (the group's
  config): ``latest`` the log end offset (the default), ``earliest`` the log
  start offset, ``by_duration:<ISO-8601>`` the first offset whose timestamp is
  at least now minus the duration (the log end if none); written at once
  (InitializeShareGroupState).

Every change a persisted state shows is written (WriteShareGroupState) before
the request that caused it is answered: an acknowledgement, a release, a
lapsed lock, and an acquisition too (its delivery count), so that after a
restart a record that was in flight is AVAILABLE again with that delivery
counted, and one whose last allowed delivery was in flight is archived: the
delivery count limit holds across a crash.  (Kafka writes on acknowledgement
and lock expiry only, so a crash can lose an in-flight delivery's count.)
A share-partition whose start offset fell behind the log start offset
(retention, DeleteRecords) moves up to it.

Fetching reads the log from the share-partition's next fetch offset (the
first available record, else its end offset) up to the bytes asked, in whole
batches, and acquires up to ``max_records`` of them; only the batches holding
acquired records are answered.  With the group's ``share.isolation.level``
``read_committed`` the read stops at the last stable offset and the records of
aborted transactions are archived, never delivered (Kafka's
``filterAbortedTransactionalAcquiredRecords``).  Control records (transaction
markers) are acquired like any offset; clients acknowledge them as gaps.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

from kafka_net.config.errors import InvalidConfig
from kafka_net.config.group_keys import GROUP_CONFIGS, parse_iso_duration_ms
from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    CONTROL_MASK, TRANSACTIONAL_MASK, build_batch, decode_records, iter_batches, read_header)
from kafka_net.server.group_config_repository import group_config_value
from kafka_net.server.partition_limits import TopicCreationError
from kafka_net.server.share.persister import ShareStatePersister
from kafka_net.server.share.share_partition import (
    AcknowledgementError, AcquiredRecords, SharePartition, SharePartitionConfig)

log = logging.getLogger(__name__)
_KEY_DEFAULT = object()   # group_value's default: the key's own, from GROUP_CONFIGS
_dead_letter_warnings = RateLimitedLog(log)
DEAD_LETTER_SHARE_VERSION = 2     # share.version that brings dead-letter queues
DEAD_LETTER_PRODUCE_VERSION = 9   # how the broker's own appends are validated

Key = tuple[str, object, int]   # (group id, topic id, partition)
READ_COMMITTED = 1


@dataclass(frozen=True)
class ShareConfig:
    """The broker's group.share.* values (Kafka's ShareGroupConfig)."""
    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2000
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 200
    max_share_sessions: int = 2000


class PartitionFetch:
    """One partition's answer to a ShareFetch."""
    __slots__ = ("error_code", "error_message", "records", "acquired")

    def __init__(self, error_code: int = ErrorCode.NONE, error_message: str | None = None,
                 records: bytes | None = None,
                 acquired: list[AcquiredRecords] | None = None) -> None:
        self.error_code, self.error_message = error_code, error_message
        self.records, self.acquired = records, acquired or []


class SharePartitionManager:
    def __init__(self, config: ShareConfig, replica_manager, metadata_cache,
                 persister: ShareStatePersister | None = None, group_configs=None) -> None:
        self.config = config
        self._rm = replica_manager
        self._topics = metadata_cache
        self.persister = persister or ShareStatePersister()
        self.group_configs = group_configs   # a GroupConfigRepository, or None
        self._partitions: dict[Key, SharePartition] = {}
        self._persisted: dict[Key, int] = {}   # the version last written
        self._lock = threading.Lock()
        # The finalized share.version (the broker wires in its FeatureControl):
        # dead-letter queues need 2 (KIP-1191).
        self.share_version: Callable[[], int] = lambda: 1
        # The broker's KafkaApis (attach_broker): its dynamic configs and topic
        # creation, for a dead-letter topic that does not exist yet.
        self._apis = None

    def attach_broker(self, apis) -> None:
        """Let dead letters create their topic where the broker allows it
        (``errors.deadletterqueue.auto.create.topics.enable``)."""
        self._apis = apis

    # -- per-group settings ----------------------------------------------------------------

    def group_value(self, group_id: str, name: str, default=_KEY_DEFAULT):
        """``name`` in effect for ``group_id``: its override, else ``default`` (by
        default the key's own, from the group config table)."""
        if default is _KEY_DEFAULT:
            default = GROUP_CONFIGS[name].default
        return group_config_value(self.group_configs, group_id, name, default)

    def lock_duration_ms(self, group_id: str) -> int:
        return self.group_value(group_id, "share.record.lock.duration.ms",
                                self.config.record_lock_duration_ms)

    def _partition_config(self, group_id: str) -> SharePartitionConfig:
        return SharePartitionConfig(self.lock_duration_ms(group_id),
                                    self.config.delivery_count_limit,
                                    self.config.partition_max_record_locks,
                                    bool(self._dead_letter_topic(group_id)))

    def _dead_letter_topic(self, group_id: str) -> str:
        """The group's dead-letter topic while share.version allows one, else ""."""
        if self.share_version() < DEAD_LETTER_SHARE_VERSION:
            return ""
        return self.group_value(group_id, "errors.deadletterqueue.topic.name")

    # -- the share-partitions --------------------------------------------------------------

    def share_partition(self, group_id: str, topic_id, partition: int,
                        create: bool = True) -> SharePartition | None:
        """The share-partition, made and initialized at first use (None if the
        topic partition does not exist, or ``create`` is False and it is not there)."""
        key = (group_id, topic_id, partition)
        sp = self._partitions.get(key)
        if sp is not None or not create:
            return sp
        topic = self._topics.topic_by_id(topic_id)
        if topic is None or not 0 <= partition < topic.num_partitions \
                or self._rm.partition(topic.name, partition) is None:
            return None
        with self._lock:
            sp = self._partitions.get(key)
            if sp is None:
                sp = self._initialize(group_id, topic.name, topic_id, partition)
                self._partitions[key] = sp
        return sp

    def _initialize(self, group_id: str, topic: str, topic_id, partition: int
                    ) -> SharePartition:
        config = self._partition_config(group_id)
        state = self.persister.read_state(group_id, topic_id, partition)
        if state is not None:
            sp = SharePartition(group_id, topic, topic_id, partition, config,
                                state.start_offset)
            sp.state_epoch, sp.leader_epoch = state.state_epoch, state.leader_epoch
            sp.restore(state.start_offset, state.batches)
            self._persisted[(group_id, topic_id, partition)] = sp.version
            log.info("[Share group %s] Initialized share-partition %s-%d from its state: "
                     "start offset %d, end offset %d", escape(group_id), topic, partition,
                     sp.start_offset, sp.end_offset)
            return sp
        start = self._reset_offset(group_id, topic, partition)
        sp = SharePartition(group_id, topic, topic_id, partition, config, start)
        sp.leader_epoch = max(self._rm.leader_epoch(topic, partition), 0)
        self.write(sp, force=True)
        log.info("[Share group %s] Initialized share-partition %s-%d at offset %d "
                 "(share.auto.offset.reset %s)", escape(group_id), topic, partition, start,
                 self._auto_offset_reset(group_id))
        return sp

    def _auto_offset_reset(self, group_id: str) -> str:
        return self.group_value(group_id, "share.auto.offset.reset")

    def _reset_offset(self, group_id: str, topic: str, partition: int) -> int:
        log_ = self._rm.partition(topic, partition).log
        strategy = self._auto_offset_reset(group_id).lower()
        if strategy == "earliest":
            return log_.log_start_offset
        if strategy.startswith("by_duration:"):
            duration = parse_iso_duration_ms(strategy[12:]) or 0
            found = log_.offset_for_timestamp(int(time.time() * 1000) - duration)
            return log_.log_end_offset if found is None else found[0]
        return log_.log_end_offset

    def share_partitions_all(self) -> list[SharePartition]:
        return list(self._partitions.values())

    def share_partitions(self, group_id: str) -> list[SharePartition]:
        return [sp for (g, _, _), sp in list(self._partitions.items()) if g == group_id]

    def forget(self, group_id: str, topic_id=None) -> None:
        """Drop the group's share-partitions (of ``topic_id`` only, if given) from
        memory: their state was altered or deleted."""
        with self._lock:
            for key in [k for k in self._partitions
                        if k[0] == group_id and (topic_id is None or k[1] == topic_id)]:
                del self._partitions[key]
                self._persisted.pop(key, None)

    # -- persisting -------------------------------------------------------------------------

    def write(self, sp: SharePartition, force: bool = False) -> int:
        """Write the share-partition's state if it changed since the last write
        (under ``sp.lock``, or before ``sp`` is shared), and its new dead letters;
        an error code."""
        if sp.dead_letters:
            letters, sp.dead_letters = sp.dead_letters, []
            self._write_dead_letters(sp, letters)
        key = (sp.group_id, sp.topic_id, sp.partition)
        if not force and self._persisted.get(key) == sp.version:
            return ErrorCode.NONE
        error = self.persister.write_state(
            sp.group_id, sp.topic_id, sp.partition, sp.state_epoch, sp.leader_epoch,
            sp.start_offset, sp.state_batches(), sp.delivery_complete_count())
        if not error:
            self._persisted[key] = sp.version
        return error

    # -- dead-letter queues (KIP-1191) ---------------------------------------------------------

    def _write_dead_letters(self, sp: SharePartition, letters: list[tuple[int, int, str]]
                            ) -> None:
        """Append one record per dead letter to the group's dead-letter topic, in
        partition ``source partition % its partitions``: headers naming the record
        (``__dlq.errors.topic``, ``.partition``, ``.offset``, ``.group``,
        ``.delivery.count``, ``.message``), its key and value too with the group's
        ``errors.deadletterqueue.copy.record.enable``.  The topic must exist with
        ``errors.deadletterqueue.group.enable=true``; one that does not exist is
        created so (``num.partitions``) where the broker's dynamic
        ``errors.deadletterqueue.auto.create.topics.enable`` is true, as Kafka's
        ShareGroupDLQ validation allows.  Otherwise the letters are dropped with a
        warning in Kafka's words, and the record stays archived."""
        topic = self._dead_letter_topic(sp.group_id)
        meta = self._topics.topic(topic) if topic else None
        if topic and meta is None:
            meta = self._create_dead_letter_topic(sp.group_id, topic)
        enabled = meta is not None and self._rm.config_repository.effective(topic).get(
            "errors.deadletterqueue.group.enable", False)
        if not enabled:
            _dead_letter_warnings.log(
                logging.WARNING, (sp.group_id, topic),
                "Share group %s cannot write %d dead letter(s) of %s-%d: %s",
                escape(sp.group_id), len(letters), escape(sp.topic), sp.partition,
                "DLQ topic does not exist and auto create is disabled on cluster for "
                f"share group: {escape(sp.group_id)}, topic: {escape(topic)}."
                if meta is None else "DLQ is not enabled on configured DLQ topic for "
                f"share group: {escape(sp.group_id)}, topic: {escape(topic)}")
            return
        copy_key = "errors.deadletterqueue.copy.record.enable"
        copy = str(self.group_value(sp.group_id, copy_key)).lower() == "true"
        originals = self._originals(sp, [offset for offset, _, _ in letters]) if copy else {}
        records = []
        for offset, count, why in letters:
            key, value = originals.get(offset, (None, None))
            records.append((key, value, (
                ("__dlq.errors.topic", sp.topic.encode()),
                ("__dlq.errors.partition", str(sp.partition).encode()),
                ("__dlq.errors.offset", str(offset).encode()),
                ("__dlq.errors.group", sp.group_id.encode()),
                ("__dlq.errors.delivery.count", str(count).encode()),
                ("__dlq.errors.message", why.encode()))))
        result = self._rm.append_records(topic, sp.partition % meta.num_partitions,
                                         build_batch(records), DEAD_LETTER_PRODUCE_VERSION)
        if result.error_code:
            _dead_letter_warnings.log(
                logging.WARNING, (sp.group_id, topic, result.error_code),
                "Share group %s could not append %d dead letter(s) to %s: error %d",
                escape(sp.group_id), len(records), escape(topic), result.error_code)

    def _create_dead_letter_topic(self, group_id: str, topic: str):
        """The dead-letter topic, created with the config that opts it in if the
        broker allows; None if it may not or cannot be created."""
        apis = self._apis
        if apis is None or not apis.dynamic_config.effective().get(
                "errors.deadletterqueue.auto.create.topics.enable", False):
            return None
        try:
            overrides = self._rm.config_repository.validate(
                topic, {"errors.deadletterqueue.group.enable": "true"})
            meta, created = apis.create_topic(topic, apis.config.num_partitions, overrides)
        except (TopicCreationError, InvalidConfig) as exc:   # a collision, a limit...
            _dead_letter_warnings.log(
                logging.WARNING, (group_id, topic, "create"),
                "Share group %s could not create its dead-letter topic %s: %s",
                escape(group_id), escape(topic), escape(str(exc)))
            return None
        if created:
            log.info("Created dead-letter topic %s with %d partition(s) for share group %s",
                     escape(topic), meta.num_partitions, escape(group_id))
        return meta

    def _originals(self, sp: SharePartition, offsets: list[int]) -> dict[int, tuple]:
        """(key, value) of the source records at ``offsets``, read from the log."""
        wanted, found = set(offsets), {}
        offset = min(offsets)
        while wanted - set(found) and offset <= max(offsets):
            error, result = self._rm.read(sp.topic, sp.partition, offset, 1 << 20, True)
            if error or result is None or not len(result.records):
                break
            records = result.records
            data = bytes(records if isinstance(records, (bytes, bytearray))
                         else records.read_bytes())
            for batch in iter_batches(data):
                for rec in decode_records(batch):
                    if rec.offset in wanted:
                        found[rec.offset] = (rec.key, rec.value)
                offset = _last_offset(batch) + 1
        return found

    # -- ShareFetch / ShareAcknowledge -----------------------------------------------------

    def acknowledge(self, group_id: str, member_id: str, topic_id, partition: int,
                    batches: list[tuple[int, int, list[int]]], renew_allowed: bool
                    ) -> tuple[int, str | None]:
        """(error code, message) of one partition's acknowledgements."""
        sp = self.share_partition(group_id, topic_id, partition, create=False)
        if sp is None:
            if self._topics.topic_by_id(topic_id) is None:
                return ErrorCode.UNKNOWN_TOPIC_ID, None
            return ErrorCode.INVALID_RECORD_STATE, "No records are acquired in this partition."
        with sp.lock:
            sp.config = self._partition_config(group_id)
            try:
                sp.acknowledge(member_id, batches, renew_allowed)
            except AcknowledgementError as exc:
                self.write(sp)   # locks that lapsed on the way
                return exc.error_code, str(exc)
            error = self.write(sp)
        return error, None

    def fetch(self, group_id: str, member_id: str, topic_id, partition: int,
              max_bytes: int, max_records: int) -> PartitionFetch:
        sp = self.share_partition(group_id, topic_id, partition)
        if sp is None:
            if self._topics.topic_by_id(topic_id) is None:
                return PartitionFetch(ErrorCode.UNKNOWN_TOPIC_ID)
            return PartitionFetch(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        with sp.lock:
            sp.config = self._partition_config(group_id)   # group configs are live
            sp.expire_locks()
            self._follow_log_start(sp)
            if max_records <= 0 or not sp.can_acquire():
                self.write(sp)
                return PartitionFetch()
            read_from = sp.next_fetch_offset()
            error, data, aborted = self._read(group_id, sp, read_from, max_bytes)
            if error:
                self.write(sp)
                return PartitionFetch(error)
            batches = [(read_header(b).base_offset, _last_offset(b), b)
                       for b in iter_batches(data)] if data else []
            for base, last, _ in batches:
                if base in aborted:
                    sp.archive_unacquired(base, last)
            acquired = sp.acquire(member_id, [(base, last) for base, last, _ in batches
                                              if base not in aborted], max_records,
                                  read_from if batches else None)
            self.write(sp)
        if not acquired:
            return PartitionFetch(records=b"")
        low, high = acquired[0].first_offset, acquired[-1].last_offset
        kept = b"".join(bytes(b) for base, last, b in batches if last >= low and base <= high)
        return PartitionFetch(records=kept, acquired=acquired)

    def _read(self, group_id: str, sp: SharePartition, offset: int, max_bytes: int
              ) -> tuple[int, bytes, set[int]]:
        """(error, whole batches from the next fetch offset, the base offsets of
        the batches of aborted transactions among them: read_committed only)."""
        isolation = self.group_value(group_id, "share.isolation.level")
        level = READ_COMMITTED if isolation == "read_committed" else 0
        error, result = self._rm.read(sp.topic, sp.partition, offset, max(max_bytes, 1),
                                      True, level)
        if error or result is None:
            return error or ErrorCode.UNKNOWN_SERVER_ERROR, b"", set()
        records = result.records
        data = bytes(records if isinstance(records, (bytes, bytearray))
                     else records.read_bytes())
        if level != READ_COMMITTED or not result.aborted_transactions:
            return ErrorCode.NONE, data, set()
        return ErrorCode.NONE, data, _aborted_batches(data, result.aborted_transactions)

    def _follow_log_start(self, sp: SharePartition) -> None:
        partition = self._rm.partition(sp.topic, sp.partition)
        if partition is not None and sp.start_offset < partition.log.log_start_offset:
            sp.reset_start(partition.log.log_start_offset)

    def has_available(self, group_id: str, topic_id, partition: int) -> bool:
        """Could a fetch acquire something now (a parked ShareFetch's check)?"""
        sp = self._partitions.get((group_id, topic_id, partition))
        if sp is None:
            return False
        with sp.lock:
            sp.expire_locks()
            if not sp.can_acquire():
                return False
            offset = sp.next_fetch_offset()
            if offset < sp.end_offset:
                return True
            return self._rm.bytes_available(sp.topic, sp.partition, offset) > 0

    def release(self, group_id: str, member_id: str, partitions=None) -> int:
        """Release the records ``member_id`` holds (in ``partitions``, (topic id,
        partition) pairs, or all of the group's); how many."""
        released = 0
        for sp in self.share_partitions(group_id):
            if partitions is not None and (sp.topic_id, sp.partition) not in partitions:
                continue
            with sp.lock:
                n = sp.release_member(member_id)
                if n:
                    self.write(sp)
                released += n
        return released


def _aborted_batches(data: bytes, aborted_transactions) -> set[int]:
    """Base offsets of the data batches of aborted transactions (Kafka's consumer
    rule: a producer's transactional batches from its aborted transaction's first
    offset until its ABORT marker)."""
    first_offsets: dict[int, list[int]] = {}
    for producer_id, first in aborted_transactions:
        first_offsets.setdefault(producer_id, []).append(first)
    aborting: set[int] = set()
    out: set[int] = set()
    for batch in iter_batches(data):
        header = read_header(batch)
        pid = header.producer_id
        if pid in first_offsets and any(f <= header.base_offset for f in first_offsets[pid]):
            if header.attributes & CONTROL_MASK:
                if pid in aborting:   # the ABORT marker ends it
                    aborting.discard(pid)
                    first_offsets[pid] = [f for f in first_offsets[pid] if f > header.base_offset]
                continue
            if header.attributes & TRANSACTIONAL_MASK:
                aborting.add(pid)
                out.add(header.base_offset)
    return out


def _last_offset(batch) -> int:
    header = read_header(batch)
    return header.base_offset + header.last_offset_delta
