"""kafka-python's KafkaAdminClient and KafkaConsumer.offsets_for_times against a
real kafka-net broker: describe/alter configs, delete_records, per-record
timestamp lookups."""

from __future__ import annotations

import pytest

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import (
    ElectionNotNeededError, InvalidConfigurationError, InvalidReplicationAssignmentError,
    InvalidUpdateVersionError,
    NoReassignmentInProgressError, UnknownTopicOrPartitionError)

from tests.integration.client_support import bootstrap, recent_timestamps, stored_batches
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

T = recent_timestamps()


as_version = as_version_fixture()
server = server_fixture(scope="module", as_version=True)


@pytest.fixture(scope="module")
def admin(server):
    client = KafkaAdminClient(bootstrap_servers=bootstrap(server), request_timeout_ms=20000)
    yield client
    client.close()


@pytest.fixture
def consumer(server):
    c = KafkaConsumer(bootstrap_servers=bootstrap(server), request_timeout_ms=20000)
    yield c
    c.close()


def produce_ten_in_one_batch(server, topic):
    producer = KafkaProducer(bootstrap_servers=bootstrap(server), linger_ms=500)
    for i, ts in enumerate(T):
        producer.send(topic, value=b"v%d" % i, timestamp_ms=ts)
    producer.flush(20)
    producer.close()
    [batch] = stored_batches(server, topic)
    assert (batch.base_offset, batch.records_count) == (0, 10)


def topic_configs(admin, topic):
    result = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                    config_filter="all")
    return result["topic"][topic]


def test_create_with_configs_then_describe_and_alter(admin):
    admin.create_topics([NewTopic("kp-configs", 1, 1,
                                  topic_configs={"retention.ms": "86400000"})])
    configs = topic_configs(admin, "kp-configs")
    assert configs["retention.ms"]["value"] == "86400000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
    # kafka-python's default filter ("modified") keeps what is not DEFAULT_CONFIG.
    modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs")])
    assert list(modified["topic"]["kp-configs"]) == ["retention.ms"]
    result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs",
                                                 configs={"cleanup.policy": "compact"})])
    assert result == {"topic": {"kp-configs": "OK"}}
    configs = topic_configs(admin, "kp-configs")
    assert configs["cleanup.policy"]["value"] == "compact"
    # kafka-python 3 re-sends the overrides the request leaves out (found by a
    # DescribeConfigs reading config_source), so AlterConfigs' replace keeps them.
    assert configs["retention.ms"]["value"] == "86400000"


def test_create_with_a_bad_config_is_refused(admin):
    with pytest.raises(InvalidConfigurationError, match="String must be one of"):
        admin.create_topics([NewTopic("kp-bad", 1, 1,
                                      topic_configs={"cleanup.policy": "nonsense"})])


def test_offsets_for_times_looks_inside_the_batch(admin, server, consumer):
    admin.create_topics([NewTopic("kp-times", 1, 1)])
    produce_ten_in_one_batch(server, "kp-times")
    tp = TopicPartition("kp-times", 0)
    found = consumer.offsets_for_times({tp: T[5]})[tp]
    assert (found.offset, found.timestamp) == (5, T[5])
    assert consumer.offsets_for_times({tp: T[9] + 1})[tp] is None


def test_delete_records(admin, server, consumer):
    admin.create_topics([NewTopic("kp-delete", 1, 1)])
    produce_ten_in_one_batch(server, "kp-delete")
    tp = TopicPartition("kp-delete", 0)
    result = admin.delete_records({tp: 4})
    assert result[tp]["low_watermark"] == 4 and result[tp]["error_code"] == 0
    assert consumer.beginning_offsets([tp]) == {tp: 4}


# -- operations APIs ------------------------------------------------------------------------


def test_describe_log_dirs_reports_partition_sizes(admin, server, as_version):
    admin.create_topics([NewTopic("kp-dirs", 1, 1), NewTopic("kp-dirs-empty", 2, 1)])
    produce_ten_in_one_batch(server, "kp-dirs")
    [broker] = admin.describe_log_dirs(
        topic_partitions={"kp-dirs": [0], "kp-dirs-empty": [0, 1, 2]})
    [log_dir] = broker["log_dirs"]
    assert log_dir["error_code"] == 0
    if as_version == "2.8":   # DescribeLogDirs v4 (KIP-827) came with 3.3
        assert "total_bytes" not in log_dir
    else:
        assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    sizes = {(t["name"], p["partition_index"]): p["partition_size"]
             for t in log_dir["topics"] for p in t["partitions"]}
    [batch] = stored_batches(server, "kp-dirs")
    assert sizes == {("kp-dirs", 0): batch.batch_length + 12,   # LOG_OVERHEAD + the rest
                     ("kp-dirs-empty", 0): 0, ("kp-dirs-empty", 1): 0}


def test_elect_leaders_is_not_needed(admin):
    admin.create_topics([NewTopic("kp-elect", 2, 1)])
    response = admin.elect_leaders(0, {"kp-elect": [0, 1]})   # ELECTION_NOT_NEEDED is ignored
    assert [(p.partition_id, p.error_code) for r in response.replica_election_results
            for p in r.partition_result] == [(0, ElectionNotNeededError.errno),
                                             (1, ElectionNotNeededError.errno)]
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.elect_leaders(1, {"kp-missing": [0]})


def test_partition_reassignments(admin):
    admin.create_topics([NewTopic("kp-reassign", 2, 1)])
    tp0, tp1 = TopicPartition("kp-reassign", 0), TopicPartition("kp-reassign", 1)
    assert admin.alter_partition_reassignments({tp0: [1], tp1: None}) == {
        tp0: None, tp1: NoReassignmentInProgressError}
    assert admin.alter_partition_reassignments({tp0: [1, 2]}) == {
        tp0: InvalidReplicationAssignmentError}
    assert admin.list_partition_reassignments() == {}
    assert admin.list_partition_reassignments([tp0]) == {}


def test_describe_features(admin, as_version):
    features = admin.describe_features()
    if as_version == "2.8":   # no feature before 3.3 (KIP-778)
        assert features == {}
        return
    if as_version == "3.9":   # 3.9-IV0; kraft.version is 3.9's only other feature
        metadata_version = features["metadata.version"]
        assert (metadata_version["supported"], metadata_version["finalized"]) == ((7, 21),
                                                                                (21, 21))
        assert set(features) == {"metadata.version", "kraft.version"}
        with pytest.raises(InvalidUpdateVersionError, match="does not support this feature"):
            admin.update_features({"transaction.version": 1}, validate_only=True)
        return
    assert features["metadata.version"]["finalized"] == (25, 25)
    assert features["group.version"]["supported"] == (0, 1)
    assert {name for name, f in features.items() if "finalized" in f} == {
        "metadata.version", "kraft.version", "group.version", "share.version",
        "streams.version",
        "transaction.version"}
    assert admin.update_features({"transaction.version": 2}, validate_only=True) == {
        "transaction.version": "OK"}
    with pytest.raises(InvalidUpdateVersionError, match="only supports versions 0-2"):
        admin.update_features({"transaction.version": 3})


def test_dynamic_broker_config(admin):
    """kafka-python (like librdkafka) refuses the cluster-wide "" resource; this
    node's dynamic value shows with its source, and resets to the default."""
    node = ConfigResource(ConfigResourceType.BROKER, "1", configs={"max.connections": "5000"})
    assert admin.alter_configs([node]) == {"broker": {"1": "OK"}}
    configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")],
                                     config_filter="all")["broker"]["1"]
    assert configs["max.connections"]["value"] == "5000"
    assert configs["max.connections"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
    assert configs["num.partitions"]["read_only"] is True
    admin.reset_configs([ConfigResource(ConfigResourceType.BROKER, "1",
                                        configs={"max.connections": None})])
    configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")],
                                     config_filter="all")["broker"]["1"]
    assert configs["max.connections"]["config_source"] == "DEFAULT_CONFIG"


def test_describe_cluster_at_v2_lists_this_node_unfenced(admin, server, as_version):
    """kafka-python asks DescribeCluster v2 with include_fenced_brokers (KIP-1073);
    playing a release before 4.0 it gets an older version, without is_fenced."""
    if as_version == "2.8":    # v0: kafka-python pops endpoint_type, which v0 lacks
        with pytest.raises(KeyError, match="endpoint_type"):
            admin.describe_cluster()
        return
    if as_version == "3.9":    # v1 (Kafka 3.7-3.9): no is_fenced yet
        [broker] = admin.describe_cluster()["brokers"]
        assert "is_fenced" not in broker and broker["broker_id"] == 1
        return
    cluster = admin.describe_cluster()
    [broker] = cluster["brokers"]
    assert (broker["broker_id"], broker["is_fenced"]) == (1, False)
    assert cluster["controller_id"] == 1 and cluster["cluster_id"]
