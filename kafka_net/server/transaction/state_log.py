"""TransactionLog: transactional ids' state kept in ``__transaction_state``.

Kafka's ``TransactionStateManager.appendTransactionToLog`` and
``loadTransactionsForTxnTopicPartition``.  A transactional id lives in
partition ``Utils.abs(transactionalId.hashCode()) %
transaction.state.log.num.partitions``; each transition the coordinator makes
is one record TransactionLogKey(transactionalId) -> TransactionLogValue
(producerId, producerEpoch, transactionTimeoutMs, transactionStatus,
transactionPartitions, transactionLastUpdateTimestampMs,
transactionStartTimestampMs), its version chosen as Kafka 4.2's
``TransactionVersion.transactionLogValueVersion`` chooses it: 1 (flexible,
with the tagged PreviousProducerId, NextProducerId and ClientTransactionVersion,
each written only when not its default) whenever the finalized
``transaction.version`` is 1 or more, 0 at level 0, whatever transaction
version the client itself uses (:mod:`kafka_net.protocol.coordinator_records`).
A record at v0 loses the tagged fields: an EndTxn v5 retry of a transaction
written so is not recognised after a restart, as in Kafka.  A log holding both
versions (the level changed by UpdateFeatures) loads: each record is read at its
own version.  The
transitions written are Kafka's: Empty (InitProducerId's epoch bump or new
producer id), Ongoing (AddPartitionsToTxn / AddOffsetsToTxn, with the
partitions), PrepareCommit / PrepareAbort (EndTxn, a timeout, a fencing
InitProducerId), CompleteCommit / CompleteAbort (after the markers); an
expired transactional id gets a tombstone.  A group of AddOffsetsToTxn is
written as its ``__consumer_offsets`` partition, as Kafka's coordinator adds
that partition to the transaction.

Loading reads every partition from its start, the last record per id wins;
what the coordinator does with a transaction found mid-way (Prepare*:
markers written again; Ongoing: aborted at its timeout) is in
:mod:`.coordinator`.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.coordinator_records import (
    RecordFormatError, decode_transaction_record, partition_for, transaction_log_key,
    transaction_log_value)
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    CONTROL_MASK, RecordError, build_key_value_batch, decode_records)
from kafka_net.server.features import DEFAULT_FINALIZED, TRANSACTION_VERSION
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME)
from kafka_net.server.partition_limits import TopicCreationError
from kafka_net.server.transaction.metadata import TransactionMetadata, TransactionState

log = logging.getLogger(__name__)
_bad_records = RateLimitedLog(log)

T = TransactionState
# Kafka's TransactionState ids, the transactionStatus byte.
STATE_IDS = {T.EMPTY: 0, T.ONGOING: 1, T.PREPARE_COMMIT: 2, T.PREPARE_ABORT: 3,
             T.COMPLETE_COMMIT: 4, T.COMPLETE_ABORT: 5, T.DEAD: 6, T.PREPARE_EPOCH_FENCE: 7}
STATES = {v: k for k, v in STATE_IDS.items()}


class TransactionLog:
    def __init__(self, replica_manager, internal_topics,
                 group_partition: Callable[[str], int] | None = None,
                 transaction_version_level: Callable[[], int] | None = None) -> None:
        """``group_partition(group_id)``: the group's ``__consumer_offsets`` partition;
        ``transaction_version_level()``: the finalized ``transaction.version``
        (None: the level a new Kafka 4.2 cluster finalizes)."""
        self._replica_manager = replica_manager
        self._transaction_version_level = transaction_version_level or (
            lambda: DEFAULT_FINALIZED[TRANSACTION_VERSION])
        self._internal_topics = internal_topics
        self._group_partition = group_partition
        self._partitions = internal_topics.partition_count(TRANSACTION_STATE_TOPIC_NAME)

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self._partitions)

    def ready(self) -> None:
        """Make sure ``__transaction_state`` is loaded if it exists; the first
        write creates it."""
        if not self._internal_topics.is_ready(TRANSACTION_STATE_TOPIC_NAME):
            self._internal_topics.load_if_exists(TRANSACTION_STATE_TOPIC_NAME)
            self._partitions = self._internal_topics.partition_count(
                TRANSACTION_STATE_TOPIC_NAME)

    def append(self, md: TransactionMetadata) -> int:
        """Write ``md`` as it is now (the caller holds its lock); an error code."""
        return self._append(md.transactional_id,
                            transaction_log_value(self._value(md), self.value_version()))

    def value_version(self) -> int:
        """TransactionLogValue's version to write now (Kafka's
        ``transactionLogValueVersion``: flexible from transaction.version 1)."""
        return 1 if self._transaction_version_level() >= 1 else 0

    def remove(self, transactional_id: str) -> int:
        return self._append(transactional_id, None)

    def _append(self, transactional_id: str, value: bytes | None) -> int:
        try:
            self._partitions = self._internal_topics.ensure(TRANSACTION_STATE_TOPIC_NAME)
        except TopicCreationError as exc:
            log.warning("Cannot store transactional id %s: %s", escape(transactional_id),
                        exc.message)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        now = int(time.time() * 1000)
        batch = build_key_value_batch([(transaction_log_key(transactional_id), value)], now)
        result = self._replica_manager.append_coordinator_records(
            TRANSACTION_STATE_TOPIC_NAME, self.partition_for(transactional_id), batch, 1, now)
        if result.error_code:
            log.error("Appending transaction metadata of %s to %s failed with error %d",
                      escape(transactional_id), TRANSACTION_STATE_TOPIC_NAME,
                      result.error_code)
            # Kafka's TransactionStateManager maps append errors so.
            return (ErrorCode.COORDINATOR_NOT_AVAILABLE
                    if result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    else ErrorCode.NOT_COORDINATOR)
        return ErrorCode.NONE

    def _value(self, md: TransactionMetadata) -> dict:
        partitions: dict[str, list[int]] = {}
        for topic, index in sorted(md.topic_partitions):
            partitions.setdefault(topic, []).append(index)
        if self._group_partition is not None:
            offsets = partitions.setdefault(GROUP_METADATA_TOPIC_NAME, [])
            offsets.extend(sorted({self._group_partition(g) for g in md.groups} - set(offsets)))
            if not offsets:
                del partitions[GROUP_METADATA_TOPIC_NAME]
        return {
            "producer_id": md.producer_id, "producer_epoch": md.producer_epoch,
            "previous_producer_id": md.previous_producer_id,
            "next_producer_id": md.next_producer_id,
            "client_transaction_version": md.client_transaction_version,
            "transaction_timeout_ms": md.txn_timeout_ms,
            "transaction_status": STATE_IDS[md.state],
            "transaction_partitions": None if md.state == T.EMPTY else [
                {"topic": t, "partition_ids": ids} for t, ids in partitions.items()],
            "transaction_last_update_timestamp_ms": md.txn_last_update_timestamp,
            "transaction_start_timestamp_ms": md.txn_start_timestamp}

    # -- loading --------------------------------------------------------------------------

    def load(self, partition_count: int) -> list[TransactionMetadata]:
        self._partitions = partition_count
        values: dict[str, dict | None] = {}
        for index in range(partition_count):
            for header, batch in self._replica_manager.read_batches(
                    TRANSACTION_STATE_TOPIC_NAME, index):
                if header.attributes & CONTROL_MASK:
                    continue
                try:
                    for record in decode_records(batch):
                        txn_id, value = decode_transaction_record(record.key, record.value)
                        values[txn_id] = value
                except (RecordError, RecordFormatError) as exc:
                    _bad_records.log(logging.ERROR, "record", "Skipping a batch at offset %d "
                                     "of %s-%d: %s", header.base_offset,
                                     TRANSACTION_STATE_TOPIC_NAME, index, escape(str(exc)))
        return [_metadata(txn_id, v) for txn_id, v in sorted(values.items())
                if v is not None and v["transaction_status"] in STATES]


def _metadata(transactional_id: str, v: dict) -> TransactionMetadata:
    partitions = {(p["topic"], i) for p in v["transaction_partitions"] or ()
                  for i in p["partition_ids"]}
    return TransactionMetadata(
        transactional_id, v["producer_id"], v["transaction_timeout_ms"],
        producer_epoch=v["producer_epoch"], previous_producer_id=v["previous_producer_id"],
        state=STATES[v["transaction_status"]], topic_partitions=partitions,
        txn_start_timestamp=v["transaction_start_timestamp_ms"],
        txn_last_update_timestamp=v["transaction_last_update_timestamp_ms"],
        client_transaction_version=v["client_transaction_version"],
        next_producer_id=v["next_producer_id"])
