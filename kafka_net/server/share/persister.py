"""ShareStatePersister: share-partition state kept in ``__share_group_state``.

Kafka splits this between the share-partition leader's ``DefaultStatePersister``
and the share coordinator (``ShareCoordinatorShard``), which talk with the
Initialize/Read/Write/Delete/ReadSummary ShareGroupState RPCs (API keys 83-87).
kafka-net is one node, leader and share coordinator at once, so the RPCs are
calls here, with the same data: a state epoch, a leader epoch, the start
offset and the state batches.

Writing (Kafka's ``ShareCoordinatorShard.writeState``): each write appends one
record to the share-partition's partition of ``__share_group_state``
(:mod:`kafka_net.protocol.share_records`): a ShareSnapshot holding the whole
state for the first write and after every
``share.coordinator.snapshot.update.records.per.snapshot`` updates, a
ShareUpdate otherwise; a deleted state is a tombstone of both keys.  The
write is appended before the acknowledgement that caused it is answered, so
an acknowledged record is never delivered again after a restart.

Loading (the share coordinator becoming leader of the topic's partitions):
every partition is read from its start; a snapshot replaces the state, an
update is applied over it (its start offset only ever moves forward, its
batches replace the state of their offsets), a tombstone removes it.

Pruning (Kafka's share coordinator, with DeleteRecords): after each snapshot
and each deletion, a partition of ``__share_group_state`` starts at the
oldest latest snapshot of the share-partitions kept in it (at its end when
none is), so a restart replays a bounded tail, not the topic's whole history.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from dataclasses import dataclass, field

from kafka_net.log_safety import RateLimitedLog
from kafka_net.protocol.coordinator_records import RecordFormatError
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_key_value_batch
from kafka_net.protocol.share_records import (
    SNAPSHOT_KEY_VERSION, UPDATE_KEY_VERSION, decode_share_state_record, share_partition_for,
    share_state_key, share_state_value)
from kafka_net.server.internal_topics import SHARE_GROUP_STATE_TOPIC_NAME, loaded_batches
from kafka_net.server.partition_limits import TopicCreationError
from kafka_net.server.share.share_partition import StateBatch

log = logging.getLogger(__name__)
_bad_records = RateLimitedLog(log)

Key = tuple[str, object, int]   # (group id, topic id, partition)


@dataclass
class PersistedState:
    """One share-partition's state as the share coordinator holds it."""
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: list[StateBatch] = field(default_factory=list)
    delivery_complete_count: int = -1
    updates_since_snapshot: int = 0

    def apply_update(self, leader_epoch: int, start_offset: int, batches,
                     delivery_complete_count: int) -> None:
        self.leader_epoch = leader_epoch
        self.start_offset = max(self.start_offset, start_offset)
        self.batches = merge_batches(self.batches, batches, self.start_offset)
        self.delivery_complete_count = delivery_complete_count


def merge_batches(old, new, start_offset: int) -> list[StateBatch]:
    """``new``'s batches over ``old``'s (a later batch wins where they overlap),
    none before ``start_offset``, runs of one state and count joined.  Works on
    the runs, not offset by offset: a share group acknowledging millions of
    offsets writes and replays runs of millions, each in one step."""
    painted: list[StateBatch] = []   # sorted, not overlapping
    for batch in (*old, *new):
        first = max(batch.first_offset, start_offset)
        if first <= batch.last_offset:
            _paint(painted, batch._replace(first_offset=first))
    out: list[StateBatch] = []
    for batch in painted:
        if out and out[-1].last_offset == batch.first_offset - 1 \
                and out[-1][2:] == batch[2:]:
            out[-1] = out[-1]._replace(last_offset=batch.last_offset)
        else:
            out.append(batch)
    return out


def _paint(painted: list[StateBatch], batch: StateBatch) -> None:
    """Lay ``batch`` over the runs it overlaps, keeping their parts outside it."""
    lo = bisect.bisect_left(painted, batch.first_offset, key=lambda b: b.last_offset)
    hi = lo
    before, after = [], []
    while hi < len(painted) and painted[hi].first_offset <= batch.last_offset:
        covered = painted[hi]
        if covered.first_offset < batch.first_offset:
            before.append(covered._replace(last_offset=batch.first_offset - 1))
        if covered.last_offset > batch.last_offset:
            after.append(covered._replace(first_offset=batch.last_offset + 1))
        hi += 1
    painted[lo:hi] = [*before, batch, *after]


class ShareStatePersister:
    def __init__(self, replica_manager=None, internal_topics=None,
                 updates_per_snapshot: int = 500) -> None:
        """Without ``internal_topics`` (API-layer tests) the state lives in memory only."""
        self._replica_manager = replica_manager
        self._internal_topics = internal_topics
        self._updates_per_snapshot = updates_per_snapshot
        self._states: dict[Key, PersistedState] = {}
        # Where each share-partition's latest snapshot record is in its partition of
        # __share_group_state: everything below the lowest of them is redundant.
        self._snapshot_at: dict[Key, tuple[int, int]] = {}   # (index, offset)
        self._lock = threading.RLock()
        # Bumped by each load: only a load brings groups the coordinator has not made
        # (every write is for a group that exists), so it rescans groups() then only.
        self.loads = 0

    # -- the RPCs, as calls --------------------------------------------------------------

    def ready(self) -> None:
        """Load ``__share_group_state`` if it exists (never creates it)."""
        topics = self._internal_topics
        if topics is not None and not topics.is_ready(SHARE_GROUP_STATE_TOPIC_NAME):
            topics.load_if_exists(SHARE_GROUP_STATE_TOPIC_NAME)

    def read_state(self, group_id: str, topic_id, partition: int) -> PersistedState | None:
        """ReadShareGroupState: the state, None if the share-partition has none."""
        self.ready()
        with self._lock:
            state = self._states.get((group_id, topic_id, partition))
            return None if state is None else PersistedState(
                state.state_epoch, state.leader_epoch, state.start_offset,
                list(state.batches), state.delivery_complete_count)

    def states_of(self, group_id: str) -> dict[tuple[object, int], PersistedState]:
        """ReadShareGroupStateSummary for every share-partition of the group."""
        self.ready()
        with self._lock:
            return {(t, p): s for (g, t, p), s in self._states.items() if g == group_id}

    def groups(self) -> set[str]:
        self.ready()
        with self._lock:
            return {g for g, _, _ in self._states}

    def write_state(self, group_id: str, topic_id, partition: int, state_epoch: int,
                    leader_epoch: int, start_offset: int, batches: list[StateBatch],
                    delivery_complete_count: int = -1) -> int:
        """WriteShareGroupState (or InitializeShareGroupState, a first write): an error
        code; the state changes only once its record is appended."""
        key = (group_id, topic_id, partition)
        count, error = self._ensure_topic(group_id)
        if error:
            return error
        with self._lock:
            current = self._states.get(key)
            snapshot = (current is None or current.state_epoch != state_epoch
                        or current.updates_since_snapshot >= self._updates_per_snapshot)
            now = int(time.time() * 1000)
            value = {"snapshot_epoch": 0, "state_epoch": state_epoch,
                     "leader_epoch": leader_epoch, "start_offset": start_offset,
                     "delivery_complete_count": delivery_complete_count,
                     "create_timestamp": now, "write_timestamp": now,
                     "state_batches": [b._asdict() for b in batches]}
            kind = SNAPSHOT_KEY_VERSION if snapshot else UPDATE_KEY_VERSION
            error, offset = self._append(key, count, [(share_state_key(kind, *key),
                                                       share_state_value(kind, value))])
            if error:
                return error
            if snapshot:
                self._states[key] = PersistedState(state_epoch, leader_epoch, start_offset,
                                                   list(batches), delivery_complete_count)
                if offset >= 0:
                    index = share_partition_for(*key, count)
                    self._snapshot_at[key] = (index, offset)
                    self._prune(index)
            else:
                current.apply_update(leader_epoch, start_offset, batches,
                                     delivery_complete_count)
                current.updates_since_snapshot += 1
            return ErrorCode.NONE

    def delete_state(self, group_id: str, topic_id, partition: int) -> int:
        """DeleteShareGroupState: tombstones for the share-partition's records."""
        key = (group_id, topic_id, partition)
        count, error = self._ensure_topic(group_id)
        if error:
            return error
        with self._lock:
            if key not in self._states:
                return ErrorCode.NONE
            error, _ = self._append(key, count, [
                (share_state_key(SNAPSHOT_KEY_VERSION, *key), None),
                (share_state_key(UPDATE_KEY_VERSION, *key), None)])
            if not error:
                del self._states[key]
                placed = self._snapshot_at.pop(key, None)
                if placed is not None:
                    self._prune(placed[0])
            return error

    def _prune(self, index: int) -> None:
        """Drop the records of partition ``index`` of ``__share_group_state`` below
        the oldest latest snapshot of the share-partitions kept there (Kafka's
        share coordinator prunes the same way, with DeleteRecords): a restart then
        replays from there, not from the topic's start.  With none kept there,
        everything up to the log end goes (a tombstone has nothing left to hide)."""
        if self._internal_topics is None:
            return
        partition = self._replica_manager.partition(SHARE_GROUP_STATE_TOPIC_NAME, index)
        if partition is None:
            return
        with partition.lock:
            offsets = [offset for i, offset in self._snapshot_at.values() if i == index]
            below = min(offsets) if offsets else partition.log.log_end_offset
            if below > partition.log.log_start_offset:
                partition.log.delete_records_before(below)

    def _ensure_topic(self, group_id: str) -> tuple[int, int]:
        """(partition count, error): the topic made and loaded before any lock of
        ours is taken (its loader takes them)."""
        topics = self._internal_topics
        if topics is None:
            return 0, ErrorCode.NONE
        try:
            return topics.ensure(SHARE_GROUP_STATE_TOPIC_NAME), ErrorCode.NONE
        except TopicCreationError as exc:
            log.warning("Cannot write the state of share group %s: %s", group_id, exc.message)
            return 0, ErrorCode.COORDINATOR_NOT_AVAILABLE

    def _append(self, key: Key, count: int, records: list) -> tuple[int, int]:
        """(error code, offset of the first record appended; -1 without a topic)."""
        if self._internal_topics is None:
            return ErrorCode.NONE, -1
        now = int(time.time() * 1000)
        result = self._replica_manager.append_coordinator_records(
            SHARE_GROUP_STATE_TOPIC_NAME, share_partition_for(*key, count),
            build_key_value_batch(records, now), len(records), now)
        if result.error_code:
            log.error("Appending the state of share-partition %s:%s:%d to %s failed with "
                      "error %d", key[0], key[1], key[2], SHARE_GROUP_STATE_TOPIC_NAME,
                      result.error_code)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1
        return ErrorCode.NONE, result.base_offset

    # -- loading ----------------------------------------------------------------------

    def load(self, partition_count: int):
        """Replay ``__share_group_state`` (the loader InternalTopics runs)."""
        started = time.monotonic()
        states: dict[Key, PersistedState] = {}
        snapshots: dict[Key, tuple[int, int]] = {}
        for index in range(partition_count):
            for _, records in loaded_batches(self._replica_manager,
                                             SHARE_GROUP_STATE_TOPIC_NAME, index, _bad_records):
                for record in records:
                    _replay(states, record, index, snapshots)
        with self._lock:
            self._states.update(states)
            self._snapshot_at.update((k, v) for k, v in snapshots.items() if k in states)
            self.loads += 1
            for index in range(partition_count):
                self._prune(index)
        log.info("Finished loading the state of %d share-partition(s) from %s in %d ms",
                 len(states), SHARE_GROUP_STATE_TOPIC_NAME,
                 int((time.monotonic() - started) * 1000))
        return None


def _replay(states: dict, record, index: int, snapshots: dict | None = None) -> None:
    try:
        r = decode_share_state_record(record.key, record.value)
    except RecordFormatError as exc:
        _bad_records.log(logging.ERROR, "record", "Skipping a record at offset %d of %s-%d: %s",
                         record.offset, SHARE_GROUP_STATE_TOPIC_NAME, index, exc)
        return
    key = (r.group_id, r.topic_id, r.partition)
    if r.value is None:
        states.pop(key, None)
        return
    v = r.value
    batches = [StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"],
                          b["delivery_count"]) for b in v["state_batches"]]
    if r.kind == SNAPSHOT_KEY_VERSION:
        states[key] = PersistedState(v["state_epoch"], v["leader_epoch"], v["start_offset"],
                                     batches, v["delivery_complete_count"])
        if snapshots is not None:
            snapshots[key] = (index, record.offset)
    elif key in states:   # an update without its snapshot (compacted away) is dropped
        current = states[key]
        current.apply_update(v["leader_epoch"], v["start_offset"], batches,
                             v["delivery_complete_count"])
        current.updates_since_snapshot += 1
