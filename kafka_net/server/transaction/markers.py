"""Writing a transaction's outcome: control batches and group offsets.

Kafka's ``TransactionMarkerChannelManager`` sends WriteTxnMarkers to the
leader of every partition in the transaction; the leader appends a *control
batch* holding one control record, and the group coordinator (for the
``__consumer_offsets`` partition added by AddOffsetsToTxn) makes the pending
offsets visible or drops them.  On one node these are local calls, made in
order before EndTxn is answered.

A control batch (``DefaultRecordBatch`` with the transactional and control
attribute bits, the producer's id and epoch, no sequence) holds one record:

* key: version int16 (0), type int16 (0 ABORT, 1 COMMIT)  (``ControlRecordType``)
* value: version int16 (0), coordinator epoch int32       (``EndTransactionMarker``)

Consumers skip control batches; a read_committed one uses them, with the
aborted transaction list, to drop aborted records.
"""

from __future__ import annotations

import logging

from kafka_net.log_safety import escape
from kafka_net.protocol.records import build_batch
from kafka_net.protocol.records.control import (
    ABORT, COMMIT, control_key, end_txn_marker_value)
from kafka_net.server.internal_topics import GROUP_METADATA_TOPIC_NAME
from kafka_net.server.transaction.txn_offsets import PendingTxnOffsets

log = logging.getLogger(__name__)

COORDINATOR_EPOCH = 0          # one coordinator that never moves


def build_marker_batch(producer_id: int, producer_epoch: int, commit: bool,
                       timestamp_ms: int, coordinator_epoch: int = COORDINATOR_EPOCH
                       ) -> bytearray:
    key = control_key(COMMIT if commit else ABORT)
    value = end_txn_marker_value(coordinator_epoch)
    return bytearray(build_batch(
        [(key, value, (), timestamp_ms)], producer_id=producer_id,
        producer_epoch=producer_epoch, transactional=True, control=True))


class TransactionMarkerWriter:
    def __init__(self, replica_manager, group_offsets, pending: PendingTxnOffsets,
                 clock_ms) -> None:
        self._replica_manager = replica_manager
        self._group_offsets = group_offsets   # OffsetManager, or None without groups
        self._pending = pending
        self._clock_ms = clock_ms

    def write(self, transactional_id: str, producer_id: int, producer_epoch: int,
              commit: bool, partitions: set, groups: set) -> None:
        store = None if self._group_offsets is None else self._group_offsets.store
        if store is not None:
            # The groups' __consumer_offsets partitions hold their transactional offsets.
            partitions = partitions | {(GROUP_METADATA_TOPIC_NAME, store.partition_for(g))
                                       for g in groups}
        for topic, index in sorted(partitions):
            batch = build_marker_batch(producer_id, producer_epoch, commit, self._clock_ms())
            error = self._replica_manager.append_txn_marker(
                topic, index, batch, producer_id, producer_epoch, commit)
            if error:
                # The topic was deleted meanwhile: Kafka drops such markers too.
                log.info("Dropped the %s marker of transactional id %s for %s-%d: error %d",
                         "COMMIT" if commit else "ABORT", escape(transactional_id), topic, index,
                         error)
        for group_id in sorted(groups):
            offsets = self._pending.take(group_id, producer_id)
            if commit and offsets and self._group_offsets is not None:
                self._group_offsets.complete_txn_commit(group_id, offsets)
