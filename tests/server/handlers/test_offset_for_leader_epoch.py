"""OffsetForLeaderEpoch (23), and the leader epoch in Metadata, ListOffsets and Fetch
(Kafka's Partition.lastOffsetForLeaderEpoch and checkCurrentLeaderEpoch)."""

from __future__ import annotations

import uuid

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import create_topic, produce, records, versions


def end_offset(broker, leader_epoch, current=-1, version=4, topic="t", partition=0):
    body = broker.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, replica_id=-1, topics=[
        {"topic": topic, "partitions": [{"partition": partition,
                                         "current_leader_epoch": current,
                                         "leader_epoch": leader_epoch}]}])
    p = body["topics"][0]["partitions"][0]
    return p["error_code"], p["leader_epoch"], p["end_offset"]


@pytest.fixture
def three(broker):
    create_topic(broker)
    produce(broker, data=records(1, 2))
    produce(broker, data=records(3))
    return broker


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_FOR_LEADER_EPOCH))
def test_the_current_epoch_ends_at_the_log_end(three, version):
    assert end_offset(three, 0, version=version) == (ErrorCode.NONE, 0, 3)
    assert end_offset(three, 0, current=0, version=version) == (ErrorCode.NONE, 0, 3)


def test_an_empty_partition_knows_its_epoch_from_creation(broker):
    create_topic(broker)
    assert end_offset(broker, 0) == (ErrorCode.NONE, 0, 0)


def test_unknown_epochs_answer_undefined_without_error(three):
    assert end_offset(three, 7) == (ErrorCode.NONE, -1, -1)
    assert end_offset(three, -1) == (ErrorCode.NONE, -1, -1)


def test_current_leader_epoch_is_fenced_or_unknown(three):
    partition = three.replica_manager.partition("t", 0)
    partition.make_leader(2)
    produce(three, data=records(4))
    assert end_offset(three, 0, current=1) == (ErrorCode.FENCED_LEADER_EPOCH, -1, -1)
    assert end_offset(three, 0, current=3) == (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1)
    # epoch 0 wrote offsets 0-2, epoch 2 starts at 3; epoch 1 never led
    assert end_offset(three, 0, current=2) == (ErrorCode.NONE, 0, 3)
    assert end_offset(three, 1, current=2) == (ErrorCode.NONE, 0, 3)
    assert end_offset(three, 2, current=2) == (ErrorCode.NONE, 2, 4)


def test_unknown_topic_or_partition(three):
    assert end_offset(three, 0, topic="missing")[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert end_offset(three, 0, partition=5)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_metadata_and_list_offsets_report_the_epoch(three):
    three.replica_manager.partition("t", 0).make_leader(2)
    produce(three, data=records(4))
    body = three.call(ApiKey.METADATA, 12, topics=[{"name": "t", "topic_id": uuid.UUID(int=0)}])
    assert body["topics"][0]["partitions"][0]["leader_epoch"] == 2
    body = three.call(ApiKey.LIST_OFFSETS, 9, topics=[{"name": "t", "partitions": [
        {"partition_index": 0, "timestamp": -1}, {"partition_index": 0, "timestamp": -2},
        {"partition_index": 0, "timestamp": 4}]}])
    got = [(p["offset"], p["leader_epoch"]) for p in body["topics"][0]["partitions"]]
    assert got == [(4, 2), (0, 0), (3, 2)]
    body = three.call(ApiKey.LIST_OFFSETS, 9, topics=[{"name": "t", "partitions": [
        {"partition_index": 0, "timestamp": -1, "current_leader_epoch": 1}]}])
    assert body["topics"][0]["partitions"][0]["error_code"] == ErrorCode.FENCED_LEADER_EPOCH


def test_fetch_checks_current_leader_epoch(three):
    def fetch_error(current):
        body = three.call(ApiKey.FETCH, 12, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                          topics=[{"topic": "t", "partitions": [
                              {"partition": 0, "fetch_offset": 0, "current_leader_epoch": current,
                               "partition_max_bytes": 1 << 20}]}])
        p = body["responses"][0]["partitions"][0]
        return p["error_code"], p["current_leader"]["leader_epoch"], len(p["records"] or b"")
    assert fetch_error(0)[0] == ErrorCode.NONE and fetch_error(0)[2] > 0
    three.replica_manager.partition("t", 0).make_leader(1)
    assert fetch_error(0) == (ErrorCode.FENCED_LEADER_EPOCH, 1, 0)
    assert fetch_error(2)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_a_consumer_needs_describe_on_the_topic_a_follower_cluster_action():
    """Kafka's handleOffsetForLeaderEpochRequest: CLUSTER_ACTION on the cluster
    covers every topic; without it, DESCRIBE on each topic (KIP-320 consumers)."""
    from tests.server.handlers.test_acl_checks import grant, secured_broker
    from kafka_net.server.authorizer import AclOperation as Op, ResourceType as RT
    b = secured_broker()
    try:
        b.principal = "User:consumer"
        assert end_offset(b, 0, topic="t")[0] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        grant(b, RT.TOPIC, "t", "User:consumer", Op.DESCRIBE)
        assert end_offset(b, 0, topic="t")[0] == ErrorCode.NONE
        assert end_offset(b, 0, topic="u")[0] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        grant(b, RT.CLUSTER, "kafka-cluster", "User:follower", Op.CLUSTER_ACTION)
        b.principal = "User:follower"
        assert end_offset(b, 0, topic="u")[0] == ErrorCode.NONE
    finally:
        b.stop()


def test_fetch_with_a_last_fetched_epoch_reports_divergence(three):
    def fetch(offset, last_epoch):
        body = three.call(ApiKey.FETCH, 12, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                          topics=[{"topic": "t", "partitions": [
                              {"partition": 0, "fetch_offset": offset,
                               "last_fetched_epoch": last_epoch,
                               "partition_max_bytes": 1 << 20}]}])
        p = body["responses"][0]["partitions"][0]
        return (p["error_code"], p["diverging_epoch"]["epoch"],
                p["diverging_epoch"]["end_offset"], len(p["records"] or b""))
    three.replica_manager.partition("t", 0).make_leader(2)
    produce(three, data=records(4))          # epoch 0: offsets 0-2, epoch 2: offset 3
    assert fetch(2, 0) == (ErrorCode.NONE, -1, -1, fetch(2, 0)[3])   # consistent: records
    assert fetch(2, 0)[3] > 0
    assert fetch(3, 0) == (ErrorCode.NONE, -1, -1, fetch(3, 0)[3])   # 3 is epoch 0's end
    assert fetch(4, 0) == (ErrorCode.NONE, 0, 3, 0)     # past epoch 0's end: diverged
    assert fetch(3, 1) == (ErrorCode.NONE, 0, 3, 0)     # epoch 1 never led: ends with 0's
    assert fetch(0, 7)[0] == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_restart_moves_the_leader_epoch_on_by_two():
    """Kafka's controller leaves each partition leaderless when its only broker
    stops (epoch + 1) and elects it again when it is back (epoch + 1): a consumer
    holding the old epoch is fenced and revalidates."""
    from tests.server.test_metadata_restart import Store, restart
    store = Store()
    broker = store.broker()
    try:
        create_topic(broker, partitions=2)
        broker = restart(store, broker)
        assert [broker.replica_manager.leader_epoch("t", i) for i in (0, 1)] == [2, 2]
        body = broker.call(ApiKey.METADATA, 12, topics=[{"name": "t",
                                                        "topic_id": uuid.UUID(int=0)}])
        assert [p["leader_epoch"] for p in body["topics"][0]["partitions"]] == [2, 2]
        assert end_offset(broker, 0, current=0)[0] == ErrorCode.FENCED_LEADER_EPOCH
        assert end_offset(broker, 2, current=2) == (ErrorCode.NONE, 2, 0)
        broker = restart(store, broker)
        assert broker.replica_manager.leader_epoch("t", 0) == 4
    finally:
        broker.stop()
        broker.shutdown()
