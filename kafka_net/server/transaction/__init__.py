"""Exactly-once transactions: Kafka's transaction coordinator, reduced to one node.

* :mod:`.coordinator`: :class:`TransactionCoordinator`, the door the handlers use.
* :mod:`.metadata`: one transactional id's state and its transitions.
* :mod:`.state_manager`: all of them, timeouts, expiry, listing.
* :mod:`.markers`: COMMIT/ABORT control batches and group offsets at the end.
* :mod:`.txn_offsets`: TxnOffsetCommit offsets pending until the end.

The partition side (last stable offset, aborted transactions for
read_committed fetches) is :mod:`kafka_net.server.storage.txn_index`.
"""

from kafka_net.server.transaction.coordinator import (
    InitProducerIdResult, TransactionConfig, TransactionCoordinator, fenced_error_for)
from kafka_net.server.transaction.metadata import TransactionState

__all__ = ["fenced_error_for", "InitProducerIdResult", "TransactionConfig", "TransactionCoordinator",
           "TransactionState"]
