"""CreateTopics (API key 19) through KafkaApis with real encoding (topic configs:
test_create_topics_configs.py)."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from tests.server.conftest import make_broker, versions
from tests.server.handlers.conftest import create_topics


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_TOPICS))
def test_create_topics(broker, version):
    [t] = create_topics(broker, version, ("new", 3, 1))
    assert t["name"] == "new" and t["error_code"] == ErrorCode.NONE
    created = broker.metadata_cache.topic("new")
    assert created.num_partitions == 3
    assert broker.replica_manager.partition("new", 2) is not None
    if version >= 5:
        assert (t["num_partitions"], t["replication_factor"]) == (3, 1)
    if version >= 7:
        assert t["topic_id"] == created.topic_id
    [again] = create_topics(broker, version, ("new", 3, 1))
    assert again["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS


def test_create_topics_errors(broker):
    results = create_topics(broker, 5, ("bad name", 1, 1), ("rf", 1, 3), ("zero", 0, 1),
                            ("neg", -2, 1), ("rf0", 1, 0), ("ok", 1, 1))
    assert [(t["name"], t["error_code"]) for t in results] == [
        ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("rf", ErrorCode.INVALID_REPLICATION_FACTOR),
        ("zero", ErrorCode.INVALID_PARTITIONS),
        ("neg", ErrorCode.INVALID_PARTITIONS),
        ("rf0", ErrorCode.INVALID_REPLICATION_FACTOR),
        ("ok", ErrorCode.NONE)]
    assert all(t["error_message"] for t in results[:-1])
    assert [t.name for t in broker.metadata_cache.topics()] == ["ok"]


def test_create_topics_minus_one_takes_the_defaults():
    b = make_broker(num_partitions=4)
    [t] = create_topics(b, 4, ("d", -1, -1))
    assert t["error_code"] == ErrorCode.NONE
    assert b.metadata_cache.topic("d").num_partitions == 4


def test_create_topics_validate_only_creates_nothing(broker):
    [t] = create_topics(broker, 7, ("v", 2, 1), validate_only=True)
    assert t["error_code"] == ErrorCode.NONE and t["topic_id"] == ZERO_UUID
    assert broker.metadata_cache.topic("v") is None
    [bad] = create_topics(broker, 7, ("v", 2, 2), validate_only=True)
    assert bad["error_code"] == ErrorCode.INVALID_REPLICATION_FACTOR


def test_create_topics_duplicate_names_in_one_request(broker):
    results = create_topics(broker, 5, ("dup", 1, 1), ("other", 1, 1), ("dup", 2, 1))
    assert [(t["name"], t["error_code"]) for t in results] == [
        ("dup", ErrorCode.INVALID_REQUEST), ("other", ErrorCode.NONE),
        ("dup", ErrorCode.INVALID_REQUEST)]
    assert broker.metadata_cache.topic("dup") is None


def test_create_topics_manual_assignments(broker):
    body = broker.call(ApiKey.CREATE_TOPICS, 5, topics=[
        {"name": "m", "num_partitions": -1, "replication_factor": -1, "configs": [],
         "assignments": [{"partition_index": 0, "broker_ids": [1]},
                         {"partition_index": 1, "broker_ids": [1]}]},
        {"name": "x", "num_partitions": -1, "replication_factor": -1, "configs": [],
         "assignments": [{"partition_index": 0, "broker_ids": [2]}]}])
    assert [(t["name"], t["error_code"]) for t in body["topics"]] == [
        ("m", ErrorCode.NONE), ("x", ErrorCode.INVALID_REPLICA_ASSIGNMENT)]
    assert broker.metadata_cache.topic("m").num_partitions == 2


def test_create_topics_echoes_configs_v5(broker):
    body = broker.call(ApiKey.CREATE_TOPICS, 5, topics=[
        {"name": "c", "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": [{"name": "cleanup.policy", "value": "compact"}]}])
    [t] = body["topics"]  # every config; the one given is a DYNAMIC_TOPIC_CONFIG (1)
    assert [(c["name"], c["value"], c["config_source"]) for c in t["configs"]
            if c["config_source"] != 5] == [("cleanup.policy", "compact", 1)]
