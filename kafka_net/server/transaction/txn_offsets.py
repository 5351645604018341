"""Offsets committed inside a transaction (TxnOffsetCommit), pending until it ends.

Kafka's ``GroupMetadata.pendingTransactionalOffsetCommits``: offsets a
transactional producer sends for a consumer group are held per (group,
producer id) and become the group's committed offsets only when the
transaction's COMMIT marker reaches the group; an ABORT drops them.  The
group code only learns of them then, through
``OffsetManager.complete_txn_commit`` (kafka_net/server/group/offsets.py).
"""

from __future__ import annotations

import threading

from kafka_net.server.group.offsets import PartitionCommit


class PendingTxnOffsets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, int], dict[tuple[str, int], PartitionCommit]] = {}

    def add(self, group_id: str, producer_id: int, commits: list[PartitionCommit]) -> None:
        with self._lock:
            offsets = self._pending.setdefault((group_id, producer_id), {})
            for c in commits:
                offsets[(c.topic, c.partition)] = c

    def take(self, group_id: str, producer_id: int) -> list[PartitionCommit]:
        """Remove and return the producer's pending offsets for the group."""
        with self._lock:
            return list(self._pending.pop((group_id, producer_id), {}).values())

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset for this partition (KIP-447:
        OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT meanwhile)."""
        with self._lock:
            return any(g == group_id and (topic, partition) in offsets
                       for (g, _), offsets in self._pending.items())
