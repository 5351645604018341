"""GroupMetadataManager: groups and committed offsets kept in ``__consumer_offsets``.

Kafka's ``GroupMetadataManager`` (classic groups).  A group lives in
partition ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
of the internal compacted topic ``__consumer_offsets``, as records in Kafka's
schemas (:mod:`kafka_net.protocol.coordinator_records`):

* every committed offset: OffsetCommitKey(group, topic, partition) ->
  OffsetCommitValue(offset, leaderEpoch, metadata, commitTimestamp); one
  batch per OffsetCommit request, appended before the commit is answered;
* the group itself, when a generation's assignment is complete (the leader's
  SyncGroup), when it becomes empty, and when a static member replaces its
  old incarnation without a rebalance: GroupMetadataKey(group) ->
  GroupMetadataValue(protocolType, generation, protocol, leader, members with
  their subscription and assignment);
* tombstones (null values) for offsets deleted (OffsetDelete, DeleteTopics)
  and for a deleted group and all its offsets (DeleteGroups).

Offsets committed in a transaction (TxnOffsetCommit) are written as
*transactional* records of the producer, and a COMMIT or ABORT marker follows
them in the same partition, as in Kafka: they count only once committed.

Loading (Kafka's ``loadGroupsAndOffsets``, when the broker takes the
partition): the partitions are read from the start, the last record per key
wins, tombstones remove; a group comes back with its generation, protocol,
leader and members (static ones included) in Stable, or Empty without
members, and each member gets a session timeout to heartbeat in (Kafka's
``onGroupLoaded``); its committed offsets come back with it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.coordinator_records import (
    STREAMS_RECORD_NAMES, ConsumerGroupRecord, GroupMetadataRecord, OffsetCommitRecord,
    RecordFormatError, decode_group_record, group_metadata_key, group_metadata_value,
    offset_commit_key, offset_commit_value, partition_for)
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import CONTROL_MASK, build_key_value_batch
from kafka_net.protocol.records.control import COMMIT, control_key_type
from kafka_net.server.group.consumer_group_records import (
    ConsumerGroupImage, member_records, records_of, shape)
from kafka_net.server.group.group import Group, Member
from kafka_net.server.group.results import OffsetAndMetadata, PartitionCommit
from kafka_net.server.group.state import GroupState
from kafka_net.server.internal_topics import GROUP_METADATA_TOPIC_NAME, loaded_batches
from kafka_net.server.partition_limits import TopicCreationError

log = logging.getLogger(__name__)
_bad_records = RateLimitedLog(log)


def _streams_records():
    """streams_group_records, imported by the first streams group stored or
    loaded: a broker that has none never imports the streams modules."""
    from kafka_net.server.group import streams_group_records
    return streams_group_records


_PARTITION_CACHE_SIZE = 100_000   # group ids whose partition is remembered


def append_error(error: int) -> int:
    """The error an offset commit gets for a failed append (Kafka's
    ``GroupMetadataManager.storeOffsets`` mapping)."""
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                 ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                 ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return error


class GroupMetadataManager:
    def __init__(self, replica_manager, internal_topics,
                 clock_ms: Callable[[], int] | None = None) -> None:
        self._replica_manager = replica_manager
        self._internal_topics = internal_topics
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._partitions = internal_topics.partition_count(GROUP_METADATA_TOPIC_NAME)
        self._lock = threading.Lock()
        self._partition_of: dict[str, int] = {}
        # KIP-848 groups: the records last written per group, and the group's shape
        # then (consumer_group_records.py).
        self._modern_written: dict[str, dict[bytes, bytes]] = {}
        self._modern_shape: dict[str, tuple] = {}
        # Transactional offsets left without a marker by the last load.
        self._loaded_pending: dict[tuple[str, int], list] = {}

    def partition_for(self, group_id: str) -> int:
        # The hash walks the id in Python: remembered per group (the count never changes
        # once the topic exists; a load or creation with another count starts afresh).
        cached = self._partition_of.get(group_id)
        if cached is None:
            if len(self._partition_of) >= _PARTITION_CACHE_SIZE:
                self._partition_of.clear()
            cached = self._partition_of[group_id] = partition_for(group_id, self._partitions)
        return cached

    def _set_partitions(self, count: int) -> None:
        if count != self._partitions:
            self._partitions = count
            self._partition_of = {}

    def ready(self) -> None:
        """Make sure ``__consumer_offsets`` is loaded if it exists (a set lookup once
        it is); the first write creates it."""
        if not self._internal_topics.is_ready(GROUP_METADATA_TOPIC_NAME):
            self._internal_topics.load_if_exists(GROUP_METADATA_TOPIC_NAME)
            self._set_partitions(
                self._internal_topics.partition_count(GROUP_METADATA_TOPIC_NAME))

    # -- writing --------------------------------------------------------------------------

    def _append(self, group_id: str, records: list[tuple[bytes, bytes | None]],
                producer: tuple[int, int] | None = None, now: int | None = None) -> int:
        """Append ``records`` to the group's partition as one batch; an error code."""
        if not records:
            return ErrorCode.NONE
        if not self._internal_topics.is_ready(GROUP_METADATA_TOPIC_NAME):
            try:
                self._set_partitions(self._internal_topics.ensure(GROUP_METADATA_TOPIC_NAME))
            except TopicCreationError as exc:
                log.warning("Cannot store group %s: %s", escape(group_id), exc.message)
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if now is None:
            now = self.clock_ms()
        if producer is None:
            batch = build_key_value_batch(records, now)
        else:
            batch = build_key_value_batch(records, now, producer_id=producer[0],
                                          producer_epoch=producer[1], transactional=True)
        result = self._replica_manager.append_coordinator_records(
            GROUP_METADATA_TOPIC_NAME, self.partition_for(group_id), batch, len(records), now,
            producer is not None)
        if result.error_code:
            log.error("Appending %d record(s) of group %s to %s failed with error %d",
                      len(records), escape(group_id), GROUP_METADATA_TOPIC_NAME,
                      result.error_code)
        return append_error(result.error_code)

    def store_offsets(self, group_id: str, commits: list,
                      producer: tuple[int, int] | None = None, now: int | None = None) -> int:
        """One batch of OffsetCommit records (transactional with ``producer``:
        (producer id, epoch)) committed at ``now``; an error code for every commit in it."""
        now = self.clock_ms() if now is None else now
        return self._append(group_id, [
            (offset_commit_key(group_id, c.topic, c.partition),
             offset_commit_value(c.offset, c.leader_epoch, c.metadata, c.committed_at(now)))
            for c in commits], producer, now)

    def remove_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> int:
        return self._append(group_id, [(offset_commit_key(group_id, t, p), None)
                                       for t, p in partitions])

    def store_group(self, group: Group) -> int:
        """The group's GroupMetadataValue (called under the group's lock)."""
        return self._append(group.group_id, [(group_metadata_key(group.group_id),
                                              group_metadata_value(self._value(group)))])

    def remove_group(self, group_id: str, partitions: list[tuple[str, int]]) -> int:
        """Tombstones for the group's offsets and the group (DeleteGroups), its
        KIP-848 records too."""
        records = [(offset_commit_key(group_id, t, p), None) for t, p in partitions]
        records.extend((key, None) for key in self._modern_written.get(group_id, ()))
        records.append((group_metadata_key(group_id), None))
        error = self._append(group_id, records)
        if not error:
            self._modern_written.pop(group_id, None)
            self._modern_shape.pop(group_id, None)
        return error

    def remove_group_metadata(self, group_id: str) -> int:
        """A GroupMetadata tombstone: a classic group converted to a consumer group
        (KIP-848's online upgrade; its offsets stay)."""
        return self._append(group_id, [(group_metadata_key(group_id), None)])

    def remove_consumer_group(self, group_id: str) -> int:
        """Tombstones for every KIP-848 record of the group (a consumer group turned
        classic: a downgrade, or an empty one a JoinGroup takes; its offsets stay)."""
        written = self._modern_written.get(group_id, {})
        error = self._append(group_id, [(key, None) for key in written])
        if not error:
            self._modern_written.pop(group_id, None)
            self._modern_shape.pop(group_id, None)
        return error

    def store_consumer_group(self, cg, member_id: str | None = None) -> int:
        """Write what changed of a KIP-848 group since the last write (under the
        group's lock): only ``member_id``'s records when neither an epoch nor the
        membership moved, else the whole group, with tombstones for what went."""
        return self._store_modern(cg, member_id, records_of, member_records, shape)

    def store_streams_group(self, sg, member_id: str | None = None) -> int:
        """The same for a KIP-1071 streams group (streams_group_records.py)."""
        streams_records = _streams_records()
        return self._store_modern(sg, member_id, streams_records.records_of,
                                  streams_records.member_records, streams_records.shape)

    def _store_modern(self, group, member_id, all_records, own_records, shape_of) -> int:
        gid = group.group_id
        written = self._modern_written.get(gid, {})
        now_shape = shape_of(group)
        if member_id in group.members and self._modern_shape.get(gid) == now_shape:
            current = dict(written)
            current.update(own_records(group, member_id))
        else:
            current = all_records(group)
        changed = [(k, v) for k, v in current.items() if written.get(k) != v]
        gone = [(k, None) for k in written if k not in current]
        if not changed and not gone:
            return ErrorCode.NONE
        error = self._append(gid, gone + changed)
        if not error:
            self._modern_written[gid] = current
            self._modern_shape[gid] = now_shape
        return error

    def _value(self, group: Group) -> dict:
        return {
            "protocol_type": group.protocol_type or "", "generation": group.generation_id,
            "protocol": group.protocol_name, "leader": group.leader_id,
            "current_state_timestamp": (self.clock_ms() if group.current_state_timestamp is None
                                        else group.current_state_timestamp),
            "members": [{
                "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms,
                "session_timeout": m.session_timeout_ms,
                "subscription": m.metadata_for(group.protocol_name),
                "assignment": m.assignment} for m in group.members.values()]}

    # -- loading ------------------------------------------------------------------------------

    def load(self, partition_count: int) -> list[Group]:
        """Every group stored in ``__consumer_offsets``, rebuilt."""
        self._set_partitions(partition_count)
        offsets: dict[str, dict] = {}
        groups: dict[str, dict | None] = {}
        # [KIP-848 image, KIP-1071 image]: the second made by the first streams
        # record (see _replay), so a broker without streams groups imports no
        # streams module (issue 28).
        images = [ConsumerGroupImage(), None]
        started = time.monotonic()
        for index in range(partition_count):
            self._load_partition(index, offsets, groups, images)
        modern = images[0].groups()
        streams = images[1].groups() if images[1] is not None else {}
        loaded = []
        for group_id in sorted(set(offsets) | set(groups) | set(modern) | set(streams)):
            value = groups.get(group_id)
            if (value is None and not offsets.get(group_id) and group_id not in modern
                    and group_id not in streams):
                continue   # deleted, or every offset removed
            group = self._group_from(group_id, value)
            if group_id in modern:
                group.modern = modern[group_id]
                self._modern_written[group_id] = records_of(group.modern)
                self._modern_shape[group_id] = shape(group.modern)
            elif group_id in streams:
                streams_records = _streams_records()
                group.streams = streams[group_id]
                self._modern_written[group_id] = streams_records.records_of(group.streams)
                self._modern_shape[group_id] = streams_records.shape(group.streams)
            group.offsets = {tp: OffsetAndMetadata(v["offset"], v["leader_epoch"], v["metadata"],
                                                   v["commit_timestamp"])
                             for tp, v in offsets.get(group_id, {}).items()}
            loaded.append(group)
        log.info("Finished loading %d group(s) and their offsets from %s in %d ms",
                 len(loaded), GROUP_METADATA_TOPIC_NAME,
                 int((time.monotonic() - started) * 1000))
        return loaded

    def take_loaded_pending(self) -> dict[tuple[str, int], list]:
        with self._lock:
            pending, self._loaded_pending = self._loaded_pending, {}
        return {key: [PartitionCommit(r.topic, r.partition, r.value["offset"],
                                      r.value["leader_epoch"], r.value["metadata"])
                      for r in records if r.value is not None]
                for key, records in pending.items()}

    def _load_partition(self, index: int, offsets: dict, groups: dict,
                        images: list) -> None:
        # A transaction's offsets wait for its marker: producer id -> [record].
        pending: dict[int, list[OffsetCommitRecord]] = {}
        for header, records in loaded_batches(self._replica_manager, GROUP_METADATA_TOPIC_NAME,
                                              index, _bad_records):
            if header.attributes & CONTROL_MASK:
                done = pending.pop(header.producer_id, [])
                if records and control_key_type(records[0].key) == COMMIT:
                    for r in done:
                        _apply_offset(offsets, r)
                continue
            for record in records:
                self._replay(index, record, header, offsets, groups, pending, images)
        with self._lock:
            for producer_id, records in pending.items():
                for r in records:
                    self._loaded_pending.setdefault((r.group, producer_id), []).append(r)

    @staticmethod
    def _replay(index: int, record, header, offsets: dict, groups: dict, pending: dict,
                images: list) -> None:
        try:
            decoded = decode_group_record(record.key, record.value)
        except RecordFormatError as exc:
            _bad_records.log(logging.ERROR, "record", "Skipping a record at offset %d of "
                             "%s-%d: %s", record.offset, GROUP_METADATA_TOPIC_NAME, index,
                             escape(str(exc)))
            return
        if isinstance(decoded, ConsumerGroupRecord):
            # [KIP-848 image, KIP-1071 image (None until its first record)]
            streams = decoded.record in STREAMS_RECORD_NAMES
            if images[streams] is None:
                images[streams] = _streams_records().StreamsGroupImage()
            images[streams].replay(decoded)
        elif isinstance(decoded, GroupMetadataRecord):
            # A tombstone alone leaves the offsets (DeleteGroups removes them first).
            groups[decoded.group] = decoded.value
        elif header.is_transactional:
            pending.setdefault(header.producer_id, []).append(decoded)
        else:
            _apply_offset(offsets, decoded)

    @staticmethod
    def _group_from(group_id: str, value: dict | None) -> Group:
        if value is None:   # offsets only: a "simple" consumer's group
            return Group(group_id)
        members = {m["member_id"]: Member(
            m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
            m["session_timeout"], m["rebalance_timeout"], value["protocol_type"],
            [(value["protocol"] or "", m["subscription"])], m["assignment"], is_new=False)
            for m in value["members"]}
        group = Group(group_id, GroupState.STABLE if members else GroupState.EMPTY,
                      value["generation"], value["protocol_type"] or None,
                      value["protocol"], value["leader"], members)
        if value["current_state_timestamp"] >= 0:
            group.current_state_timestamp = value["current_state_timestamp"]
        return group


def _apply_offset(offsets: dict, record: OffsetCommitRecord) -> None:
    group = offsets.setdefault(record.group, {})
    if record.value is None:
        group.pop((record.topic, record.partition), None)
    else:
        group[(record.topic, record.partition)] = record.value
