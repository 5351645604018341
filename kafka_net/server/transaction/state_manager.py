"""TransactionStateManager: every transactional id's metadata (Kafka's class of that name).

Kafka keeps the metadata in ``__transaction_state`` partitions and caches it
per partition; kafka-net keeps the cache only (one node, nothing survives a
restart).  Also here, as in Kafka: the transaction timeout check
(``validateTransactionTimeoutMs``), the list of timed-out transactions the
coordinator aborts, the removal of transactional ids idle past
``transactional.id.expiration.ms``, and ListTransactions' filtering.
"""

from __future__ import annotations

import threading
from kafka_net.server.transaction.metadata import (
    COMPLETED, TransactionMetadata, TransactionState)


class TransactionStateManager:
    def __init__(self, max_timeout_ms: int, id_expiration_ms: int) -> None:
        self.max_timeout_ms = max_timeout_ms
        self.id_expiration_ms = id_expiration_ms
        self._lock = threading.Lock()
        self._metadata: dict[str, TransactionMetadata] = {}

    def validate_transaction_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.max_timeout_ms

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        with self._lock:
            return self._metadata.get(transactional_id)

    def put_if_not_exists(self, metadata: TransactionMetadata) -> TransactionMetadata:
        with self._lock:
            return self._metadata.setdefault(metadata.transactional_id, metadata)

    def all(self) -> list[TransactionMetadata]:
        with self._lock:
            return list(self._metadata.values())

    def by_producer_id(self, producer_id: int) -> TransactionMetadata | None:
        """The transactional id now using ``producer_id`` (for a partition's check of a
        transactional batch; a handful of ids in a test broker, so a scan)."""
        return next((m for m in self.all() if m.producer_id == producer_id), None)

    def timed_out_transactions(self, now_ms: int) -> list[TransactionMetadata]:
        out = []
        for m in self.all():
            with m.lock:
                if m.state == TransactionState.ONGOING \
                        and m.txn_start_timestamp + m.txn_timeout_ms < now_ms:
                    out.append(m)
        return out

    def remove_expired_transactional_ids(self, now_ms: int) -> list[str]:
        """Forget ids with no transaction whose last use is older than
        transactional.id.expiration.ms (Kafka writes a tombstone; here they go)."""
        expired = []
        with self._lock:
            for txn_id, m in list(self._metadata.items()):
                if m.state in COMPLETED \
                        and now_ms - m.txn_last_update_timestamp >= self.id_expiration_ms:
                    del self._metadata[txn_id]
                    expired.append(txn_id)
        return expired

    def list_transaction_states(self, producer_ids: set[int], state_names: set[str],
                                duration_ms: int, now_ms: int
                                ) -> tuple[list[str], list[TransactionMetadata]]:
        """(unknown state filters, matching metadata) for ListTransactions."""
        unknown = [n for n in state_names if TransactionState.from_name(n) is None]
        states = {TransactionState.from_name(n) for n in state_names} - {None}

        def include(m: TransactionMetadata) -> bool:
            return (m.state != TransactionState.DEAD
                    and (not producer_ids or m.producer_id in producer_ids)
                    and (not state_names or m.state in states)
                    and not (duration_ms >= 0 and now_ms - m.txn_start_timestamp <= duration_ms))
        return unknown, [m for m in self.all() if include(m)]

