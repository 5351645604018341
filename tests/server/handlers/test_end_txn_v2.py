"""EndTxn v5, Produce v12 and TxnOffsetCommit v5 through KafkaApis: transaction
version 2 (KIP-890 part 2) at its edges (an exhausted epoch, a commit being
completed, a failed write, the state log) that a client cannot easily reach."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import iter_batches, read_header
from kafka_net.server.transaction.metadata import TransactionState
from tests.server.conftest import produce
from tests.server.txn_support import fetch_partition, init, txn_batch

SHORT_MAX = 2**15 - 1


def end(broker, pid: int, epoch: int, commit: bool, txn_id: str = "tx") -> tuple:
    body = broker.call(ApiKey.END_TXN, 5, transactional_id=txn_id, producer_id=pid,
                       producer_epoch=epoch, committed=commit)
    return body["error_code"], body["producer_id"], body["producer_epoch"]


def produce_v12(broker, pid: int, epoch: int, seq: int, value: bytes = b"v") -> int:
    body = produce(broker, 12, records=txn_batch(pid, epoch, seq, value))
    return body["responses"][0]["partition_responses"][0]["error_code"]


@pytest.fixture
def tv2(broker):
    broker.create_topic("t")
    pid, epoch = init(broker)
    return broker, pid, epoch


def test_an_exhausted_epoch_moves_to_a_new_producer_id(tv2):
    broker, pid, _ = tv2
    md = broker.transaction_coordinator.state.get("tx")
    md.producer_epoch = SHORT_MAX - 1   # as if 32766 transactions had ended
    assert produce_v12(broker, pid, SHORT_MAX - 1, 0) == ErrorCode.NONE
    error, new_pid, new_epoch = end(broker, pid, SHORT_MAX - 1, True)
    assert (error, new_epoch) == (ErrorCode.NONE, 0) and new_pid != pid
    marker = read_header(list(iter_batches(fetch_partition(broker)["records"]))[-1])
    assert (marker.is_control, marker.producer_id, marker.producer_epoch) == \
        (True, pid, SHORT_MAX)
    # The retry of that EndTxn names the old id at the old epoch.
    assert end(broker, pid, SHORT_MAX - 1, True) == (ErrorCode.NONE, new_pid, 0)
    assert produce_v12(broker, new_pid, 0, 0) == ErrorCode.NONE
    assert end(broker, new_pid, 0, False) == (ErrorCode.NONE, new_pid, 1)
    assert produce_v12(broker, pid, SHORT_MAX, 1) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_produce_v12_while_a_commit_is_completed_is_concurrent_transactions(tv2):
    broker, pid, epoch = tv2
    md = broker.transaction_coordinator.state.get("tx")
    md.state = TransactionState.PREPARE_COMMIT   # another EndTxn is writing its markers
    assert produce_v12(broker, pid, epoch, 0) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert end(broker, pid, epoch, True)[0] == ErrorCode.PRODUCER_FENCED   # not a retry
    assert end(broker, pid, epoch - 1, True)[0] == ErrorCode.PRODUCER_FENCED
    # As an EndTxn v5 leaves it: the epoch bumped, the client known to be TV2; the
    # same request is now the retry of the commit being completed.
    md.producer_epoch, md.client_transaction_version = epoch + 1, 2
    assert end(broker, pid, epoch, True)[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    assert end(broker, pid, epoch, False)[0] == ErrorCode.INVALID_TXN_STATE


def test_produce_v11_does_not_add_and_v12_does(tv2):
    broker, pid, epoch = tv2
    assert produce(broker, 11, records=txn_batch(pid, epoch, 0, b"a"))["responses"][0][
        "partition_responses"][0]["error_code"] == ErrorCode.INVALID_TXN_STATE
    assert produce_v12(broker, pid, epoch, 0) == ErrorCode.NONE
    md = broker.transaction_coordinator.describe("tx")
    assert (md.state, md.topic_partitions) == (TransactionState.ONGOING, {("t", 0)})
    assert md.client_transaction_version == 2


def test_a_failed_state_write_leaves_the_transaction_as_it_was(tv2):
    broker, pid, epoch = tv2
    assert produce_v12(broker, pid, epoch, 0) == ErrorCode.NONE
    coordinator = broker.transaction_coordinator
    md = coordinator.state.get("tx")
    coordinator._persist = lambda md: ErrorCode.NOT_COORDINATOR   # __transaction_state fails
    assert end(broker, pid, epoch, True) == (ErrorCode.NOT_COORDINATOR, -1, -1)
    assert (md.state, md.producer_epoch, md.topic_partitions) == \
        (TransactionState.ONGOING, epoch, {("t", 0)})
    broker.create_topic("u")
    body = produce(broker, 12, topic="u", records=txn_batch(pid, epoch, 0, b"x"))
    assert body["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.NOT_COORDINATOR
    assert md.topic_partitions == {("t", 0)}   # u was not added


def test_txn_offset_commit_v5_adds_the_group_and_the_commit_marks_its_partition(tv2):
    broker, pid, epoch = tv2
    body = broker.call(ApiKey.TXN_OFFSET_COMMIT, 5, transactional_id="tx", group_id="cg",
                       producer_id=pid, producer_epoch=epoch, topics=[
                           {"name": "t", "partitions": [
                               {"partition_index": 0, "committed_offset": 3,
                                "committed_metadata": "m"}]}])
    assert body["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    md = broker.transaction_coordinator.describe("tx")
    assert (md.state, md.groups) == (TransactionState.ONGOING, {"cg"})
    assert end(broker, pid, epoch, True) == (ErrorCode.NONE, pid, epoch + 1)
    fetched = broker.call(ApiKey.OFFSET_FETCH, 7, group_id="cg", topics=[
        {"name": "t", "partition_indexes": [0]}])
    assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 3


# -- the coordinator aborting a transaction itself (Kafka 4.2, after KAFKA-19367) ----------

def last_marker(broker):
    header = read_header(list(iter_batches(fetch_partition(broker)["records"]))[-1])
    assert header.is_control
    return header.producer_id, header.producer_epoch


def init_producer_id(broker, txn_id: str = "tx") -> tuple[int, int, int]:
    body = broker.call(ApiKey.INIT_PRODUCER_ID, 5, transactional_id=txn_id,
                       transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
    return body["error_code"], body["producer_id"], body["producer_epoch"]


def time_out(broker) -> int:
    coordinator = broker.transaction_coordinator
    md = coordinator.state.get("tx")
    coordinator.clock_ms = lambda: md.txn_start_timestamp + md.txn_timeout_ms + 1
    return coordinator.abort_timed_out_transactions()


def test_a_timed_out_tv2_transaction_is_aborted_with_one_epoch_bump(tv2):
    """transaction.version 2: the abort bumps the epoch once (the fence does not
    add a second bump), remembers the fenced epoch as the last one, and the
    fenced producer's EndTxn v5 abort is answered as a retry of that abort."""
    broker, pid, epoch = tv2
    assert produce_v12(broker, pid, epoch, 0) == ErrorCode.NONE
    assert time_out(broker) == 1
    md = broker.transaction_coordinator.state.get("tx")
    assert (md.state, md.producer_epoch, md.last_producer_epoch,
            md.client_transaction_version) == \
        (TransactionState.COMPLETE_ABORT, epoch + 1, epoch, 2)
    assert last_marker(broker) == (pid, epoch + 1)
    assert produce_v12(broker, pid, epoch, 1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(broker, pid, epoch, True)[0] == ErrorCode.INVALID_TXN_STATE
    assert end(broker, pid, epoch, False) == (ErrorCode.NONE, pid, epoch + 1)
    # The producer goes on at the epoch the abort gave it.
    assert produce_v12(broker, pid, epoch + 1, 0) == ErrorCode.NONE
    assert end(broker, pid, epoch + 1, True) == (ErrorCode.NONE, pid, epoch + 2)


def test_a_timed_out_transaction_at_transaction_version_1_is_a_classic_fence(tv2):
    """Below transaction.version 2 Kafka aborts with the classic path, whatever
    the client used: the fence bumps the epoch once, the last epoch is unknown."""
    broker, pid, epoch = tv2
    broker.apis.features.set_levels({"transaction.version": 1})
    assert produce_v12(broker, pid, epoch, 0) == ErrorCode.NONE
    assert time_out(broker) == 1
    md = broker.transaction_coordinator.state.get("tx")
    assert (md.state, md.producer_epoch, md.last_producer_epoch) == \
        (TransactionState.COMPLETE_ABORT, epoch + 1, -1)
    assert last_marker(broker) == (pid, epoch + 1)


def test_init_producer_id_fencing_an_ongoing_tv2_transaction_bumps_once_then_once_more(tv2):
    """KAFKA-19367: the fencing abort bumps the epoch once (its markers carry it,
    CONCURRENT_TRANSACTIONS answered), the client's retry bumps it again."""
    broker, pid, epoch = tv2
    assert produce_v12(broker, pid, epoch, 0) == ErrorCode.NONE
    assert init_producer_id(broker) == (ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)
    md = broker.transaction_coordinator.state.get("tx")
    assert (md.state, md.producer_epoch) == (TransactionState.COMPLETE_ABORT, epoch + 1)
    assert last_marker(broker) == (pid, epoch + 1)
    assert init_producer_id(broker) == (ErrorCode.NONE, pid, epoch + 2)
    assert end(broker, pid, epoch, False)[0] == ErrorCode.PRODUCER_FENCED


@pytest.mark.parametrize("level, epoch_after_failures", [(2, 0), (1, 1)])
def test_a_fence_whose_write_fails_leaves_the_transaction_ongoing(tv2, level,
                                                                  epoch_after_failures):
    """At level 2 the epoch is not bumped until the abort is written (Kafka drops
    hasFailedEpochFence there); a classic fence keeps its one bump however often
    its write fails (hasFailedEpochFence)."""
    broker, pid, epoch = tv2
    broker.apis.features.set_levels({"transaction.version": level})
    assert produce_v12(broker, pid, epoch, 0) == ErrorCode.NONE
    coordinator = broker.transaction_coordinator
    md = coordinator.state.get("tx")
    persist = coordinator._persist
    coordinator._persist = lambda md: ErrorCode.NOT_COORDINATOR
    for _ in range(2):
        assert time_out(broker) == 0
        assert (md.state, md.producer_epoch) == \
            (TransactionState.ONGOING, epoch + epoch_after_failures)
    coordinator._persist = persist
    assert time_out(broker) == 1
    assert (md.state, md.producer_epoch) == (TransactionState.COMPLETE_ABORT, epoch + 1)
    assert last_marker(broker) == (pid, epoch + 1)
