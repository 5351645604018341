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

A transaction open longer than its timeout is aborted by a periodic check
(every ``transaction.abort.timed.out.transaction.cleanup.interval.ms``), its
producer fenced by an epoch bump.  Producer ids come from here for
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
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME)
from kafka_net.server.scheduler import BackgroundTask
from kafka_net.server.transaction.markers import TransactionMarkerWriter
from kafka_net.server.transaction.metadata import (
    NO_PRODUCER_EPOCH, PREPARING, TransactionMetadata, TransactionState)
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


@dataclass(frozen=True)
class InitProducerIdResult:
    error_code: int
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(self, config: TransactionConfig, replica_manager, group_offsets=None,
                 txn_log=None) -> None:
        """``group_offsets``: the GroupCoordinator's OffsetManager (None: no groups);
        ``txn_log``: a :class:`~.state_log.TransactionLog` writing each transition to
        ``__transaction_state`` (None: in memory only)."""
        self.config = config
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
        # An open transaction: abort it with the fenced epoch, then let the client retry.
        error = self._end_transaction(md, *fenced, commit=False, from_client=False)
        return InitProducerIdResult(error or ErrorCode.CONCURRENT_TRANSACTIONS)

    def _prepare_init_producer_id(self, md: TransactionMetadata, timeout_ms: int,
                                  expected: tuple[int, int] | None) -> int | None:
        if expected is not None and not self._is_valid_producer_id(md, *expected):
            return ErrorCode.PRODUCER_FENCED
        if md.state in PREPARING:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        now = self.clock_ms()
        if md.state == TransactionState.ONGOING:
            md.prepare_fence_producer_epoch(now)
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
                                             epoch: int, partitions: set) -> int:
        return self._add_to_transaction(transactional_id, producer_id, epoch, partitions, None)

    def handle_add_offsets_to_transaction(self, transactional_id: str, producer_id: int,
                                          epoch: int, group_id: str) -> int:
        return self._add_to_transaction(transactional_id, producer_id, epoch, set(), group_id)

    def _add_to_transaction(self, transactional_id: str, producer_id: int, epoch: int,
                            partitions: set, group_id: str | None) -> int:
        md = self.state.get(transactional_id)
        if md is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        with md.lock:
            error = self._check_producer(md, producer_id, epoch)
            if error is not None:
                return error
            if md.state in PREPARING:
                return ErrorCode.CONCURRENT_TRANSACTIONS
            if md.state == TransactionState.ONGOING and partitions <= md.topic_partitions \
                    and (group_id is None or group_id in md.groups):
                return ErrorCode.NONE   # nothing new: no transition (Kafka's fast path)
            md.add_partitions(partitions, self.clock_ms())
            if group_id is not None:
                md.groups.add(group_id)
            return self._persist(md)

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
                               commit: bool) -> int:
        md = self.state.get(transactional_id)
        if md is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        return self._end_transaction(md, producer_id, epoch, commit, from_client=True)

    def _end_transaction(self, md: TransactionMetadata, producer_id: int, epoch: int,
                         commit: bool, from_client: bool) -> int:
        with md.lock:
            error = self._check_producer(md, producer_id, epoch)
            if error is not None:
                return error
            before = md.state
            error = self._prepare_end(md, commit, from_client)
            if error is not None:
                return error
            if md.state not in PREPARING:
                return ErrorCode.NONE   # a retry of an EndTxn that completed
            error = self._persist(md)
            if error:
                md.state = before   # not written: the transaction did not move
                return error
            partitions, groups = set(md.topic_partitions), set(md.groups)
        self._complete(md, producer_id, epoch, commit, partitions, groups)
        log.debug("Completed %s of transaction for transactionalId %s with producerId %d "
                  "and producer epoch %d (%d partition(s), %d group(s))",
                  "commit" if commit else "rollback", escape(md.transactional_id),
                  producer_id, epoch, len(partitions), len(groups))
        return ErrorCode.NONE

    def _complete(self, md: TransactionMetadata, producer_id: int, epoch: int, commit: bool,
                  partitions: set, groups: set) -> None:
        """Write the markers, then CompleteCommit / CompleteAbort."""
        try:
            self._markers.write(md.transactional_id, producer_id, epoch, commit,
                                partitions, groups)
        finally:
            with md.lock:
                md.complete(commit, self.clock_ms())
                self._persist(md)

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
            highest = max(highest, md.producer_id, md.previous_producer_id)
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
    def _prepare_end(md: TransactionMetadata, commit: bool, from_client: bool) -> int | None:
        """Move to PrepareCommit/PrepareAbort, or say why not (Kafka's endTransaction)."""
        state = md.state
        if state == TransactionState.ONGOING or (
                state == TransactionState.PREPARE_EPOCH_FENCE and not from_client):
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
                                 commits: list, group_instance_id: str | None = None
                                 ) -> list[int]:
        """One error code per commit; accepted offsets stay pending until EndTxn."""
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
                                   epoch: int) -> tuple[int, str] | None:
        md = self.state.by_producer_id(producer_id)
        if md is None:
            return (ErrorCode.INVALID_TXN_STATE,
                    f"producer id {producer_id} belongs to no transactional id")
        with md.lock:
            if epoch != md.producer_epoch:
                return (ErrorCode.INVALID_PRODUCER_EPOCH,
                        f"producer epoch {epoch} is not the current {md.producer_epoch}")
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
                md.prepare_fence_producer_epoch(self.clock_ms())
                fenced = (md.producer_id, md.producer_epoch)
            if self._end_transaction(md, *fenced, commit=False, from_client=False) \
                    == ErrorCode.NONE:
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
