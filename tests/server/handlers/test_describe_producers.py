"""DescribeProducers (61): the idempotent producers with state on a partition."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from tests.server.handlers.conftest import produce


def describe_producers(broker, *topics) -> dict:
    body = broker.call(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[
        {"name": n, "partition_indexes": ps} for n, ps in topics])
    return {(t["name"], p["partition_index"]): p for t in body["topics"] for p in t["partitions"]}


def idempotent(pid: int, epoch: int, seq: int, *timestamps: int) -> bytes:
    return build_batch([(None, b"v", (), ts) for ts in timestamps], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq)


def test_active_producers_per_partition(broker):
    broker.create_topic("t", 2)
    assert produce(broker, data=idempotent(7, 0, 0, 1000, 1005))["error_code"] == 0
    assert produce(broker, data=idempotent(7, 0, 2, 1001, 1009, 1003))["error_code"] == 0
    assert produce(broker, data=idempotent(3, 2, 0, 50))["error_code"] == 0
    assert produce(broker, partition=1)["error_code"] == 0    # not idempotent: no state
    answer = describe_producers(broker, ("t", [0, 1, 4]), ("missing", [0]), ("bad name", [0]))
    p0 = answer[("t", 0)]
    assert p0["error_code"] == ErrorCode.NONE and p0["error_message"] is None
    assert p0["active_producers"] == [
        {"producer_id": 3, "producer_epoch": 2, "last_sequence": 0, "last_timestamp": 50,
         "coordinator_epoch": -1, "current_txn_start_offset": -1},
        {"producer_id": 7, "producer_epoch": 0, "last_sequence": 4, "last_timestamp": 1009,
         "coordinator_epoch": -1, "current_txn_start_offset": -1}]
    assert answer[("t", 1)]["active_producers"] == []
    assert answer[("t", 4)]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert answer[("missing", 0)]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    bad = answer[("bad name", 0)]
    assert bad["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "illegal" in bad["error_message"]


def test_a_new_epoch_replaces_the_producer_state(broker):
    broker.create_topic("t", 1)
    produce(broker, data=idempotent(7, 0, 0, 1000))
    produce(broker, data=idempotent(7, 1, 0, 2000, 2001))
    [state] = describe_producers(broker, ("t", [0]))[("t", 0)]["active_producers"]
    assert (state["producer_epoch"], state["last_sequence"], state["last_timestamp"]) == (
        1, 1, 2001)
