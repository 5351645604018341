"""The operations APIs admin and monitoring tools call, answered as one KRaft node:
DescribeLogDirs (35), ElectLeaders (43), AlterPartitionReassignments (45),
ListPartitionReassignments (46), DescribeQuorum (55), and ApiVersions' features."""

from __future__ import annotations

import os
import types

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers.describe_log_dirs import DEFAULT_LOG_DIR
from tests.server.handlers.conftest import create_topic, produce, records, versions


def log_dirs(broker, topics=None, version=4):
    return broker.call(ApiKey.DESCRIBE_LOG_DIRS, version, topics=topics)


# -- DescribeLogDirs ----------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_LOG_DIRS))
def test_log_dirs_list_each_partition_with_its_size(broker, version):
    create_topic(broker, partitions=2)
    produce(broker, data=records(1, 2, 3))
    size = broker.replica_manager.partition("t", 0).log.size_in_bytes
    assert size > 0
    body = log_dirs(broker, version=version)
    [result] = body["results"]
    assert result["error_code"] == ErrorCode.NONE and result["log_dir"] == DEFAULT_LOG_DIR
    [topic] = result["topics"]
    assert topic["name"] == "t"
    assert [(p["partition_index"], p["partition_size"], p["offset_lag"], p["is_future_key"])
            for p in topic["partitions"]] == [(0, size, 0, False), (1, 0, 0, False)]
    if version >= 4:
        assert result["total_bytes"] >= result["usable_bytes"] > 0


def test_log_dirs_filter_leaves_out_unknown_partitions(broker):
    create_topic(broker, partitions=2)
    [result] = log_dirs(broker, topics=[{"topic": "t", "partitions": [1, 7]},
                                        {"topic": "missing", "partitions": [0]}])["results"]
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in result["topics"]] == [("t", [1])]
    [result] = log_dirs(broker, topics=[])["results"]
    assert result["topics"] == []


def test_log_dirs_come_from_the_config_and_shrink_with_delete_records(broker, tmp_path):
    create_topic(broker)
    produce(broker, data=records(1))
    produce(broker, data=records(2))
    # log.dirs is the durable log's key (branch storage); a config that has it:
    broker.apis.config = types.SimpleNamespace(log_dirs=[str(tmp_path / "a")])
    before = broker.replica_manager.partition("t", 0).log.size_in_bytes
    broker.replica_manager.delete_records("t", 0, 1)
    [result] = log_dirs(broker)["results"]
    assert result["log_dir"] == os.path.abspath(tmp_path / "a")
    assert 0 < result["topics"][0]["partitions"][0]["partition_size"] < before
    stats = os.statvfs(tmp_path)
    assert result["total_bytes"] == stats.f_blocks * stats.f_frsize


# -- ElectLeaders --------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.ELECT_LEADERS))
@pytest.mark.parametrize("election_type", [0, 1])
def test_every_partition_already_has_its_preferred_leader(broker, version, election_type):
    create_topic(broker, partitions=2)
    body = broker.call(ApiKey.ELECT_LEADERS, version, election_type=election_type,
                       topic_partitions=[{"topic": "t", "partitions": [0, 1, 2]},
                                         {"topic": "missing", "partitions": [0]}])
    got = [(r["topic"], p["partition_id"], p["error_code"], p["error_message"])
           for r in body["replica_election_results"] for p in r["partition_result"]]
    assert got == [
        ("t", 0, ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
        ("t", 1, ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
        ("t", 2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as t-2"),
        ("missing", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as missing")]
    assert broker.replica_manager.leader_epoch("t", 0) == 0   # nothing was elected


def test_electing_all_lists_each_topic_with_no_partition(broker):
    create_topic(broker, "b")
    create_topic(broker, "a", partitions=3)
    body = broker.call(ApiKey.ELECT_LEADERS, 2, election_type=0, topic_partitions=None)
    assert body["error_code"] == ErrorCode.NONE
    assert body["replica_election_results"] == [
        {"topic": "a", "partition_result": []}, {"topic": "b", "partition_result": []}]


def test_an_unknown_election_type_is_an_invalid_request(broker):
    body = broker.call(ApiKey.ELECT_LEADERS, 2, election_type=5, topic_partitions=[])
    assert body["error_code"] == ErrorCode.INVALID_REQUEST


# -- reassignments -------------------------------------------------------------------------


def reassign(broker, *specs, topic="t"):
    body = broker.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, topics=[
        {"name": topic, "partitions": [{"partition_index": p, "replicas": r}
                                       for p, r in specs]}])
    assert body["error_code"] == ErrorCode.NONE
    return [(p["partition_index"], p["error_code"], p["error_message"])
            for p in body["responses"][0]["partitions"]]


def test_reassigning_to_this_node_is_a_no_op_success(broker):
    create_topic(broker, partitions=2)
    assert reassign(broker, (0, [1]), (1, [1])) == [(0, 0, None), (1, 0, None)]


def test_reassignments_kafka_refuses(broker):
    create_topic(broker, partitions=2)
    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reassign(broker, (0, [1, 2]), (1, None), (0, []), (0, [1, 1]), (5, [1])) == [
        (0, invalid, "The manual partition assignment includes broker 2, but no such broker "
                     "is registered."),
        (1, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."),
        (0, invalid, "The manual partition assignment includes an empty replica list."),
        (0, invalid, "The manual partition assignment includes the broker 1 more than once."),
        (5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:5.")]
    assert reassign(broker, (0, [1]), topic="missing") == [
        (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named missing.")]


def test_no_reassignment_is_ever_listed(broker):
    create_topic(broker)
    reassign(broker, (0, [1]))
    for topics in (None, [{"name": "t", "partition_indexes": [0]}]):
        body = broker.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, topics=topics)
        assert (body["error_code"], body["topics"]) == (ErrorCode.NONE, [])


# -- DescribeQuorum ------------------------------------------------------------------------


QUORUM = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_QUORUM))
def test_the_quorum_is_this_node_alone(broker, version):
    body = broker.call(ApiKey.DESCRIBE_QUORUM, version, topics=QUORUM)
    [topic] = body["topics"]
    [p] = topic["partitions"]
    node = broker.metadata_cache.node_id
    assert (topic["topic_name"], p["error_code"], p["leader_id"], p["leader_epoch"]) == \
        ("__cluster_metadata", ErrorCode.NONE, node, 1)
    [voter] = p["current_voters"]
    assert voter["replica_id"] == node and p["observers"] == []
    assert voter["log_end_offset"] == p["high_watermark"]
    if version >= 1:
        assert voter["last_fetch_timestamp"] > 0
    if version >= 2:
        [entry] = body["nodes"]
        assert entry["node_id"] == node and entry["listeners"][0]["name"] == "PLAINTEXT"


def test_the_high_watermark_is_the_metadata_log_end(broker):
    def high_watermark():
        body = broker.call(ApiKey.DESCRIBE_QUORUM, 2, topics=QUORUM)
        return body["topics"][0]["partitions"][0]["high_watermark"]
    before = high_watermark()
    create_topic(broker, partitions=3)   # a TopicRecord and three PartitionRecords
    assert high_watermark() == before + 4 == broker.metadata_log.log.log_end_offset


def test_another_partition_is_unknown(broker):
    body = broker.call(ApiKey.DESCRIBE_QUORUM, 2, topics=[
        {"topic_name": "t", "partitions": [{"partition_index": 0}, {"partition_index": 1}]}])
    assert [(p["error_code"], p["error_message"]) for p in body["topics"][0]["partitions"]] \
        == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             "This server does not host this topic-partition.")] * 2


# -- ApiVersions' features -------------------------------------------------------------------


def features(broker, version):
    body = broker.call(ApiKey.API_VERSIONS, version, client_software_name="t",
                       client_software_version="1")
    return ({f["name"]: (f["min_version"], f["max_version"]) for f in body["supported_features"]},
            {f["name"]: (f["min_version_level"], f["max_version_level"])
             for f in body["finalized_features"]}, body["finalized_features_epoch"])


def test_api_versions_v4_reports_kafka_4_feature_levels(broker):
    supported, finalized, epoch = features(broker, 4)
    assert supported == {"metadata.version": (7, 25), "kraft.version": (0, 1),
                         "group.version": (0, 1), "share.version": (0, 2),
                         "streams.version": (0, 1), "transaction.version": (0, 2)}
    assert finalized == {"metadata.version": (25, 25), "kraft.version": (1, 1),
                         "group.version": (1, 1), "share.version": (2, 2),
                         "streams.version": (1, 1),
                         "transaction.version": (2, 2)}
    assert epoch >= 0


def test_api_versions_v3_leaves_out_features_supported_from_0(broker):
    supported, finalized, _ = features(broker, 3)
    assert supported == {"metadata.version": (7, 25)}
    assert "group.version" in finalized


def test_a_feature_change_is_reported_with_a_new_epoch(broker):
    _, _, before = features(broker, 4)
    broker.apis.features.set_levels({"group.version": 0})
    _, finalized, after = features(broker, 4)
    assert "group.version" not in finalized and after > before


# -- UpdateFeatures --------------------------------------------------------------------------


def update(broker, *updates, version=2, validate_only=False):
    return broker.call(ApiKey.UPDATE_FEATURES, version, validate_only=validate_only,
                       feature_updates=[
                           {"feature": f, "max_version_level": level, "upgrade_type": kind,
                            "allow_downgrade": kind != 1} for f, level, kind in updates])


def test_update_features_downgrades_group_version_and_turns_the_protocol_off(broker):
    assert update(broker, ("group.version", 0, 2), validate_only=True)["error_code"] == 0
    assert features(broker, 4)[1]["group.version"] == (1, 1)
    body = update(broker, ("group.version", 0, 2), version=1)
    assert body["error_code"] == 0
    assert body["results"] == [{"feature": "group.version", "error_code": 0,
                                "error_message": None}]
    assert "group.version" not in features(broker, 4)[1]
    heartbeat = broker.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="g", member_id="",
                            member_epoch=0, rebalance_timeout_ms=30000,
                            subscribed_topic_names=["t"], topic_partitions=[])
    assert heartbeat["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert update(broker, ("group.version", 1, 1), version=0)["error_code"] == 0
    assert features(broker, 4)[1]["group.version"] == (1, 1)


def test_update_features_refusals_carry_kafkas_messages(broker):
    def refused(*updates):
        body = update(broker, *updates)
        assert body["error_code"] == ErrorCode.INVALID_UPDATE_VERSION, body
        prefix = "The update failed for all features since the following feature had an error: "
        assert body["error_message"].startswith(prefix)
        return body["error_message"][len(prefix):]
    assert refused(("nope", 1, 1)) == \
        "Invalid update version 1 for feature nope. Local controller 1 does not support this " \
        "feature."
    assert refused(("transaction.version", 3, 1)) == \
        "Invalid update version 3 for feature transaction.version. Local controller 1 only " \
        "supports versions 0-2"
    assert refused(("group.version", 0, 1)).endswith(
        "Can't downgrade the version of this feature without setting the upgrade type to "
        "either safe or unsafe downgrade.")
    assert refused(("metadata.version", 24, 2)) == \
        "Invalid metadata.version 24. Refusing to perform the requested downgrade because it " \
        "might delete metadata information."
    # all or none: the valid first update is not applied either
    refused(("transaction.version", 0, 2), ("nope", 1, 1))
    assert features(broker, 4)[1]["transaction.version"] == (2, 2)


def test_finalized_feature_levels_survive_a_restart():
    from tests.server.test_metadata_restart import Store, restart
    store = Store()
    broker = store.broker()
    try:
        assert update(broker, ("group.version", 0, 2))["error_code"] == 0
        broker = restart(store, broker)
        assert "group.version" not in features(broker, 4)[1]
        assert broker.apis.features.changed_levels() == {"group.version": 0}
    finally:
        broker.stop()
        broker.shutdown()


def test_a_durable_logs_partitions_are_grouped_by_their_log_dir(broker, tmp_path):
    """A durable log (branch storage) names its partition folder ``directory``: the
    partition is listed under that folder's parent, a configured log dir."""
    create_topic(broker, partitions=2)
    first, second = tmp_path / "a", tmp_path / "b"
    broker.apis.config = types.SimpleNamespace(log_dirs=[str(first), str(second)])
    durable = types.SimpleNamespace(directory=str(second / "t-1"), size_in_bytes=123)
    broker.replica_manager.partition("t", 1).log = durable
    results = {r["log_dir"]: r for r in log_dirs(broker)["results"]}
    assert list(results) == [str(first), str(second)]
    assert results[str(first)]["topics"][0]["partitions"][0]["partition_index"] == 0
    assert results[str(second)]["topics"] == [{"name": "t", "partitions": [
        {"partition_index": 1, "partition_size": 123, "offset_lag": 0,
         "is_future_key": False}]}]
