"""What the Kafka 4.2 versions of served APIs add, one test per new behaviour.

* DescribeCluster v2 (KIP-1073): include_fenced_brokers, and is_fenced per broker.
* ConsumerGroupDescribe v1 (KIP-1099): each member's type.
* AlterPartitionReassignments v1 (KIP-860): allow_replication_factor_change, echoed.
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.apis import HANDLERS
from tests.server.conftest import LONG
from tests.server.handlers.conftest import create_topic


@pytest.mark.parametrize("key,high", [
    (ApiKey.DESCRIBE_CLUSTER, 2), (ApiKey.CONSUMER_GROUP_DESCRIBE, 1),
    (ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1)])
def test_served_up_to_kafka_4_2(key, high):
    assert HANDLERS[key].VERSIONS.high == high


# -- DescribeCluster v2 --------------------------------------------------------------------


@pytest.mark.parametrize("include_fenced", [False, True])
def test_describe_cluster_v2_lists_this_node_unfenced(broker, include_fenced):
    body = broker.call(ApiKey.DESCRIBE_CLUSTER, 2, include_fenced_brokers=include_fenced)
    node = broker.metadata_cache.node_id
    assert body["error_code"] == ErrorCode.NONE
    # The node answering is registered and unfenced, and there is no other broker.
    assert body["brokers"] == [{"broker_id": node, "host": "broker.test", "port": 19092,
                                "rack": None, "is_fenced": False}]


def test_describe_cluster_v2_still_refuses_the_controller_endpoint_type(broker):
    body = broker.call(ApiKey.DESCRIBE_CLUSTER, 2, endpoint_type=2, include_fenced_brokers=True)
    assert body["error_code"] == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    assert body["brokers"] == []


# -- ConsumerGroupDescribe v1 --------------------------------------------------------------


def _join_consumer_group(broker, group: str) -> str:
    create_topic(broker, partitions=2)
    joined = broker.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id="m-1",
                         member_epoch=0, rebalance_timeout_ms=LONG,
                         subscribed_topic_names=["t"], topic_partitions=[])
    assert joined["error_code"] == ErrorCode.NONE
    return joined["member_id"]


@pytest.mark.parametrize("version,member_type", [(0, -1), (1, 1)])
def test_consumer_group_describe_member_type(broker, version, member_type):
    """v1 says "consumer" (1) for a member that joined with ConsumerGroupHeartbeat; v0
    has no such field, which decodes as Kafka's default, -1 (unknown)."""
    member_id = _join_consumer_group(broker, "cg")
    body = broker.call(ApiKey.CONSUMER_GROUP_DESCRIBE, version, group_ids=["cg"],
                       include_authorized_operations=False)
    [group] = body["groups"]
    assert group["error_code"] == ErrorCode.NONE
    [member] = group["members"]
    assert (member["member_id"], member["member_type"]) == (member_id, member_type)


# -- AlterPartitionReassignments v1 --------------------------------------------------------


def reassign(broker, version: int, replicas, **fields) -> tuple[dict, tuple]:
    body = broker.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, version, topics=[
        {"name": "t", "partitions": [{"partition_index": 0, "replicas": replicas}]}], **fields)
    [p] = body["responses"][0]["partitions"]
    return body, (p["error_code"], p["error_message"])


@pytest.mark.parametrize("version,allow", [(0, True), (1, True), (1, False)])
def test_reassignment_answers_and_the_echoed_flag(broker, version, allow):
    """The assignment is judged first, as Kafka does; on one node any target that
    would change the replica count fails that, so the KIP-860 flag changes no
    answer and is echoed (v0 cannot ask: true)."""
    create_topic(broker)
    fields = {} if version == 0 else {"allow_replication_factor_change": allow}
    for replicas, answer in [
            ([1], (ErrorCode.NONE, None)),
            ([1, 2], (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      "The manual partition assignment includes broker 2, but no such "
                      "broker is registered.")),
            ([], (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                  "The manual partition assignment includes an empty replica list.")),
            ([1, 1], (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      "The manual partition assignment includes the broker 1 more than "
                      "once.")),
            (None, (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                    "No partition reassignment is in progress."))]:
        body, result = reassign(broker, version, replicas, **fields)
        assert result == answer, replicas
        assert body["error_code"] == ErrorCode.NONE
        assert body["allow_replication_factor_change"] is allow
