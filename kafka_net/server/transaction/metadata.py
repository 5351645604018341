"""TransactionMetadata: one transactional id's state (Kafka's ``TransactionMetadata``).

States and the moves between them (Kafka's ``TransactionState``)::

    Empty / CompleteCommit / CompleteAbort --AddPartitions/AddOffsets--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
    Ongoing --EndTxn(abort), timeout, re-init--> PrepareAbort --markers--> CompleteAbort
    Ongoing --InitProducerId or timeout--> PrepareEpochFence (epoch + 1) --> PrepareAbort
    Empty / Complete* --EndTxn v5 abort (TV2), epoch + 1--> PrepareAbort --> CompleteAbort

InitProducerId bumps the epoch in Empty and Complete* (a producer restarting
with the same transactional id fences every older instance: their epoch is
stale).  With transaction version 2 (KIP-890 part 2, a client sending EndTxn
v5) EndTxn bumps the epoch too, at every commit or abort: the markers carry
the new epoch, so a late batch of the ended transaction is refused by the
partition, and the client starts its next transaction at that epoch.  An
epoch that cannot grow (Short.MaxValue) moves the id to a new producer id at
epoch 0 once the markers are written (``next_producer_id``).  While a
Prepare* state's markers are being written, requests that would change the
state get CONCURRENT_TRANSACTIONS, which clients retry.

Kafka persists each transition in ``__transaction_state`` first; kafka-net
keeps the metadata in memory, so a transition is applied at once, under the
metadata's lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import Enum

from kafka_net.protocol.error_codes import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
_SHORT_MAX = 2**15 - 1


class TransactionState(Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @classmethod
    def from_name(cls, name: str) -> "TransactionState | None":
        return next((s for s in cls if s.value == name), None)


PREPARING = (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT,
             TransactionState.PREPARE_EPOCH_FENCE)
COMPLETED = (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
             TransactionState.COMPLETE_ABORT)


@dataclass
class TransactionMetadata:
    """One transactional id's state (Kafka's TransactionMetadata): producer, epoch, state,
    partitions."""

    transactional_id: str
    producer_id: int
    txn_timeout_ms: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    previous_producer_id: int = NO_PRODUCER_ID
    state: TransactionState = TransactionState.EMPTY
    topic_partitions: set = field(default_factory=set)   # {(topic, partition)}
    groups: set = field(default_factory=set)             # consumer groups (AddOffsetsToTxn)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    # TransactionVersion the client last used on this transaction: 2 when it added
    # partitions through Produce v12 / TxnOffsetCommit v5 or ended it with EndTxn
    # v5 (KIP-890 part 2), else 0.  A v5 retry is recognised only at 2.
    client_transaction_version: int = 0
    # Set while a TV2 commit/abort of an exhausted epoch writes its markers.
    next_producer_id: int = NO_PRODUCER_ID
    # A classic fence bumped the epoch but its PrepareAbort was not written: the
    # next fence keeps that epoch (Kafka's hasFailedEpochFence, KAFKA-9666).
    has_failed_epoch_fence: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return self.producer_epoch >= _SHORT_MAX - 1

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> int | None:
        """InitProducerId on a completed transaction: epoch + 1 (or a retry of the
        last bump).  Returns an error code, or None when applied."""
        bumped = self.producer_epoch + 1
        last = NO_PRODUCER_EPOCH
        if expected_epoch is not None:
            if self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
                last = self.producer_epoch
            elif expected_epoch == self.last_producer_epoch:
                bumped, last = self.producer_epoch, self.last_producer_epoch   # a retry
            else:
                return ErrorCode.PRODUCER_FENCED
        self.producer_epoch, self.last_producer_epoch = bumped, last
        self._reset(TransactionState.EMPTY, timeout_ms, now_ms)
        return None

    def prepare_producer_id_rotation(self, producer_id: int, timeout_ms: int, now_ms: int,
                                     recovering: bool) -> None:
        """The epoch is exhausted: a new producer id, epoch 0."""
        self.previous_producer_id = self.producer_id
        self.producer_id, self.producer_epoch = producer_id, 0
        self.last_producer_epoch = self.producer_epoch if recovering else NO_PRODUCER_EPOCH
        self._reset(TransactionState.EMPTY, timeout_ms, now_ms)

    def prepare_fence_producer_epoch(self, now_ms: int, bump: bool = True) -> None:
        """Fence the current producer before aborting its transaction (re-init or
        timeout).  ``bump``: the epoch goes up now (the classic abort; Kafka's
        prepareFenceProducerEpoch, not again after a fence whose write failed nor
        past Short.MaxValue); a transaction-version-2 abort bumps it itself."""
        if bump and not self.has_failed_epoch_fence and self.producer_epoch < _SHORT_MAX:
            self.producer_epoch += 1
        self.state = TransactionState.PREPARE_EPOCH_FENCE
        self.txn_last_update_timestamp = now_ms

    def add_partitions(self, partitions: set, now_ms: int,
                       client_transaction_version: int | None = None) -> None:
        if self.state != TransactionState.ONGOING:
            self.txn_start_timestamp = now_ms
        self.topic_partitions = self.topic_partitions | partitions   # a new set: undoable
        self.state = TransactionState.ONGOING
        self.txn_last_update_timestamp = now_ms
        if client_transaction_version is not None:
            self.client_transaction_version = client_transaction_version

    def prepare_abort_or_commit(self, commit: bool, bump_epoch: bool, next_producer_id: int,
                                now_ms: int, no_partition_added: bool = False) -> None:
        """-> PrepareCommit / PrepareAbort; ``bump_epoch`` for a TV2 client (Kafka's
        prepareAbortOrCommit).  ``no_partition_added``: a TV2 abort outside a transaction."""
        if no_partition_added:
            # Nothing was added: the transaction starts now, with nothing to mark.
            self.topic_partitions, self.groups = set(), set()
            self.txn_start_timestamp = now_ms
        if bump_epoch:
            # At Short.MaxValue (only reachable through a fence) the abort goes
            # through without the bump, as Kafka's prepareAbortOrCommit lets it.
            bumped = min(self.producer_epoch + 1, _SHORT_MAX)
            self.last_producer_epoch, self.producer_epoch = self.producer_epoch, bumped
            self.client_transaction_version = 2
            self.next_producer_id = next_producer_id
        self.state = (TransactionState.PREPARE_COMMIT if commit
                      else TransactionState.PREPARE_ABORT)
        self.txn_last_update_timestamp = now_ms

    def complete(self, commit: bool, now_ms: int) -> None:
        self.has_failed_epoch_fence = False
        self.state = (TransactionState.COMPLETE_COMMIT if commit
                      else TransactionState.COMPLETE_ABORT)
        self.topic_partitions, self.groups = set(), set()
        self.txn_last_update_timestamp = now_ms
        if self.next_producer_id != NO_PRODUCER_ID:
            # The epoch ran out at this end: the next transaction is a new producer id's.
            self.previous_producer_id, self.producer_id = (self.producer_id,
                                                           self.next_producer_id)
            self.producer_epoch, self.last_producer_epoch = 0, NO_PRODUCER_EPOCH
            self.next_producer_id = NO_PRODUCER_ID

    def _reset(self, state: TransactionState, timeout_ms: int, now_ms: int) -> None:
        self.state, self.txn_timeout_ms = state, timeout_ms
        self.topic_partitions, self.groups = set(), set()
        self.txn_start_timestamp, self.txn_last_update_timestamp = -1, now_ms
