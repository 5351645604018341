"""CreatePartitions (API key 37) through KafkaApis with real encoding."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import produce, versions


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_PARTITIONS))
def test_create_partitions(broker, version):
    broker.create_topic("t", 2)
    produce(broker)
    body = broker.call(ApiKey.CREATE_PARTITIONS, version, topics=[
        {"name": "t", "count": 4, "assignments": None},
        {"name": "missing", "count": 4, "assignments": None}])
    assert [(r["name"], r["error_code"]) for r in body["results"]] == [
        ("t", ErrorCode.NONE), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert broker.metadata_cache.topic("t").num_partitions == 4
    assert broker.replica_manager.partition("t", 3) is not None
    assert broker.replica_manager.partition("t", 0).log.log_end_offset == 1  # data kept


def test_create_partitions_errors_and_validate_only(broker):
    broker.create_topic("t", 3)
    body = broker.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
        {"name": "t", "count": 3, "assignments": None}])
    assert body["results"][0]["error_code"] == ErrorCode.INVALID_PARTITIONS
    body = broker.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
        {"name": "t", "count": 2, "assignments": None}])
    assert body["results"][0]["error_code"] == ErrorCode.INVALID_PARTITIONS
    body = broker.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
        {"name": "t", "count": 4, "assignments": [{"broker_ids": [9]}]}])
    assert body["results"][0]["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    body = broker.call(ApiKey.CREATE_PARTITIONS, 3, validate_only=True, topics=[
        {"name": "t", "count": 5, "assignments": [{"broker_ids": [1]}, {"broker_ids": [1]}]}])
    assert body["results"][0]["error_code"] == ErrorCode.NONE
    assert broker.metadata_cache.topic("t").num_partitions == 3
    assert broker.replica_manager.partition("t", 3) is None
