"""Committed offsets (Kafka's offset half of ``GroupMetadataManager``).

OffsetCommit from the current generation (or, for a group with no members,
from "simple" consumers with generation -1) is stored per partition;
OffsetFetch reads it back.  Offsets are read from memory, inside the group
they belong to (``Group.offsets``), under the group's lock; with a ``store``
(:class:`~kafka_net.server.group.metadata_manager.GroupMetadataManager`) every
change is first appended to ``__consumer_offsets``, one batch per request, and
only then made visible and answered.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.group import Group
from kafka_net.server.group.state import GroupState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset, with its leader epoch, metadata and commit time."""

    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int = -1   # ms; offsets.retention.minutes counts from it


NO_OFFSET = OffsetAndMetadata(-1, -1, "")   # what OffsetFetch says for "none committed"


@dataclass(frozen=True)
class PartitionCommit:
    """One partition of an OffsetCommit or TxnOffsetCommit request."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    # OffsetCommit v1 only: the client's commit time (ms), from which
    # offsets.retention.minutes counts; -1 (every other version): the broker's now.
    commit_timestamp: int = -1

    def committed_at(self, now: int) -> int:
        return now if self.commit_timestamp == -1 else self.commit_timestamp


class OffsetManager:
    def __init__(self, group_of: Callable[..., Group | None],
                 topic_partitions: Callable[[str], int | None],
                 groups: Callable[[], list[Group]], metadata_max_bytes: int,
                 store=None, group_type: Callable[[str], str | None] = lambda _: None
                 ) -> None:
        """``group_of(group_id, create=False)`` is the coordinator's group registry,
        ``group_type(group_id)`` which kind of group holds an id (share groups are
        not in the registry); ``store`` a GroupMetadataManager, or None to keep
        offsets in memory only."""
        self._group_of = group_of
        self._group_type = group_type
        self._topic_partitions = topic_partitions
        self._groups = groups
        self._metadata_max_bytes = metadata_max_bytes
        self.store = store
        self.clock_ms = lambda: int(time.time() * 1000)   # tests may replace it

    def commit(self, group_id: str, member_id: str, generation: int,
               commits: list[PartitionCommit], group_instance_id: str | None = None
               ) -> list[int]:
        """One error code per commit, in order."""
        error = self._commit_check(group_id, member_id, generation, group_instance_id)
        if error is not None:
            return [error] * len(commits)
        group = self._group_of(group_id, create=True)
        if group is None:   # a share group took the id since the check
            return [ErrorCode.GROUP_ID_NOT_FOUND] * len(commits)
        errors = [self._partition_error(c) or ErrorCode.NONE for c in commits]
        accepted = [c for c, e in zip(commits, errors) if e == ErrorCode.NONE]
        now = self.clock_ms()
        with group.lock:   # appended and applied in one order
            if accepted and self.store is not None:
                stored = self.store.store_offsets(group_id, accepted, now=now)
                if stored:
                    return [e or stored for e in errors]
            for c in accepted:
                group.offsets[(c.topic, c.partition)] = OffsetAndMetadata(
                    c.offset, c.leader_epoch, c.metadata, c.committed_at(now))
        return errors

    def _commit_check(self, group_id: str, member_id: str, generation: int,
                      group_instance_id: str | None = None) -> int | None:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if self._group_type(group_id) == "share":
            return ErrorCode.GROUP_ID_NOT_FOUND   # Kafka's "Group X is not a consumer group."
        group = self._group_of(group_id)
        if group is None:
            return None if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        with group.lock:
            modern = group.modern if group.modern is not None else group.streams
            if modern is not None:
                return validate_offset_commit(modern.members, member_id, generation)
            if generation < 0 and group.state == GroupState.EMPTY:
                return None  # a "simple" consumer using assign(), not subscribe()
            if group.state == GroupState.COMPLETING_REBALANCE:
                return ErrorCode.REBALANCE_IN_PROGRESS
            error = group.validate_member(member_id, group_instance_id)
            if error is not None:
                return error
            if generation != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            return None

    def _partition_error(self, c: PartitionCommit) -> int | None:
        count = self._topic_partitions(c.topic)
        if count is None or not 0 <= c.partition < count:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if c.metadata is not None and len(c.metadata.encode()) > self._metadata_max_bytes:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE
        return None

    # -- transactional commits: the hook kafka_net.server.transaction uses --------------
    # TxnOffsetCommit offsets stay pending (held by the transaction coordinator)
    # until the transaction's COMMIT marker; only then are they applied here.  With
    # a store they are appended at once as the producer's transactional records,
    # which the marker then commits or aborts in the log too.

    def check_txn_commit(self, group_id: str, member_id: str, generation: int,
                         commits: list[PartitionCommit],
                         group_instance_id: str | None = None) -> list[int]:
        """One error code per commit, storing nothing.  A request without member
        and generation (TxnOffsetCommit before v3) is not checked against the
        group's members, as Kafka does."""
        if not group_id:
            return [ErrorCode.INVALID_GROUP_ID] * len(commits)
        if self._group_type(group_id) == "share":
            return [ErrorCode.GROUP_ID_NOT_FOUND] * len(commits)
        error = None if generation < 0 and not member_id else \
            self._commit_check(group_id, member_id, generation, group_instance_id)
        if error is not None:
            return [error] * len(commits)
        return [self._partition_error(c) or ErrorCode.NONE for c in commits]

    def store_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                          commits: list[PartitionCommit]) -> int:
        """Append checked TxnOffsetCommit offsets as the producer's transactional
        records (not committed until its marker); an error code."""
        if not commits or self.store is None:
            return ErrorCode.NONE
        return self.store.store_offsets(group_id, commits, (producer_id, producer_epoch))

    def take_loaded_pending(self) -> dict[tuple[str, int], list[PartitionCommit]]:
        """Transactional offsets found in ``__consumer_offsets`` at load without
        their marker, by (group id, producer id): for the transaction coordinator."""
        return {} if self.store is None else self.store.take_loaded_pending()

    def complete_txn_commit(self, group_id: str, commits: list[PartitionCommit]) -> None:
        """Apply a committed transaction's offsets (its COMMIT marker reached the group)."""
        group = self._group_of(group_id, create=True)
        if group is None:
            # The group was deleted and its id taken by a share group before the
            # marker: a share group keeps no committed offsets.
            log.warning("Dropping %d transactional offset(s) of group %s: the id is now a "
                        "share group's.", len(commits), escape(group_id))
            return
        now = self.clock_ms()
        with group.lock:
            for c in commits:
                group.offsets[(c.topic, c.partition)] = OffsetAndMetadata(
                    c.offset, c.leader_epoch, c.metadata, now)

    def fetch(self, group_id: str, topics: list[tuple[str, list[int]]] | None
              ) -> list[tuple[str, list[tuple[int, OffsetAndMetadata]]]]:
        """Committed offsets per (topic, partitions); None means every committed
        partition, topics and partitions sorted.  Uncommitted ones get NO_OFFSET."""
        group = self._group_of(group_id)
        if group is None:
            offsets = {}
        else:
            with group.lock:
                offsets = dict(group.offsets)
        if topics is None:
            names = sorted({t for t, _ in offsets})
            topics = [(n, sorted(p for t, p in offsets if t == n)) for n in names]
        return [(name, [(index, offsets.get((name, index), NO_OFFSET)) for index in indexes])
                for name, indexes in topics]

    def delete_topic(self, topic: str) -> None:
        for group in self._groups():
            with group.lock:
                gone = [k for k in group.offsets if k[0] == topic]
                if gone and self.store is not None:
                    self.store.remove_offsets(group.group_id, gone)
                for key in gone:
                    del group.offsets[key]


def validate_offset_commit(members: dict, member_id: str, epoch: int) -> int | None:
    """OffsetCommit's check in a consumer or streams group (Kafka's
    ConsumerGroup.validateOffsetCommit and StreamsGroup.validateOffsetCommit, the
    same rule): an admin or simple commit (no member id, epoch < 0) only while
    the group is empty; a member's commit carries its current epoch
    (STALE_MEMBER_EPOCH otherwise; ILLEGAL_GENERATION for a classic member)."""
    if not member_id and epoch < 0:
        return None if not members else ErrorCode.UNKNOWN_MEMBER_ID
    member = members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if epoch != member.member_epoch:
        # A classic member of a consumer group (KIP-848's online migration) commits
        # with its generation: Kafka answers it as a classic group would.
        if getattr(member, "classic", None) is not None:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.STALE_MEMBER_EPOCH
    return None
