"""DescribeTopicPartitions (75, KIP-966): sorted topics, partition limit, cursor."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.handlers.metadata import TOPIC_OPERATIONS


def describe(broker, *names, limit=2000, cursor=None) -> dict:
    return broker.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, topics=[{"name": n} for n in names],
                       response_partition_limit=limit, cursor=cursor)


def shape(body) -> list:
    return [(t["name"], t["error_code"], [p["partition_index"] for p in t["partitions"]])
            for t in body["topics"]]


def test_describes_topics_sorted_with_this_node_as_leader(broker):
    b_topic = broker.create_topic("b", 2)
    broker.create_topic("a", 1)
    body = describe(broker, "b", "a", "missing", "bad name")
    assert shape(body) == [("a", 0, [0]), ("b", 0, [0, 1]),
                           ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION, []),
                           ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    b = body["topics"][1]
    node = broker.metadata_cache.node_id
    assert b["topic_id"] == b_topic.topic_id and b["is_internal"] is False
    assert b["topic_authorized_operations"] == TOPIC_OPERATIONS
    assert b["partitions"][1] == {
        "error_code": 0, "partition_index": 1, "leader_id": node, "leader_epoch": 0,
        "replica_nodes": [node], "isr_nodes": [node], "eligible_leader_replicas": [],
        "last_known_elr": [], "offline_replicas": []}
    assert body["topics"][3]["topic_id"] == ZERO_UUID
    assert body["next_cursor"] is None


def test_an_empty_list_means_all_topics_without_errors(broker):
    broker.create_topic("x", 1)
    broker.create_topic("c", 1)
    assert shape(describe(broker)) == [("c", 0, [0]), ("x", 0, [0])]


def test_the_partition_limit_pages_with_a_cursor(broker):
    broker.create_topic("a", 3)
    broker.create_topic("b", 2)
    first = describe(broker, "a", "b", limit=2)
    assert shape(first) == [("a", 0, [0, 1])]
    assert first["next_cursor"] == {"topic_name": "a", "partition_index": 2}
    second = describe(broker, "a", "b", limit=2, cursor=first["next_cursor"])
    assert shape(second) == [("a", 0, [2]), ("b", 0, [0])]
    assert second["next_cursor"] == {"topic_name": "b", "partition_index": 1}
    third = describe(broker, "a", "b", limit=2, cursor=second["next_cursor"])
    assert shape(third) == [("b", 0, [1])] and third["next_cursor"] is None
    # A limit used up exactly at a topic's end points at the next topic's start.
    exact = describe(broker, "a", "b", limit=3)
    assert shape(exact) == [("a", 0, [0, 1, 2])]
    assert exact["next_cursor"] == {"topic_name": "b", "partition_index": 0}
    # A limit below 1 counts as 1.
    assert shape(describe(broker, "a", limit=0)) == [("a", 0, [0])]


def test_a_cursor_outside_the_request_is_invalid(broker):
    broker.create_topic("a", 1)
    body = describe(broker, "a", cursor={"topic_name": "zz", "partition_index": 0})
    assert shape(body) == [("a", ErrorCode.INVALID_REQUEST, [])]
    body = describe(broker, "a", cursor={"topic_name": "a", "partition_index": -1})
    assert shape(body) == [("a", ErrorCode.INVALID_REQUEST, [])]
