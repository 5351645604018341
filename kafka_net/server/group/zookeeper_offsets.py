"""The offsets OffsetCommit v0 / OffsetFetch v0 keep (Kafka's ZooKeeper consumer offsets).

A ZooKeeper-mode Kafka broker (every release before 4.0 that kafka-net can
play) stored a v0 commit not with the group coordinator but in ZooKeeper, at
``/consumers/<group>/offsets/<topic>/<partition>``: the offset alone (no
metadata, no leader epoch, no commit time), with no check of the group, its
members or its generation (``KafkaZkClient.setOrCreateConsumerOffset``), and
OffsetFetch v0 read only that (``getConsumerOffset``).  The two stores never
met: a v0 commit is invisible to OffsetFetch v1+, DescribeGroups and
ListGroups, and a v1+ commit to OffsetFetch v0.  This class is that tree.

kafka-net runs no ZooKeeper: the tree lives in the broker's memory, so unlike
Kafka's it does not survive a restart (documented in README).  Deleting a topic
leaves its entries, as Kafka's topic deletion left ``/consumers`` alone;
OffsetFetch v0 answers an unknown partition before looking.
"""

from __future__ import annotations

import threading


class ZooKeeperOffsets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offsets: dict[tuple[str, str, int], int] = {}

    def set_or_create(self, group_id: str, topic: str, partition: int, offset: int) -> None:
        with self._lock:
            self._offsets[(group_id, topic, partition)] = offset

    def get(self, group_id: str, topic: str, partition: int) -> int | None:
        """The committed offset, or None where no v0 commit wrote one."""
        with self._lock:
            return self._offsets.get((group_id, topic, partition))
