"""Offset expiry (Kafka's ``GroupMetadataManager.cleanupGroupMetadata``, KIP-211).

Every ``offsets.retention.check.interval.ms`` (10 minutes) the coordinator
removes committed offsets nobody will use again, ``offsets.retention.minutes``
(7 days) after:

* the group became Empty (its ``current_state_timestamp``; the commit's
  timestamp when that is not known), for a group with a protocol type and no
  members: every offset;
* the commit, for a "simple" consumer's group (no protocol type: assign(),
  not subscribe()): every offset;
* the commit, for a Stable "consumer" group: the offsets of topics its
  members no longer subscribe to.

Offsets a transaction holds pending are not touched (they are not the
group's yet).  Removed offsets get tombstones in ``__consumer_offsets``; a
group left Empty with no offsets is removed too (Dead, then a tombstone for
its metadata), so its id may start afresh.  KIP-848 groups keep their
offsets (their expiry is not built here).

:class:`OffsetExpiry` works on the one group registry
(:class:`~kafka_net.server.group.registry.GroupRegistry`); the
:class:`~kafka_net.server.group.coordinator.GroupCoordinator` runs it on its
"delete-expired-group-metadata" task.
"""

from __future__ import annotations

import logging
import threading
import time

from kafka_net.log_safety import escape
from kafka_net.protocol.consumer_protocol import PROTOCOL_TYPE
from kafka_net.server.group.group import Group, GroupConfig
from kafka_net.server.group.registry import GroupRegistry
from kafka_net.server.group.state import GroupState

log = logging.getLogger(__name__)

S = GroupState


def expired_offsets(group: Group, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
    """``ClassicGroup.computeExpiredOffsets``: the partitions whose offsets expired."""
    if not group.is_classic:
        return []
    if group.protocol_type is not None and group.state == S.EMPTY:
        since = group.current_state_timestamp
        return [tp for tp, o in group.offsets.items()
                if (o.commit_timestamp if since is None else since) + retention_ms <= now_ms]
    if group.protocol_type is None:
        return [tp for tp, o in group.offsets.items()
                if o.commit_timestamp + retention_ms <= now_ms]
    if (group.protocol_type == PROTOCOL_TYPE and group.state == S.STABLE
            and group.subscribed_topics is not None):
        return [tp for tp, o in group.offsets.items()
                if tp[0] not in group.subscribed_topics
                and o.commit_timestamp + retention_ms <= now_ms]
    return []


class OffsetExpiry:
    def __init__(self, registry: GroupRegistry, config: GroupConfig) -> None:
        """``config``: offsets.retention.minutes and its check interval."""
        self._registry = registry
        self.config = config

    def cleanup_group_metadata(self, now_ms: int | None = None) -> int:
        """Remove expired offsets, then empty groups with none left; how many offsets."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        started = time.monotonic()
        removed = 0
        for group in self._registry.groups():
            removed += self._expire_group(group, now_ms)
        if removed:
            log.info("Removed %d expired offsets in %d milliseconds.", removed,
                     int((time.monotonic() - started) * 1000))
        return removed

    def _expire_group(self, group: Group, now_ms: int) -> int:
        store = self._registry.store
        with group.lock:
            if group.state == S.DEAD:
                return 0
            expired = expired_offsets(group, now_ms, self.config.offsets_retention_ms)
            if expired and store is not None and store.remove_offsets(group.group_id, expired):
                return 0   # not written: try again at the next check
            for tp in expired:
                del group.offsets[tp]
            gone = (group.state == S.EMPTY and group.is_classic and not group.offsets
                    and not group.pending_members)
            if gone and (store is None or not store.remove_group(group.group_id, [])):
                group.transition_to(S.DEAD)
                log.info("Group %s transitioned to Dead in generation %d",
                         escape(group.group_id), group.generation_id)
        if gone and group.state == S.DEAD:
            self._registry.forget(group)
        return len(expired)

    def run(self, stop: threading.Event) -> None:
        interval = self.config.offsets_retention_check_interval_ms / 1000
        while not stop.wait(interval):
            try:
                self.cleanup_group_metadata()
            except Exception:   # the check must go on
                log.exception("Error in the group coordinator's offset expiry")
