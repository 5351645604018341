"""confluent-kafka's AdminClient against a real kafka-net broker: the config,
DeleteRecords and ListOffsets calls application test suites make.

Before these APIs existed librdkafka failed before sending
(``_UNSUPPORTED_FEATURE "DescribeConfigs (KIP-133) not supported by broker"``).
"""

from __future__ import annotations

import socket

import pytest

from confluent_kafka import (
    Consumer, ElectionType, KafkaError, KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic,
    OffsetSpec, ResourceType)

from kafka_net.protocol.api_keys import ApiKey
from tests.integration.client_support import bootstrap, recent_timestamps, stored_batches
from tests.network.helpers import closed_by_server
from tests.support import (
    API_VERSIONS_V3_BODY, LOOPBACK, RawClient, as_version_fixture, server_fixture)

pytestmark = pytest.mark.interop

TIMEOUT_S = 20
T = recent_timestamps()


as_version = as_version_fixture()
server = server_fixture(scope="module", as_version=True)


@pytest.fixture(scope="module")
def admin(server):
    return AdminClient({"bootstrap.servers": bootstrap(server)})


def create(admin, name, config=None):
    [future] = admin.create_topics([NewTopic(name, 1, 1, config=config or {})]).values()
    future.result(TIMEOUT_S)


def produce_ten_in_one_batch(server, topic):
    # linger.ms holds all ten in one batch: the lookups below must look inside it.
    producer = Producer({"bootstrap.servers": bootstrap(server), "linger.ms": 500,
                         "batch.num.messages": 100})
    for i, ts in enumerate(T):
        producer.produce(topic, value=b"v%d" % i, timestamp=ts)
    assert producer.flush(TIMEOUT_S) == 0
    [batch] = stored_batches(server, topic)
    assert (batch.base_offset, batch.records_count) == (0, 10)


def error_of(future) -> KafkaError:
    """The KafkaError a failed admin future carries."""
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT_S)
    return info.value.args[0]


def describe(admin, resource):
    [future] = admin.describe_configs([resource]).values()
    return future.result(TIMEOUT_S)


def list_offset(admin, topic, spec):
    tp = TopicPartition(topic, 0)
    [future] = admin.list_offsets({tp: spec}).values()
    info = future.result(TIMEOUT_S)
    return info.offset, info.timestamp


def test_create_with_configs_then_describe(admin):
    create(admin, "cf-describe", {"retention.ms": "86400000", "cleanup.policy": "compact"})
    configs = describe(admin, ConfigResource("topic", "cf-describe"))
    assert configs["retention.ms"].value == "86400000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "compact"
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_create_with_a_bad_config_fails(admin):
    [future] = admin.create_topics(
        [NewTopic("cf-bad", 1, 1, config={"cleanup.policy": "nonsense"})]).values()
    error = error_of(future)
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "String must be one of: compact, delete" in error.str()


def test_describe_an_unknown_topic_and_the_broker(admin):
    [future] = admin.describe_configs([ConfigResource("topic", "cf-missing")]).values()
    assert error_of(future).code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    broker = describe(admin, ConfigResource("broker", "1"))
    assert broker["num.partitions"].value == "1" and broker["num.partitions"].is_read_only


def test_incremental_alter_configs(admin):
    create(admin, "cf-incremental")
    resource = ConfigResource("topic", "cf-incremental", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    [future] = admin.incremental_alter_configs([resource]).values()
    future.result(TIMEOUT_S)
    configs = describe(admin, ConfigResource("topic", "cf-incremental"))
    assert configs["retention.ms"].value == "3600000"
    assert configs["cleanup.policy"].value == "delete,compact"
    bad = ConfigResource("topic", "cf-incremental", incremental_configs=[
        ConfigEntry("retention.ms", "x", incremental_operation=AlterConfigOpType.SET)])
    [future] = admin.incremental_alter_configs([bad]).values()
    assert error_of(future).code() == KafkaError.INVALID_CONFIG


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # alter_configs is deprecated
def test_alter_configs_replaces_the_set(admin):
    create(admin, "cf-alter", {"retention.ms": "3600000"})
    resource = ConfigResource("topic", "cf-alter", set_config={"segment.bytes": "1048576"})
    [future] = admin.alter_configs([resource]).values()
    future.result(TIMEOUT_S)
    configs = describe(admin, ConfigResource("topic", "cf-alter"))
    assert configs["segment.bytes"].value == "1048576"
    assert configs["retention.ms"].value == "604800000"   # no longer overridden


def test_broker_configs_cannot_be_altered(admin):
    resource = ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry("num.io.threads", "4", incremental_operation=AlterConfigOpType.SET)])
    [future] = admin.incremental_alter_configs([resource]).values()
    assert error_of(future).code() == KafkaError.INVALID_REQUEST


def test_list_offsets_for_timestamp_and_max_timestamp(admin, server):
    create(admin, "cf-offsets")
    produce_ten_in_one_batch(server, "cf-offsets")
    assert list_offset(admin, "cf-offsets", OffsetSpec.for_timestamp(T[5])) == (5, T[5])
    assert list_offset(admin, "cf-offsets", OffsetSpec.max_timestamp()) == (9, T[9])
    assert list_offset(admin, "cf-offsets", OffsetSpec.earliest())[0] == 0
    assert list_offset(admin, "cf-offsets", OffsetSpec.latest())[0] == 10


def test_delete_records_moves_the_earliest_offset(admin, server):
    create(admin, "cf-delete")
    produce_ten_in_one_batch(server, "cf-delete")
    [future] = admin.delete_records([TopicPartition("cf-delete", 0, 3)]).values()
    assert future.result(TIMEOUT_S).low_watermark == 3
    assert list_offset(admin, "cf-delete", OffsetSpec.earliest())[0] == 3
    # OFFSET_END (-1) deletes up to the high watermark.
    [future] = admin.delete_records([TopicPartition("cf-delete", 0, -1)]).values()
    assert future.result(TIMEOUT_S).low_watermark == 10


# -- operations APIs (DescribeLogDirs is not in this client; see the kafka-python tests) --


def test_elect_leaders_is_not_needed_on_one_node(admin):
    create(admin, "cf-elect")
    for election in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        result = admin.elect_leaders(
            election, [TopicPartition("cf-elect", 0), TopicPartition("cf-missing", 0)]
        ).result(TIMEOUT_S)
        errors = {(tp.topic, tp.partition): error.code() for tp, error in result.items()}
        assert errors == {("cf-elect", 0): KafkaError.ELECTION_NOT_NEEDED,
                          ("cf-missing", 0): KafkaError.UNKNOWN_TOPIC_OR_PART}
    # None = every partition: Kafka leaves out those that have their leader already
    assert admin.elect_leaders(ElectionType.PREFERRED, None).result(TIMEOUT_S) == {}


def consume(consumer, count):
    got = []
    for _ in range(40):
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got.append((message.offset(), message.leader_epoch()))
        if len(got) >= count:
            break
    return got


def test_kip_320_positions_are_validated_with_offset_for_leader_epoch(admin, server):
    """librdkafka validates a position that carries a leader epoch (an assignment,
    a seek, a committed offset) with OffsetForLeaderEpoch before fetching; the
    end offset of the epoch is exact, so a position past it is truncated to it."""
    create(admin, "cf-kip320")
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    for i in range(5):
        producer.produce("cf-kip320", value=b"v%d" % i)
    assert producer.flush(TIMEOUT_S) == 0
    seen_before = server.apis.metrics.requests[(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2)]
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "cf-kip320",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition("cf-kip320", 0, 2, leader_epoch=0)])
        assert consume(consumer, 3) == [(2, 0), (3, 0), (4, 0)]   # epoch 0 in every batch
        validations = server.apis.metrics.requests[(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2)]
        assert validations > seen_before
        # Offset 9 "of epoch 0" does not exist: epoch 0 ends at 5, so librdkafka
        # detects the truncation and continues from 5.
        consumer.seek(TopicPartition("cf-kip320", 0, 9, leader_epoch=0))
        for _ in range(40):   # the broker answers the validation before v5 exists
            if server.apis.metrics.requests[(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2)] > validations:
                break
            consumer.poll(0.25)
        producer.produce("cf-kip320", value=b"v5")
        assert producer.flush(TIMEOUT_S) == 0
        assert consume(consumer, 1) == [(5, 0)]
    finally:
        consumer.close()


# -- dynamic broker configuration -----------------------------------------------------------


def connect(port: int) -> socket.socket:
    return socket.create_connection((LOOPBACK, port), timeout=TIMEOUT_S)


def api_versions_works(port: int) -> bool:
    with RawClient(port) as client:
        return client.call(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_BODY)["error_code"] == 0


def set_broker_config(admin, name, key, value, op=AlterConfigOpType.SET):
    resource = ConfigResource("broker", name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op)])
    [future] = admin.incremental_alter_configs([resource]).values()
    return future


def test_max_connections_per_ip_changes_live(admin, server):
    """incremental_alter_configs on the BROKER resource lowers max.connections.per.ip
    while the broker runs: the next connection from this address is closed at
    once (on the wire), and deleting the value lets connections in again."""
    quotas = server.socket_server.connection_quotas
    describe(admin, ConfigResource("broker", "1"))     # the admin client connected
    open_now = quotas.get(LOOPBACK)   # the admin client's own connection(s)
    assert open_now >= 1
    set_broker_config(admin, "1", "max.connections.per.ip", str(open_now)).result(TIMEOUT_S)
    entry = describe(admin, ConfigResource("broker", "1"))["max.connections.per.ip"]
    assert (entry.value, entry.source, entry.is_read_only) == (
        str(open_now), ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    # librdkafka may close its bootstrap connection at any moment, freeing a slot: a
    # connection let in takes that slot and stays open, and the next must be closed.
    extras = []
    try:
        for _ in range(open_now + 1):
            extras.append(connect(server.bound_port()))
            if closed_by_server(extras[-1]):
                break
        else:
            raise AssertionError(f"{len(extras)} connections over a limit of {open_now}")
    finally:
        for extra in extras:
            extra.close()
    set_broker_config(admin, "1", "max.connections.per.ip", None,
                      AlterConfigOpType.DELETE).result(TIMEOUT_S)
    assert api_versions_works(server.bound_port())
    entry = describe(admin, ConfigResource("broker", "1"))["max.connections.per.ip"]
    assert entry.source == ConfigSource.DEFAULT_CONFIG.value


def test_log_defaults_change_and_read_only_keys_are_refused(admin):
    # (librdkafka refuses the cluster-wide "" resource itself; see the kafka-python tests)
    set_broker_config(admin, "1", "log.retention.bytes", "1048576000").result(TIMEOUT_S)
    entry = describe(admin, ConfigResource("broker", "1"))["log.retention.bytes"]
    assert (entry.value, entry.source) == (
        "1048576000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    set_broker_config(admin, "1", "log.retention.bytes", None,
                      AlterConfigOpType.DELETE).result(TIMEOUT_S)
    error = error_of(set_broker_config(admin, "1", "node.id", "5"))
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "Cannot update these configs dynamically: Set(node.id)" in error.str()


def test_group_configs(admin, as_version):
    """Kafka 4.0's GROUP config resource: set, described with its source, validated;
    playing a release before 4.0, which had no such resource, refused."""
    resource = ConfigResource(ResourceType.GROUP, "cf-group", incremental_configs=[
        ConfigEntry("consumer.heartbeat.interval.ms", "6000",
                    incremental_operation=AlterConfigOpType.SET)])
    [future] = admin.incremental_alter_configs([resource]).values()
    if as_version is not None and as_version < "4.0":
        refused = error_of(future)
        assert refused.code() == KafkaError.INVALID_REQUEST
        assert "Unexpected resource type UNKNOWN for resource cf-group" in refused.str()
        return
    future.result(TIMEOUT_S)
    entry = describe(admin, ConfigResource(ResourceType.GROUP, "cf-group"))[
        "consumer.heartbeat.interval.ms"]
    assert (entry.value, entry.source) == ("6000", ConfigSource.GROUP_CONFIG.value)
    bad = ConfigResource(ResourceType.GROUP, "cf-group", incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "1000",
                    incremental_operation=AlterConfigOpType.SET)])
    [future] = admin.incremental_alter_configs([bad]).values()
    assert error_of(future).code() == KafkaError.INVALID_CONFIG
