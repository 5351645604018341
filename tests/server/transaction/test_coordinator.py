"""TransactionCoordinator beyond single requests: timeouts, fencing of a zombie
at the partitions, id expiry, the periodic check's thread."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid

from kafka_net.config import ServerConfig
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.transaction import TransactionConfig, TransactionCoordinator
from kafka_net.server.replica_manager import ReplicaManager
from tests.server.conftest import Broker
from tests.server.txn_support import (
    TIMEOUT_MS, batches, begin, end_txn, fetch_partition, init, produce_txn, txn_batch)
from tests.support import wait_until


def clocked(broker, start: int = 1_000_000) -> list[int]:
    now = [start]
    broker.transaction_coordinator.clock_ms = lambda: now[0]
    return now


def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced(broker):
    broker.create_topic("t")
    now = clocked(broker)
    pid, epoch = begin(broker)
    produce_txn(broker, pid, epoch, 0, b"late")
    coordinator = broker.transaction_coordinator
    now[0] += TIMEOUT_MS          # not past the timeout yet
    assert coordinator.abort_timed_out_transactions() == 0
    now[0] += 1
    assert coordinator.abort_timed_out_transactions() == 1
    md = coordinator.describe("tx")
    assert (md.state.value, md.producer_epoch) == ("CompleteAbort", epoch + 1)
    p = fetch_partition(broker, isolation_level=1)
    assert batches(p["records"]) == [(0, False, [b"late"]), (1, True, ["ABORT"])]
    assert [a["first_offset"] for a in p["aborted_transactions"]] == [0]
    # The producer learns it was fenced at its next request.
    assert end_txn(broker, "tx", pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    assert produce_txn(broker, pid, epoch, 1, b"zombie")["error_code"] == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    # The restarted producer gets the epoch after the fencing one.
    assert init(broker) == (pid, epoch + 2)


def test_the_marker_of_a_fenced_epoch_fences_the_partition():
    """The ABORT marker carries the bumped epoch, so the partition refuses the
    old epoch even without asking the coordinator."""
    rm = ReplicaManager()
    coordinator = TransactionCoordinator(TransactionConfig(), rm)
    rm.transaction_verifier = None   # the partition's own producer state decides
    rm.ensure_partitions("t", uuid.uuid4(), 1)
    result = coordinator.handle_init_producer_id("tx", 1000)
    pid, epoch = result.producer_id, result.producer_epoch
    assert coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {("t", 0)}) == 0
    assert rm.append_records("t", 0, txn_batch(pid, epoch, 0, b"a"), 9).error_code == 0
    assert coordinator.handle_init_producer_id("tx", 1000).error_code == \
        ErrorCode.CONCURRENT_TRANSACTIONS
    refused = rm.append_records("t", 0, txn_batch(pid, epoch, 1, b"zombie"), 9)
    assert refused.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_idle_transactional_ids_expire():
    broker = Broker(dataclasses.replace(ServerConfig(log_store="memory"),
                                        transactional_id_expiration_ms=1000))
    now = clocked(broker)
    init(broker, "idle")
    broker.create_topic("t")
    begin(broker, "busy")
    state = broker.transaction_coordinator.state
    now[0] += 1000
    assert state.remove_expired_transactional_ids(now[0]) == ["idle"]   # busy is Ongoing
    assert state.get("idle") is None and state.get("busy") is not None


def test_the_periodic_check_aborts_without_being_asked():
    config = dataclasses.replace(
        ServerConfig(log_store="memory"),
        transaction_abort_timed_out_transaction_cleanup_interval_ms=20)
    broker = Broker(config).start()
    try:
        broker.create_topic("t")
        now = clocked(broker)
        begin(broker)
        now[0] += TIMEOUT_MS + 1
        md = broker.transaction_coordinator.describe("tx")
        assert wait_until(lambda: md.state.value == "CompleteAbort", 10)
    finally:
        broker.stop()


def test_no_batch_slips_in_after_the_marker_while_end_txn_races_produce(broker):
    """A producer thread keeps appending while EndTxn writes its marker: every
    batch lands before the marker or is refused, so no transaction is left
    open behind it (the LSO reaches the high watermark)."""
    broker.create_topic("t")
    pid, epoch = begin(broker)
    rm = broker.replica_manager
    stop = threading.Event()
    results = []

    def keep_producing():
        seq = 0
        while not stop.is_set():
            error = rm.append_records("t", 0, txn_batch(pid, epoch, seq, b"x"), 9).error_code
            results.append(error)
            if error:
                return
            seq += 1
            time.sleep(0.0001)   # let the EndTxn thread have the GIL too

    thread = threading.Thread(target=keep_producing)
    thread.start()
    assert wait_until(lambda: len(results) >= 20, 10)
    assert end_txn(broker, "tx", pid, epoch, True) == ErrorCode.NONE
    thread.join(10)   # it stops at its first refused batch
    stop.set()
    thread.join(10)
    assert results[-1] == ErrorCode.INVALID_TXN_STATE
    partition = rm.partition("t", 0)
    assert rm.last_stable_offset("t", 0) == partition.log.log_end_offset
    assert batches(fetch_partition(broker)["records"])[-1][1:] == (True, ["COMMIT"])
