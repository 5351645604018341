"""AddPartitionsToTxn (API key 24) through KafkaApis with real encoding."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import versions
from tests.server.txn_support import add_partitions, init

CLASSIC = [v for v in versions(ApiKey.ADD_PARTITIONS_TO_TXN) if v <= 3]
BATCHED = [v for v in versions(ApiKey.ADD_PARTITIONS_TO_TXN) if v >= 4]


@pytest.fixture
def txn(broker):
    broker.create_topic("t", 2)
    pid, epoch = init(broker)
    return broker, pid, epoch


@pytest.mark.parametrize("version", CLASSIC)
def test_partitions_join_the_transaction(txn, version):
    broker, pid, epoch = txn
    assert add_partitions(broker, "tx", pid, epoch, [("t", 0), ("t", 1)], version) == {
        ("t", 0): 0, ("t", 1): 0}
    md = broker.transaction_coordinator.describe("tx")
    assert md.state.value == "Ongoing" and md.topic_partitions == {("t", 0), ("t", 1)}
    # Adding them again changes nothing and is no error.
    assert add_partitions(broker, "tx", pid, epoch, [("t", 1)], version) == {("t", 1): 0}


@pytest.mark.parametrize("version", CLASSIC)
def test_an_unknown_partition_fails_the_request_and_adds_nothing(txn, version):
    broker, pid, epoch = txn
    assert add_partitions(broker, "tx", pid, epoch, [("t", 0), ("t", 5), ("nope", 0)],
                          version) == {
        ("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.transaction_coordinator.describe("tx").state.value == "Empty"


@pytest.mark.parametrize("version", CLASSIC)
def test_producer_errors(txn, version):
    broker, pid, epoch = txn
    assert add_partitions(broker, "ghost", pid, epoch, [("t", 0)], version) == {
        ("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert add_partitions(broker, "tx", pid + 1, epoch, [("t", 0)], version) == {
        ("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    fenced = ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH
    init(broker)   # a new instance bumps the epoch
    assert add_partitions(broker, "tx", pid, epoch, [("t", 0)], version) == {("t", 0): fenced}


@pytest.mark.parametrize("version", CLASSIC)
def test_concurrent_transactions_while_the_transaction_completes(txn, version):
    broker, pid, epoch = txn
    add_partitions(broker, "tx", pid, epoch, [("t", 0)], version)
    md = broker.transaction_coordinator.state.get("tx")
    md.state = md.state.PREPARE_ABORT
    assert add_partitions(broker, "tx", pid, epoch, [("t", 1)], version) == {
        ("t", 1): ErrorCode.CONCURRENT_TRANSACTIONS}


@pytest.mark.parametrize("version", BATCHED)
def test_batched_form_answers_each_transaction(txn, version):
    broker, pid, epoch = txn
    other_pid, other_epoch = init(broker, "tx-2")
    body = broker.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, transactions=[
        {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch,
         "verify_only": False, "topics": [{"name": "t", "partitions": [0]}]},
        {"transactional_id": "tx-2", "producer_id": other_pid, "producer_epoch": other_epoch + 1,
         "verify_only": False, "topics": [{"name": "t", "partitions": [1]}]}])
    assert body["error_code"] == ErrorCode.NONE
    assert [(r["transactional_id"], [(t["name"], [(p["partition_index"], p["partition_error_code"])
                                                  for p in t["results_by_partition"]])
                                     for t in r["topic_results"]])
            for r in body["results_by_transaction"]] == [
        ("tx", [("t", [(0, 0)])]), ("tx-2", [("t", [(1, ErrorCode.PRODUCER_FENCED)])])]


@pytest.mark.parametrize("version", BATCHED)
def test_verify_only_checks_without_adding(txn, version):
    broker, pid, epoch = txn
    add_partitions(broker, "tx", pid, epoch, [("t", 0)])
    body = broker.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, transactions=[
        {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch,
         "verify_only": True, "topics": [{"name": "t", "partitions": [0, 1]}]}])
    [result] = body["results_by_transaction"]
    assert [(p["partition_index"], p["partition_error_code"])
            for p in result["topic_results"][0]["results_by_partition"]] == [
        (0, ErrorCode.NONE), (1, ErrorCode.INVALID_TXN_STATE)]
    assert broker.transaction_coordinator.describe("tx").topic_partitions == {("t", 0)}
