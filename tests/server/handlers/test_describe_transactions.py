"""DescribeTransactions (API key 65): one transactional id's state."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.txn_support import TIMEOUT_MS, begin


def test_describe_an_open_transaction_and_unknown_ids(broker):
    broker.create_topic("t", 2)
    broker.create_topic("u")
    broker.transaction_coordinator.clock_ms = lambda: 1_700_000_000_000
    pid, epoch = begin(broker, "tx", partitions=[("t", 1), ("u", 0), ("t", 0)])
    body = broker.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=["tx", "ghost", ""])
    found, ghost, empty = body["transaction_states"]
    assert found == {
        "error_code": 0, "transactional_id": "tx", "transaction_state": "Ongoing",
        "transaction_timeout_ms": TIMEOUT_MS, "transaction_start_time_ms": 1_700_000_000_000,
        "producer_id": pid, "producer_epoch": epoch,
        "topics": [{"topic": "t", "partitions": [0, 1]}, {"topic": "u", "partitions": [0]}]}
    assert (ghost["transactional_id"], ghost["error_code"]) == (
        "ghost", ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    assert empty["error_code"] == ErrorCode.INVALID_REQUEST
