"""kafka-python's KafkaAdminClient on groups, producers and the cluster:
DeleteGroups (42), OffsetDelete (47), DescribeCluster (60), DescribeProducers
(61) and DescribeTopicPartitions (75), each of which it sends as such
(asserted with the broker's request counters)."""

from __future__ import annotations

import pytest

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as Errors
from kafka.admin import MemberToRemove, NewTopic
from kafka.structs import OffsetAndMetadata

from kafka_net.protocol.api_keys import ApiKey
from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_MS = 20000

as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


@pytest.fixture(scope="module")
def admin(server):
    client = KafkaAdminClient(bootstrap_servers=bootstrap(server), request_timeout_ms=TIMEOUT_MS)
    client.create_topics([NewTopic("kg-t", 2, 1), NewTopic("kg-u", 1, 1)])
    yield client
    client.close()


def consumer(server, group: str, **kw) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=bootstrap(server), group_id=group,
                         enable_auto_commit=False, request_timeout_ms=TIMEOUT_MS, **kw)


def commit(server, group: str, offsets: dict) -> None:
    c = consumer(server, group)
    c.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
    c.close()


def wait_for_assignment(c: KafkaConsumer) -> None:
    """Poll until the group has given ``c`` partitions (bounded: 100 short polls).

    The subscribed topics' partitions are read first, so that the first join
    already assigns them (see client_support.kafka_python_member)."""
    for topic in c.subscription():
        assert c.partitions_for_topic(topic), topic
    for _ in range(100):
        c.poll(timeout_ms=200)
        if c.assignment():
            return


def committed(admin, group: str) -> dict:
    return {tp: om.offset for tp, om in admin.list_group_offsets(group)[group].items()}


T0, T1, U0 = TopicPartition("kg-t", 0), TopicPartition("kg-t", 1), TopicPartition("kg-u", 0)


def test_delete_groups(admin, server):
    commit(server, "kg-empty", {T0: 4})
    assert admin.delete_groups(["kg-empty", "kg-missing"]) == {
        "kg-empty": "OK", "kg-missing": "GroupIdNotFoundError"}
    assert committed(admin, "kg-empty") == {}
    assert server.apis.metrics.requests_seen(ApiKey.DELETE_GROUPS) == [2]


def test_delete_group_offsets_keeps_the_topics_a_live_group_consumes(admin, server):
    commit(server, "kg-live", {T0: 3, U0: 7})
    live = consumer(server, "kg-live")
    live.subscribe(["kg-t"])
    try:
        wait_for_assignment(live)
        assert live.assignment() == {T0, T1}
        assert admin.delete_groups(["kg-live"]) == {"kg-live": "NonEmptyGroupError"}
        answer = admin.delete_group_offsets("kg-live", [T0, U0])
        assert answer == {T0: Errors.GroupSubscribedToTopicError, U0: Errors.NoError}
        assert committed(admin, "kg-live") == {T0: 3}
    finally:
        live.close()
    # With the member gone the group is Empty and consumes nothing.
    assert admin.delete_group_offsets("kg-live", [T0]) == {T0: Errors.NoError}
    assert committed(admin, "kg-live") == {}
    assert server.apis.metrics.requests_seen(ApiKey.OFFSET_DELETE) == [0]


def test_describe_cluster(admin, server, as_version):
    if as_version == "2.8":
        # kafka-python's describe_cluster pops endpoint_type, which DescribeCluster
        # v0 (Kafka 2.8 ... 3.6) lacks: the client's bug, met on a real 2.8 too.
        with pytest.raises(KeyError, match="endpoint_type"):
            admin.describe_cluster()
        assert server.apis.metrics.requests_seen(ApiKey.DESCRIBE_CLUSTER) == [0]
        return
    answer = admin.describe_cluster()
    assert answer["cluster_id"] == server.metadata_cache.cluster_id
    assert answer["controller_id"] == 1
    broker = {"broker_id": 1, "host": "127.0.0.1", "port": server.bound_port(), "rack": None}
    if as_version == "3.9":   # DescribeCluster v1 (3.7-3.9)
        assert answer["brokers"] == [broker]
        assert server.apis.metrics.requests_seen(ApiKey.DESCRIBE_CLUSTER) == [1]
        return
    # v2 (Kafka 4.0+, KIP-1073): fenced brokers on request; this node is not fenced
    assert answer["brokers"] == [dict(broker, is_fenced=False)]
    assert server.apis.metrics.requests_seen(ApiKey.DESCRIBE_CLUSTER) == [2]


def test_describe_producers(admin, server):
    producer = KafkaProducer(bootstrap_servers=bootstrap(server), enable_idempotence=True)
    for i in range(3):
        producer.send("kg-u", b"v%d" % i, partition=0, timestamp_ms=1_700_000_000_000 + i)
    producer.flush()
    producer.close()
    [(tp, state)] = admin.describe_producers([U0]).items()
    [active] = state.active_producers
    assert tp == U0 and active.producer_epoch == 0 and active.last_sequence == 2
    assert active.last_timestamp == 1_700_000_000_002
    assert (active.coordinator_epoch, active.current_transaction_start_offset) == (-1, -1)
    assert server.apis.metrics.requests_seen(ApiKey.DESCRIBE_PRODUCERS) == [0]


def test_describe_topic_partitions_pages(admin, server, as_version):
    if as_version == "2.8":   # DescribeTopicPartitions came with 3.8
        with pytest.raises(Errors.IncompatibleBrokerVersion):
            admin.describe_topic_partitions(["kg-u"])
        return
    first = admin.describe_topic_partitions(["kg-u", "kg-t"], response_partition_limit=2)
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in first["topics"]] == [("kg-t", [0, 1])]
    assert first["next_cursor"] == {"topic_name": "kg-u", "partition_index": 0}
    rest = admin.describe_topic_partitions(["kg-u", "kg-t"], cursor=first["next_cursor"])
    [topic] = rest["topics"]
    assert (topic["name"], topic["error_code"], rest["next_cursor"]) == ("kg-u", 0, None)
    assert [(p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in topic["partitions"]] == [(1, [1], [1])]
    assert server.apis.metrics.requests_seen(ApiKey.DESCRIBE_TOPIC_PARTITIONS) == [0]


def test_remove_a_static_member_by_its_instance_id(admin, server):
    static = consumer(server, "kg-static", group_instance_id="kg-instance",
                      session_timeout_ms=60000)
    static.subscribe(["kg-u"])
    try:
        wait_for_assignment(static)
        group = admin.describe_groups(["kg-static"])["kg-static"]
        assert [m["group_instance_id"] for m in group["members"]] == ["kg-instance"]
        removed = admin.remove_group_members("kg-static", [
            MemberToRemove(group_instance_id="kg-instance"),
            MemberToRemove(group_instance_id="kg-nobody")])
        # (kafka-python 3.0.12 keys the answer by instance id, not by MemberToRemove.)
        assert removed == {"kg-instance": Errors.NoError,
                           "kg-nobody": Errors.UnknownMemberIdError}
        group = admin.describe_groups(["kg-static"])["kg-static"]
        assert (group["group_state"], group["members"]) == ("Empty", [])
    finally:
        static.close()
