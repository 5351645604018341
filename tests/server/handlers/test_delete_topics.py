"""DeleteTopics (API key 20) through KafkaApis with real encoding: by name and
by id, and what a deleted topic leaves behind (nothing)."""

from __future__ import annotations

import uuid

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from tests.server.conftest import produce, versions
from tests.server.handlers.conftest import create_topics


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_TOPICS))
def test_delete_topics_by_name(broker, version):
    broker.create_topic("d")
    produce(broker, topic="d")
    if version >= 6:
        body = broker.call(ApiKey.DELETE_TOPICS, version, topics=[
            {"name": "d", "topic_id": ZERO_UUID}, {"name": "missing", "topic_id": ZERO_UUID}])
    else:
        body = broker.call(ApiKey.DELETE_TOPICS, version, topic_names=["d", "missing"])
    assert [(r["name"], r["error_code"]) for r in body["responses"]] == [
        ("d", ErrorCode.NONE), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert broker.metadata_cache.topic("d") is None
    assert broker.replica_manager.partition("d", 0) is None


def test_delete_topics_by_id_v6(broker):
    topic = broker.create_topic("d")
    ghost = uuid.uuid4()
    body = broker.call(ApiKey.DELETE_TOPICS, 6, topics=[
        {"name": None, "topic_id": topic.topic_id}, {"name": None, "topic_id": ghost}])
    assert [(r["name"], r["topic_id"], r["error_code"]) for r in body["responses"]] == [
        ("d", topic.topic_id, ErrorCode.NONE), (None, ghost, ErrorCode.UNKNOWN_TOPIC_ID)]
    assert broker.metadata_cache.topic("d") is None


def test_delete_topics_removes_committed_offsets(broker):
    broker.create_topic("d")
    broker.create_topic("keep")
    broker.call(ApiKey.OFFSET_COMMIT, 8, group_id="s", topics=[
        {"name": "d", "partitions": [{"partition_index": 0, "committed_offset": 3}]},
        {"name": "keep", "partitions": [{"partition_index": 0, "committed_offset": 4}]}])
    broker.call(ApiKey.DELETE_TOPICS, 4, topic_names=["d"])
    body = broker.call(ApiKey.OFFSET_FETCH, 7, group_id="s", topics=None)
    assert [t["name"] for t in body["topics"]] == ["keep"]


def test_deleted_topic_can_be_recreated_empty(broker):
    old = broker.create_topic("d")
    produce(broker, topic="d")
    broker.call(ApiKey.DELETE_TOPICS, 4, topic_names=["d"])
    [t] = create_topics(broker, 7, ("d", 1, 1))
    assert t["topic_id"] != old.topic_id
    assert broker.replica_manager.partition("d", 0).log.log_end_offset == 0
