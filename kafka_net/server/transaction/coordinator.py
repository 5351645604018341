"""TransactionCoordinator: exactly-once transactions (KIP-98), Kafka's class of that name.

The handlers of InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, ListTransactions and DescribeTransactions call it; the
ReplicaManager asks it whether a transactional batch may be appended
(:meth:`verify_transactional_batch`).  This broker is the coordinator of every
transactional id (FindCoordinator key type 1 names it).

The life of a transaction (transaction version 1, the one every client uses
unless the broker finalizes ``transaction.version=2``):

1. InitProducerId(transactional id): a producer id and a bumped epoch; older
   producers with the same id are fenced; an open transaction is aborted first
   (answered CONCURRENT_TRANSACTIONS, the client retries).
2. AddPartitionsToTxn / AddOffsetsToTxn: the partitions and groups the
   transaction writes to; the state becomes Ongoing.
3. Produce with transactional batches (only to added partitions) and
   TxnOffsetCommit (offsets held pending).
4. EndTxn(commit or abort): PrepareCommit/PrepareAbort, a COMMIT or ABORT marker
   on every partition and the group offsets made visible or dropped
   (:mod:`.markers`), then CompleteCommit/CompleteAbort.

Transaction version 2 (KIP-890 part 2), chosen per request as Kafka does
(``TransactionVersion.transactionVersionForEndTxn``: EndTxn v5; Produce v12
and TxnOffsetCommit v5 for the implicit adds), whatever the finalized
``transaction.version`` (which only tells clients what they may use):

* no AddPartitionsToTxn / AddOffsetsToTxn: a transactional batch on Produce
  v12+ adds its partition to the transaction (Kafka's broker sends the
  coordinator an AddPartitionsToTxn for it), TxnOffsetCommit v5 adds the
  group; Empty or Complete* becomes Ongoing;
* EndTxn v5 bumps the producer epoch at every commit or abort, writes the
  markers with the new epoch and answers it (a retry of an EndTxn v5 that
  completed is recognised by the epoch before the bump); an abort with no
  transaction open is allowed and bumps the epoch too.  At Short.MaxValue - 1
  the bump moves the id to a new producer id at epoch 0.

A transaction open longer than its timeout is aborted by a periodic check
(every ``transaction.abort.timed.out.transaction.cleanup.interval.ms``), its
producer fenced by one epoch bump; an InitProducerId finding a transaction
open aborts it the same way.  These aborts follow the finalized
``transaction.version``, not the client's (Kafka's coordinator passes its own
level): at 2 the abort bumps the epoch as an EndTxn v5 would, below 2 the
classic fence bumps it; once in all either way (Kafka 4.0.0 bumped twice at
level 2, fixed by KAFKA-19367).  Producer ids come from here for
idempotent producers too (a null transactional id), as in Kafka.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.features import DEFAULT_FINALIZED, TRANSACTION_VERSION
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME)
from kafka_net.server.scheduler import BackgroundTask
from kafka_net.server.transaction.markers import TransactionMarkerWriter
from kafka_net.server.transaction.metadata import (
    COMPLETED, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, PREPARING, TransactionMetadata,
    TransactionState)
from kafka_net.server.transaction.state_manager import TransactionStateManager
from kafka_net.server.transaction.txn_offsets import PendingTxnOffsets

log = logging.getLogger(__name__)

PRODUCER_ID_BLOCK_SIZE = 1000   # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


@dataclass(frozen=True)
class TransactionConfig:
    """The transaction.* keys (Kafka's ``TransactionConfig``), defaults as Kafka's."""
    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 604_800_000
    abort_timed_out_cleanup_interval_ms: int = 10_000
    remove_expired_cleanup_interval_ms: int = 3_600_000


def fenced_error_for(error: int, api_version: int, fenced_since: int) -> int:
    """PRODUCER_FENCED (KIP-588) as a request version knows it: clients before
    ``fenced_since`` only understand INVALID_PRODUCER_EPOCH (Kafka's KafkaApis)."""
    if error == ErrorCode.PRODUCER_FENCED and api_version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


_SHORT_MAX = 2**15 - 1
# What a commit/abort changes in a TransactionMetadata, restored if its write fails.
_TRANSITION_FIELDS = ("state", "producer_epoch", "last_producer_epoch",
                      "client_transaction_version", "next_producer_id", "topic_partitions",
                      "groups", "txn_start_timestamp", "txn_last_update_timestamp")


@dataclass(frozen=True)
class EndTxnResult:
    """EndTxn's answer; v5 returns the producer id and (bumped) epoch to go on with."""
    error_code: int
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True)
class InitProducerIdResult:
    """The coordinator's answer to an InitProducerId."""

    error_code: int
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(self, config: TransactionConfig, replica_manager, group_offsets=None,
                 txn_log=None, transaction_version_level: Callable[[], int] | None = None
                 ) -> None:
        """``group_offsets``: the GroupCoordinator's OffsetManager (None: no groups);
        ``txn_log``: a :class:`~.state_log.TransactionLog` writing each transition to
        ``__transaction_state`` (None: in memory only); ``transaction_version_level()``:
        the finalized ``transaction.version``, which picks how the coordinator
        aborts a transaction itself (None: a new Kafka 4.2 cluster's level, 2)."""
        self.config = config
        self.transaction_version_level = transaction_version_level or (
            lambda: DEFAULT_FINALIZED[TRANSACTION_VERSION])
        self.txn_log = txn_log
        self.clock_ms = lambda: int(time.time() * 1000)   # tests may replace it
        self.state = TransactionStateManager(config.max_timeout_ms, config.id_expiration_ms)
        self.pending_offsets = PendingTxnOffsets()
        self._group_offsets = group_offsets
        self._markers = TransactionMarkerWriter(replica_manager, group_offsets,
                                                self.pending_offsets, lambda: self.clock_ms())
        # Kafka's ProducerIdManager: ids come in blocks from the controller, which
        # writes a ProducerIdsRecord per block (server/controller.py) so that no id
        # is handed out twice across restarts.  Alone (tests), blocks from a counter.
        self.producer_id_blocks: Callable[[int], int] = self._local_producer_id_block
        self._local_blocks = itertools.count(1000, PRODUCER_ID_BLOCK_SIZE)
        self._next_producer_id = self._block_end = 0
        self._producer_id_floor = 0   # skip_producer_ids_through: no id below it
        self._producer_id_lock = threading.Lock()
        self._task = BackgroundTask("transaction-coordinator", "kn-txn-timeouts", self._run)
        replica_manager.transaction_verifier = self.verify_transactional_batch

    def generate_producer_id(self) -> int:
        with self._producer_id_lock:
            while self._next_producer_id >= self._block_end:
                start = self.producer_id_blocks(0)
                self._next_producer_id = max(start, self._producer_id_floor)
                self._block_end = start + PRODUCER_ID_BLOCK_SIZE
            producer_id = self._next_producer_id
            self._next_producer_id += 1
            return producer_id

    def _local_producer_id_block(self, broker_id: int) -> int:
        return next(self._local_blocks)

    def skip_producer_ids_through(self, producer_id: int) -> None:
        """Never hand out ``producer_id`` or a smaller id again: a durable log
        loaded state for it, and a new producer reusing it would meet that
        producer's sequences (Kafka keeps allocated id blocks in the metadata
        log's ProducerIdsRecord, so this only matters for ids no block of this
        broker gave, or blocks a metadata log in memory forgot)."""
        with self._producer_id_lock:
            self._producer_id_floor = max(self._producer_id_floor, producer_id + 1)
            self._next_producer_id = max(self._next_producer_id, self._producer_id_floor)

    # -- InitProducerId ---------------------------------------------------------------

    def handle_init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                                expected: tuple[int, int] | None = None
                                ) -> InitProducerIdResult:
        """``expected``: the (producer id, epoch) a v3+ client resumes with, if any."""
        if transactional_id is None:
            return InitProducerIdResult(ErrorCode.NONE, self.generate_producer_id(), 0)
        if not transactional_id:
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
        if not self.state.validate_transaction_timeout_ms(timeout_ms):
            return InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        self._ready()
        md = self.state.get(transactional_id) or self.state.put_if_not_exists(
            TransactionMetadata(transactional_id, self.generate_producer_id(), timeout_ms,
                                txn_last_update_timestamp=self.clock_ms()))
        with md.lock:
            error = self._prepare_init_producer_id(md, timeout_ms, expected)
            if error is not None:
                return InitProducerIdResult(error)
            if md.state != TransactionState.PREPARE_EPOCH_FENCE:
                error = self._persist(md)
                if error:
                    return InitProducerIdResult(error)
                log.info("Initialized transactionalId %s with producerId %d and producer "
                         "epoch %d", escape(transactional_id), md.producer_id,
                         md.producer_epoch)
                return InitProducerIdResult(ErrorCode.NONE, md.producer_id, md.producer_epoch)
            fenced = (md.producer_id, md.producer_epoch)
        # An open transaction: abort it, fencing its producer, then let the client
        # retry (that retry bumps the epoch once more, to the one it answers).
        error = self._end_transaction(md, *fenced, commit=False, from_client=False).error_code
        return InitProducerIdResult(error or ErrorCode.CONCURRENT_TRANSACTIONS)

    def _prepare_init_producer_id(self, md: TransactionMetadata, timeout_ms: int,
                                  expected: tuple[int, int] | None) -> int | None:
        if expected is not None and not self._is_valid_producer_id(md, *expected):
            return ErrorCode.PRODUCER_FENCED
        if md.state in PREPARING:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        now = self.clock_ms()
        if md.state == TransactionState.ONGOING:
            md.prepare_fence_producer_epoch(now, bump=not self._server_tv2())
            return None
        if md.is_producer_epoch_exhausted and (expected is None
                                               or expected[1] == md.producer_epoch):
            md.prepare_producer_id_rotation(self.generate_producer_id(), timeout_ms, now,
                                            expected is not None)
            return None
        return md.prepare_increment_producer_epoch(
            timeout_ms, None if expected is None else expected[1], now)

    @staticmethod
    def _is_valid_producer_id(md: TransactionMetadata, producer_id: int, epoch: int) -> bool:
        return (md.producer_epoch == NO_PRODUCER_EPOCH or producer_id == md.producer_id
                or (producer_id == md.previous_producer_id and epoch >= 2**15 - 2))

    # -- AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------

    def handle_add_partitions_to_transaction(self, transactional_id: str, producer_id: int,
                                             epoch: int, partitions: set,
                                             transaction_version: int = 0) -> int:
        """``transaction_version``: 2 for a broker's AddPartitionsToTxn v4+ (Kafka's
        transactionVersionForAddPartitionsToTxn), else 0."""
        return self._add_to_transaction(transactional_id, producer_id, epoch, partitions, None,
                                        transaction_version)

    def handle_add_offsets_to_transaction(self, transactional_id: str, producer_id: int,
                                          epoch: int, group_id: str) -> int:
        return self._add_to_transaction(transactional_id, producer_id, epoch, set(), group_id)

    def _add_to_transaction(self, transactional_id: str, producer_id: int, epoch: int,
                            partitions: set, group_id: str | None,
                            transaction_version: int = 0) -> int:
        md = self.state.get(transactional_id)
        if md is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        with md.lock:
            error = self._check_producer(md, producer_id, epoch)
            if error is not None:
                return error
            return self._add_locked(md, partitions, group_id, transaction_version)

    def _add_locked(self, md: TransactionMetadata, partitions: set, group_id: str | None,
                    transaction_version: int) -> int:
        """Kafka's prepareAddPartitions, the producer checked (under md.lock)."""
        if md.state in PREPARING:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if md.state == TransactionState.ONGOING and partitions <= md.topic_partitions \
                and (group_id is None or group_id in md.groups):
            return ErrorCode.NONE   # nothing new: no transition (Kafka's fast path)
        saved = {name: getattr(md, name) for name in _TRANSITION_FIELDS}
        md.add_partitions(partitions, self.clock_ms(), transaction_version)
        if group_id is not None:
            md.groups = md.groups | {group_id}
        error = self._persist(md)
        if error:
            for name, value in saved.items():   # not written: nothing was added
                setattr(md, name, value)
        return error

    def handle_verify_partitions_in_transaction(self, transactional_id: str, producer_id: int,
                                                epoch: int, partitions: list) -> dict:
        """AddPartitionsToTxn v4+ verify_only: each partition NONE if it is in the
        ongoing transaction, INVALID_TXN_STATE if not (changes nothing)."""
        md = self.state.get(transactional_id)
        if md is None:
            return dict.fromkeys(partitions, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        with md.lock:
            error = self._check_producer(md, producer_id, epoch)
            if error is not None:
                return dict.fromkeys(partitions, error)
            ongoing = md.state == TransactionState.ONGOING
            return {tp: ErrorCode.NONE if ongoing and tp in md.topic_partitions
                    else ErrorCode.INVALID_TXN_STATE for tp in partitions}

    @staticmethod
    def _check_producer(md: TransactionMetadata, producer_id: int, epoch: int) -> int | None:
        if md.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if md.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED
        return None

    # -- EndTxn ---------------------------------------------------------------------------

    def handle_end_transaction(self, transactional_id: str, producer_id: int, epoch: int,
                               commit: bool, transaction_version: int = 0) -> EndTxnResult:
        """``transaction_version``: 2 for an EndTxn v5 (KIP-890 part 2), else 0."""
        if not transactional_id:
            return EndTxnResult(ErrorCode.INVALID_REQUEST)
        md = self.state.get(transactional_id)
        if md is None:
            return EndTxnResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        return self._end_transaction(md, producer_id, epoch, commit, from_client=True,
                                     tv2=transaction_version >= 2)

    def _end_transaction(self, md: TransactionMetadata, producer_id: int, epoch: int,
                         commit: bool, from_client: bool, tv2: bool = False) -> EndTxnResult:
        with md.lock:
            saved = {name: getattr(md, name) for name in _TRANSITION_FIELDS}
            if not from_client:
                error = self._prepare_fence_abort(md)
            elif tv2:
                error = self._prepare_end_v2(md, producer_id, epoch, commit)
            else:
                error = self._check_producer(md, producer_id, epoch)
                if error is None:
                    error = self._prepare_end(md, commit)
            if error is not None:
                return EndTxnResult(error)
            if md.state not in PREPARING:
                # A retry of an EndTxn that completed: the identity to go on with.
                return EndTxnResult(ErrorCode.NONE, md.producer_id, md.producer_epoch)
            error = self._persist(md)
            if error:
                for name, value in saved.items():   # not written: the transaction did not move
                    setattr(md, name, value)
                if md.state == TransactionState.PREPARE_EPOCH_FENCE:
                    self._undo_fence(md)
                return EndTxnResult(error)
            partitions, groups = set(md.topic_partitions), set(md.groups)
            marker_epoch = md.producer_epoch   # bumped for TV2: fences the ended transaction
        result = self._complete(md, producer_id, marker_epoch, commit, partitions, groups)
        log.debug("Completed %s of transaction for transactionalId %s with producerId %d "
                  "and producer epoch %d (%d partition(s), %d group(s))",
                  "commit" if commit else "rollback", escape(md.transactional_id),
                  producer_id, marker_epoch, len(partitions), len(groups))
        return result

    def _server_tv2(self) -> bool:
        """Kafka aborts a transaction itself (timeout, fencing InitProducerId) with
        the finalized transaction.version, not the client's: at 2 the abort bumps
        the epoch as an EndTxn v5 would (``supportsEpochBump``)."""
        return self.transaction_version_level() >= 2

    def _prepare_fence_abort(self, md: TransactionMetadata) -> int | None:
        """PrepareEpochFence -> PrepareAbort (Kafka's endTransaction, not from the
        client).  The producer's epoch goes up once in all, as in Kafka since
        KAFKA-19367 (4.0.1, 4.1): at transaction.version 2 by the abort itself
        (the fence left it; last epoch = the fenced one, the client version
        becomes 2), below 2 by the fence (last epoch unknown).  A retried EndTxn
        v5 of the fenced producer then finds CompleteAbort one epoch above its own
        and is answered as a retry of an abort, as in Kafka."""
        if md.state != TransactionState.PREPARE_EPOCH_FENCE:
            return ErrorCode.INVALID_TXN_STATE
        if self._server_tv2():
            # Kafka 4.2 rotates no producer id here (its !isEpochFence guard):
            # at Short.MaxValue - 1 the abort ends at Short.MaxValue and the
            # client's InitProducerId moves the id on.
            md.prepare_abort_or_commit(False, True, NO_PRODUCER_ID, self.clock_ms())
        else:
            md.state, md.last_producer_epoch = TransactionState.PREPARE_ABORT, NO_PRODUCER_EPOCH
            md.txn_last_update_timestamp = self.clock_ms()
        return None

    def _undo_fence(self, md: TransactionMetadata) -> None:
        """The fence's PrepareAbort was not written: the transaction stays Ongoing,
        aborted again at the next check or InitProducerId.  A classic fence keeps
        the epoch it bumped (never answered), and does not bump it again (Kafka's
        hasFailedEpochFence); a TV2 fence had not bumped it."""
        md.state = TransactionState.ONGOING
        md.has_failed_epoch_fence = not self._server_tv2()

    def _prepare_end_v2(self, md: TransactionMetadata, producer_id: int, epoch: int,
                        commit: bool) -> int | None:
        """EndTxn v5 (Kafka's endTransaction for a TV_2 client): the checks, then
        PrepareCommit/PrepareAbort with the epoch bumped.  None when applied, or
        when it retries an end that completed (the state is left as it is)."""
        tv2_before = md.client_transaction_version >= 2
        retry_on_bump = tv2_before and md.producer_id == producer_id \
            and md.producer_epoch == epoch + 1
        retry_on_overflow = tv2_before and md.previous_producer_id == producer_id \
            and epoch == _SHORT_MAX - 1 and md.producer_epoch == 0
        if md.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        state, is_retry = md.state, retry_on_bump or retry_on_overflow
        if state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            valid = retry_on_bump
        elif state in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT):
            valid = is_retry or md.producer_epoch == epoch
        else:
            valid = md.producer_epoch == epoch
        if not valid:
            return ErrorCode.PRODUCER_FENCED
        done = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
        preparing = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
        if state == done and is_retry:
            return None
        if state == preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        # An abort with no transaction open: allowed in TV2, it bumps the epoch (a
        # client fencing its own earlier attempt after an error it cannot classify).
        no_partition_added = not commit and not is_retry and state in COMPLETED
        if state != TransactionState.ONGOING and not no_partition_added:
            return ErrorCode.INVALID_TXN_STATE
        next_producer_id = (self.generate_producer_id() if md.is_producer_epoch_exhausted
                            else NO_PRODUCER_ID)
        md.prepare_abort_or_commit(commit, True, next_producer_id, self.clock_ms(),
                                   no_partition_added)
        return None

    def _complete(self, md: TransactionMetadata, producer_id: int, epoch: int, commit: bool,
                  partitions: set, groups: set) -> EndTxnResult:
        """Write the markers, then CompleteCommit / CompleteAbort; answers the
        identity the producer goes on with."""
        try:
            self._markers.write(md.transactional_id, producer_id, epoch, commit,
                                partitions, groups)
        finally:
            with md.lock:
                md.complete(commit, self.clock_ms())
                self._persist(md)
                identity = (md.producer_id, md.producer_epoch)
        return EndTxnResult(ErrorCode.NONE, *identity)

    def _persist(self, md: TransactionMetadata) -> int:
        """Write ``md``'s new state to ``__transaction_state`` (under its lock)."""
        return ErrorCode.NONE if self.txn_log is None else self.txn_log.append(md)

    # -- loading __transaction_state (Kafka's loadTransactionsForTxnTopicPartition) ---------

    def load_transactions(self, partition_count: int):
        """Take the transactional ids stored in ``__transaction_state``.  A
        transaction found in PrepareCommit / PrepareAbort has its markers written
        again and completes (returned as the step to run once the internal topics'
        lock is released: it writes to them); an Ongoing one stays open, aborted
        at its timeout as any other; offsets its TxnOffsetCommits left in
        ``__consumer_offsets`` wait for its end again."""
        if self.txn_log is None:
            return None
        loaded = self.txn_log.load(partition_count)
        pending = self._group_offsets.take_loaded_pending() if self._group_offsets else {}
        for (group_id, producer_id), commits in pending.items():
            self.pending_offsets.add(group_id, producer_id, commits)
        highest, unfinished = -1, []
        for md in loaded:
            highest = max(highest, md.producer_id, md.previous_producer_id,
                          md.next_producer_id)
            md.topic_partitions = {tp for tp in md.topic_partitions
                                   if tp[0] != GROUP_METADATA_TOPIC_NAME}
            md.groups = {g for g, pid in pending if pid == md.producer_id}
            # Decided before it is published: no metadata lock is taken here.
            if md.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT) \
                    and self.state.put_if_not_exists(md) is md:
                unfinished.append((md, md.state == TransactionState.PREPARE_COMMIT,
                                   set(md.topic_partitions), set(md.groups)))
            else:
                self.state.put_if_not_exists(md)
        self.skip_producer_ids_through(highest)
        log.info("Finished loading %d transaction metadata from %s", len(loaded),
                 TRANSACTION_STATE_TOPIC_NAME)

        def complete_unfinished() -> None:
            for md, commit, partitions, groups in unfinished:
                log.info("Completing the %s of transactionalId %s found in %s at load",
                         "commit" if commit else "abort", escape(md.transactional_id),
                         "PrepareCommit" if commit else "PrepareAbort")
                self._complete(md, md.producer_id, md.producer_epoch, commit, partitions,
                               groups)
        return complete_unfinished if unfinished else None

    def _ready(self) -> None:
        """Load ``__transaction_state``, if it exists, before a transactional id is
        made: a request never holds a transaction's lock while the load runs (a
        load that starts later, at the topic's creation, takes no such lock)."""
        if self.txn_log is not None:
            self.txn_log.ready()

    @staticmethod
    def _prepare_end(md: TransactionMetadata, commit: bool) -> int | None:
        """Move to PrepareCommit/PrepareAbort, or say why not (Kafka's endTransaction)."""
        state = md.state
        if state == TransactionState.ONGOING:
            md.state = (TransactionState.PREPARE_COMMIT if commit
                        else TransactionState.PREPARE_ABORT)
            return None
        done, preparing = ((TransactionState.COMPLETE_COMMIT, TransactionState.PREPARE_COMMIT)
                           if commit else
                           (TransactionState.COMPLETE_ABORT, TransactionState.PREPARE_ABORT))
        if state == done:
            return None   # already ended the same way: a retry
        if state == preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.INVALID_TXN_STATE

    # -- TxnOffsetCommit --------------------------------------------------------------------

    def handle_txn_offset_commit(self, transactional_id: str, group_id: str, producer_id: int,
                                 epoch: int, member_id: str, generation: int,
                                 commits: list, group_instance_id: str | None = None,
                                 add_group: bool = False) -> list[int]:
        """One error code per commit; accepted offsets stay pending until EndTxn.
        ``add_group`` (TxnOffsetCommit v5, KIP-890 part 2): the group joins the
        transaction here, as AddOffsetsToTxn would have added it."""
        md = self.state.get(transactional_id)
        error = None
        if md is None:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif self._group_offsets is None:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if error is not None:
            return [error] * len(commits)
        with md.lock:   # EndTxn cannot start between the check and the pending write
            error = self._check_producer(md, producer_id, epoch)
            if error == ErrorCode.PRODUCER_FENCED:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
            if error is None and add_group:
                error = self._add_locked(md, set(), group_id, 2) or None
            if error is None and (md.state != TransactionState.ONGOING
                                  or group_id not in md.groups):
                error = ErrorCode.INVALID_TXN_STATE
            if error is not None:
                return [error] * len(commits)
            errors = self._group_offsets.check_txn_commit(group_id, member_id, generation,
                                                          commits, group_instance_id)
            accepted = [c for c, e in zip(commits, errors) if e == ErrorCode.NONE]
            # In __consumer_offsets as the producer's transactional records first.
            stored = self._group_offsets.store_txn_offsets(group_id, producer_id, epoch,
                                                           accepted)
            if stored:
                return [e or stored for e in errors]
            self.pending_offsets.add(group_id, producer_id, accepted)
            return errors

    # -- Produce: may this transactional batch be appended? --------------------------------

    def verify_transactional_batch(self, topic: str, index: int, producer_id: int,
                                   epoch: int, add_partition: bool = False
                                   ) -> tuple[int, str] | None:
        """None if the batch may be appended, else (error code, message).
        ``add_partition`` (Produce v12+, KIP-890 part 2): a partition not yet in
        the transaction joins it, as the AddPartitionsToTxn Kafka's broker sends
        the coordinator for it would (PRODUCER_FENCED answered as
        INVALID_PRODUCER_EPOCH, as Kafka's AddPartitionsToTxnManager does)."""
        md = self.state.by_producer_id(producer_id)
        if md is None:
            if add_partition:
                return (ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                        f"producer id {producer_id} belongs to no transactional id")
            return (ErrorCode.INVALID_TXN_STATE,
                    f"producer id {producer_id} belongs to no transactional id")
        with md.lock:
            if epoch != md.producer_epoch:
                return (ErrorCode.INVALID_PRODUCER_EPOCH,
                        f"producer epoch {epoch} is not the current {md.producer_epoch}")
            if add_partition:
                error = self._add_locked(md, {(topic, index)}, None, 2)
                return None if error == ErrorCode.NONE else (
                    error, f"Could not add {topic}-{index} to the transaction")
            if md.state != TransactionState.ONGOING or (topic, index) not in md.topic_partitions:
                return ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction"
        return None

    # -- ListTransactions / DescribeTransactions ------------------------------------------

    def handle_list_transactions(self, producer_ids: set[int], state_names: set[str],
                                 duration_ms: int = -1):
        """(unknown state filters, [TransactionMetadata]) for ListTransactions."""
        return self.state.list_transaction_states(producer_ids, state_names, duration_ms,
                                                  self.clock_ms())

    def describe(self, transactional_id: str) -> TransactionMetadata | None:
        md = self.state.get(transactional_id)
        return None if md is None or md.state == TransactionState.DEAD else md

    # -- timeouts: the periodic check ---------------------------------------------------

    def abort_timed_out_transactions(self) -> int:
        """Abort every Ongoing transaction past its timeout; returns how many."""
        count = 0
        for md in self.state.timed_out_transactions(self.clock_ms()):
            with md.lock:
                if md.state != TransactionState.ONGOING:
                    continue   # it ended meanwhile
                md.prepare_fence_producer_epoch(self.clock_ms(), bump=not self._server_tv2())
                fenced = (md.producer_id, md.producer_epoch)
            if self._end_transaction(md, *fenced, commit=False,
                                     from_client=False).error_code == ErrorCode.NONE:
                count += 1
                log.info("Completed rollback of ongoing transaction for transactionalId %s "
                         "due to timeout", escape(md.transactional_id))
        return count

    def startup(self) -> None:
        self._task.startup()

    def shutdown(self) -> None:
        self._task.shutdown()

    def _run(self, stop: threading.Event) -> None:
        interval = self.config.abort_timed_out_cleanup_interval_ms / 1000
        next_expiry = self.clock_ms() + self.config.remove_expired_cleanup_interval_ms
        while not stop.wait(interval):
            try:
                self.abort_timed_out_transactions()
                if self.clock_ms() >= next_expiry:
                    next_expiry = self.clock_ms() + self.config.remove_expired_cleanup_interval_ms
                    for txn_id in self.state.remove_expired_transactional_ids(self.clock_ms()):
                        if self.txn_log is not None:
                            self.txn_log.remove(txn_id)
                        log.info("Removed expired transactionalId %s", escape(txn_id))
            except Exception:   # the check must go on
                log.exception("Error in the transaction coordinator's periodic check")
