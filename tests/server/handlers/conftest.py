"""Helpers for the per-API handler tests (the ``broker`` and ``rich`` fixtures,
``produce``, ``fetch`` and ``versions`` come from tests/server/conftest.py: a
KafkaApis without sockets, real encoding); the typical and failing request of
every API, for tests/server/handlers/test_every_api.py, are in examples/, one
module per handler."""

from __future__ import annotations

import struct

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.records import build_batch
from kafka_net.server.apis import HANDLERS
from tests.server.conftest import Broker
from tests.server import conftest as server
from tests.server.conftest import versions  # noqa: F401 (re-exported for the API tests)

TOPIC, BROKER = 2, 4          # ConfigResource.Type
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def records(*timestamps: int, compression: int = 0) -> bytes:
    """One batch, one record per timestamp (offset deltas 0, 1, ...)."""
    return build_batch([(None, b"v%d" % i, (), ts) for i, ts in enumerate(timestamps)],
                       compression=compression)


def produce(broker, topic: str = "t", partition: int = 0, data: bytes | None = None,
            version: int = 9) -> dict:
    """The partition answer of a Produce of ``data`` (one record at timestamp 1000)."""
    body = server.produce(broker, version, topic, partition,
                          records(1000) if data is None else data)
    return body["responses"][0]["partition_responses"][0]


def list_offset(broker, timestamp: int, version: int = 9, topic: str = "t",
                partition: int = 0) -> tuple[int, int, int]:
    body = broker.call(ApiKey.LIST_OFFSETS, version, topics=[{"name": topic, "partitions": [
        {"partition_index": partition, "timestamp": timestamp}]}])
    p = body["topics"][0]["partitions"][0]
    return p["error_code"], p["offset"], p["timestamp"]


def create_topic(broker, name: str = "t", configs: dict | None = None, partitions: int = 1,
                 version: int = 7, validate_only: bool = False) -> dict:
    body = broker.call(ApiKey.CREATE_TOPICS, version, validate_only=validate_only, topics=[
        {"name": name, "num_partitions": partitions, "replication_factor": 1,
         "assignments": [],
         "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}])
    return body["topics"][0]


def create_topics(broker, version: int, *topics, validate_only: bool = False) -> list[dict]:
    """topics: (name, num_partitions, replication_factor) triples; the topic answers."""
    body = broker.call(ApiKey.CREATE_TOPICS, version, validate_only=validate_only, topics=[
        {"name": name, "num_partitions": parts, "replication_factor": rf,
         "assignments": [], "configs": []} for name, parts, rf in topics])
    return body["topics"]


def describe(broker, name: str = "t", keys=None, resource_type: int = TOPIC,
             version: int = 4, synonyms: bool = False, documentation: bool = False) -> dict:
    body = broker.call(ApiKey.DESCRIBE_CONFIGS, version, resources=[
        {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
        include_synonyms=synonyms, include_documentation=documentation)
    [result] = body["results"]
    return result


class ConfigResource:
    """IncrementalAlterConfigs and DescribeConfigs (with synonyms) on resources of
    one type, as the tests of that type call them."""

    def __init__(self, resource_type: int) -> None:
        self.resource_type = resource_type

    def alter(self, broker, name: str, *ops, validate_only: bool = False) -> dict:
        return incremental(broker, *ops, name=name, resource_type=self.resource_type,
                           validate_only=validate_only)

    def described(self, broker, name: str) -> dict:
        return describe(broker, name, resource_type=self.resource_type, synonyms=True)


def config_values(result: dict) -> dict[str, str]:
    return {c["name"]: c["value"] for c in result["configs"]}


def alter(broker, name: str = "t", configs: dict | None = None, resource_type: int = TOPIC,
          validate_only: bool = False, version: int = 2) -> dict:
    body = broker.call(ApiKey.ALTER_CONFIGS, version, validate_only=validate_only, resources=[
        {"resource_type": resource_type, "resource_name": name,
         "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}])
    [result] = body["responses"]
    return result


def incremental(broker, *ops, name: str = "t", resource_type: int = TOPIC,
                validate_only: bool = False, version: int = 1) -> dict:
    """ops: (name, operation, value) triples."""
    body = broker.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, validate_only=validate_only,
                       resources=[{"resource_type": resource_type, "resource_name": name,
                                   "configs": [{"name": n, "config_operation": op, "value": v}
                                               for n, op, v in ops]}])
    [result] = body["responses"]
    return result


def overrides(broker, topic: str = "t") -> dict[str, str]:
    """A topic's overrides as DescribeConfigs reports them (source DYNAMIC_TOPIC_CONFIG)."""
    return {c["name"]: c["value"] for c in describe(broker, topic)["configs"]
            if c["config_source"] == DYNAMIC_TOPIC_CONFIG}


# -- group APIs (tests/server/handlers/test_<group api>.py) ------------------------------

GROUP_SESSION_MS = 60_000


def subscription(*topics: str, version: int = 1) -> bytes:
    """A ConsumerProtocolSubscription (what consumers put in JoinGroup's metadata);
    v1+ adds fields after the topics, which the broker does not read."""
    out = struct.pack(">hi", version, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1) + (struct.pack(">i", 0) if version >= 1 else b"")


def join_stable(b, group: str, metadata: bytes, protocol_type: str = "consumer",
                instance_id: str | None = None) -> tuple[str, int]:
    """One member joins ``group`` and syncs (assignment b"x"): (member id, generation)."""
    join = dict(group_id=group, session_timeout_ms=GROUP_SESSION_MS,
                rebalance_timeout_ms=GROUP_SESSION_MS, protocol_type=protocol_type,
                group_instance_id=instance_id,
                protocols=[{"name": "range", "metadata": metadata}])
    first = b.call(ApiKey.JOIN_GROUP, 5, **join)
    if instance_id is None:   # MEMBER_ID_REQUIRED: join again with the id given
        member = first["member_id"]
        joined = b.call(ApiKey.JOIN_GROUP, 5, member_id=member, **join).body()
    else:   # KIP-345: a static member is given its id and joins at once
        joined = first.body() if isinstance(first, server.Deferred) else first
        member = joined["member_id"]
    synced = b.call(ApiKey.SYNC_GROUP, 3, group_id=group, generation_id=joined["generation_id"],
                    member_id=member, assignments=[{"member_id": member, "assignment": b"x"}])
    assert synced.body()["error_code"] == 0
    return member, joined["generation_id"]


def leave(b, group: str, member: str) -> None:
    body = b.call(ApiKey.LEAVE_GROUP, 4, group_id=group, members=[
        {"member_id": member, "group_instance_id": None}])
    assert body["members"][0]["error_code"] == 0


@pytest.fixture
def group_broker():
    """Topic t (2 partitions) and a Stable group g of one member (``group_member``,
    generation ``generation``, assignment b"x") that committed offset 2 ("m") for t-0."""
    b = Broker().start()
    try:
        b.create_topic("t", 2)
        b.group_member, b.generation = join_stable(b, "g", b"m")
        member = b.group_member
        b.call(ApiKey.OFFSET_COMMIT, 8, group_id="g", generation_id_or_member_epoch=b.generation,
               member_id=member, topics=[{"name": "t", "partitions": [
                   {"partition_index": 0, "committed_offset": 2, "committed_metadata": "m"}]}])
        yield b
    finally:
        b.stop()
