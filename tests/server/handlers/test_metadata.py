"""Metadata (API key 3) through KafkaApis with real encoding: brokers and
partitions, auto-creation, topic ids, null names and authorized operations."""

from __future__ import annotations

import uuid

import pytest

from kafka_net.network.request_channel import SendResponse
from kafka_net.protocol import encode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from tests.server.conftest import make_broker, request_body, versions


def metadata(broker, version, names=None, **kw):
    topics = None if names is None else [{"name": n, "topic_id": ZERO_UUID} for n in names]
    return broker.call(ApiKey.METADATA, version, topics=topics, **kw)


def topic_errors(body):
    return {t["name"]: t["error_code"] for t in body["topics"]}


@pytest.mark.parametrize("version", versions(ApiKey.METADATA))
def test_metadata_brokers_and_partitions(broker, version):
    broker.create_topic("t", 3)
    body = metadata(broker, version, ["t"])
    assert [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]] == \
        [(1, "broker.test", 19092)]
    [t] = body["topics"]
    assert t["error_code"] == ErrorCode.NONE and t["name"] == "t"
    assert [(p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in t["partitions"]] == [(i, 1, [1], [1]) for i in range(3)]
    if version >= 1:
        assert body["controller_id"] == 1
    if version >= 2:
        assert body["cluster_id"] == broker.metadata_cache.cluster_id
    if version >= 10:
        assert t["topic_id"] == broker.metadata_cache.topic("t").topic_id


def test_metadata_auto_creates_unknown_topics(broker):
    body = metadata(broker, 9, ["fresh"])
    assert topic_errors(body) == {"fresh": ErrorCode.NONE}
    assert len(body["topics"][0]["partitions"]) == broker.config.num_partitions
    assert broker.replica_manager.partition("fresh", 0) is not None


def test_metadata_auto_create_uses_num_partitions():
    b = make_broker(num_partitions=3)
    body = metadata(b, 9, ["fresh"])
    assert len(body["topics"][0]["partitions"]) == 3


def test_metadata_auto_create_disabled():
    b = make_broker(auto_create_topics_enable=False)
    for version in (0, 3, 4, 9, 12):
        body = metadata(b, version, [f"t{version}"])
        assert topic_errors(body) == {f"t{version}": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert b.metadata_cache.topics() == []


@pytest.mark.parametrize("version", [4, 8, 12])
def test_metadata_allow_auto_topic_creation_false(broker, version):
    body = metadata(broker, version, ["fresh"], allow_auto_topic_creation=False)
    assert topic_errors(body) == {"fresh": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.metadata_cache.topic("fresh") is None


@pytest.mark.parametrize("version", [0, 1, 3])
def test_metadata_before_v4_always_auto_creates(broker, version):
    assert topic_errors(metadata(broker, version, ["fresh"])) == {"fresh": ErrorCode.NONE}


@pytest.mark.parametrize("name", ["bad name", "a" * 250, ".", "..", "x/y"])
def test_metadata_invalid_topic_name_is_never_created(broker, name):
    body = metadata(broker, 9, [name])
    assert topic_errors(body) == {name: ErrorCode.INVALID_TOPIC_EXCEPTION}
    assert broker.metadata_cache.topics() == []


def test_metadata_which_topics(broker):
    broker.create_topic("a")
    broker.create_topic("b")
    assert [t["name"] for t in metadata(broker, 0, [])["topics"]] == ["a", "b"]   # v0: all
    assert metadata(broker, 1, [])["topics"] == []                                # v1+: none
    assert [t["name"] for t in metadata(broker, 1, None)["topics"]] == ["a", "b"]  # null: all
    assert [t["name"] for t in metadata(broker, 12, None)["topics"]] == ["a", "b"]


def test_metadata_by_topic_id_v12(broker):
    topic = broker.create_topic("t", 2)
    body = broker.call(ApiKey.METADATA, 12, topics=[
        {"name": None, "topic_id": topic.topic_id},
        {"name": None, "topic_id": uuid.uuid4()}])
    known, unknown = body["topics"]
    assert (known["name"], known["topic_id"], known["error_code"]) == \
        ("t", topic.topic_id, ErrorCode.NONE)
    assert len(known["partitions"]) == 2
    assert unknown["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID and unknown["name"] is None


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_null_topic_name_gets_an_answer(broker, version):
    """v10-11 requests may carry a null topic name (nullable from v10), but the
    response name is non-nullable until v12: the broker must still answer
    (Kafka answers an error, INVALID_REQUEST) rather than fail to encode and
    close the connection."""
    broker.create_topic("t")
    request, response = broker.respond(ApiKey.METADATA, version, request_body(
        ApiKey.METADATA, version, topics=[{"name": None, "topic_id": uuid.uuid4()}]))
    assert isinstance(response, SendResponse), response


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_error_response_with_a_null_topic_name_encodes(broker, version):
    from kafka_net.server.handlers import metadata as metadata_handler
    request = broker.make_request(ApiKey.METADATA, version, request_body(
        ApiKey.METADATA, version, topics=[{"name": None, "topic_id": uuid.uuid4()}]))
    answer = metadata_handler.error_response(request.body, version, ErrorCode.INVALID_REQUEST)
    encode_response(ApiKey.METADATA, version, 1, answer)


def test_metadata_authorized_operations(broker):
    broker.create_topic("t")
    body = metadata(broker, 10, ["t"], include_cluster_authorized_operations=True,
                    include_topic_authorized_operations=True)
    assert body["cluster_authorized_operations"] > 0
    assert body["topics"][0]["topic_authorized_operations"] > 0
    body = metadata(broker, 10, ["t"])
    assert body["cluster_authorized_operations"] == -2147483648
    assert body["topics"][0]["topic_authorized_operations"] == -2147483648
