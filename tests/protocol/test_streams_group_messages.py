"""Streams groups (KIP-1071, Kafka 4.2): StreamsGroupHeartbeat (88) and
StreamsGroupDescribe (89) decode from bytes assembled here by hand, field by
field in Kafka 4.2's order (franz-go's definitions at adb3a18), not by the
schema under test.  The broker serves version 0 (kafka_net.server.handlers
.streams_group_*); a table without them (as.version before 4.2) refuses them
as Kafka refuses an API it has not enabled.
"""

from __future__ import annotations

import struct

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.codec import parse_request
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import encode_uvarint
from kafka_net.protocol.schema import Versions


def cstr(s: str | None) -> bytes:
    """A compact (nullable) string."""
    if s is None:
        return b"\x00"
    data = s.encode()
    return encode_uvarint(len(data) + 1) + data


def carr(items: list[bytes] | None) -> bytes:
    """A compact (nullable) array of already-encoded items."""
    if items is None:
        return b"\x00"
    return encode_uvarint(len(items) + 1) + b"".join(items)


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def u16(v): return struct.pack(">H", v)


TAGS = b"\x00"   # an empty tagged-field section
PRESENT, NULL = b"\x01", b"\xff"   # the int8 before a nullable struct


def task_ids(sub: str, parts: list[int]) -> bytes:
    return cstr(sub) + carr([i32(p) for p in parts]) + TAGS


def topic_info(name: str, partitions: int, rf: int, configs: dict) -> bytes:
    return (cstr(name) + i32(partitions) + i16(rf)
            + carr([cstr(k) + cstr(v) + TAGS for k, v in configs.items()]) + TAGS)


def heartbeat_join_body() -> bytes:
    """A Kafka Streams member joining: epoch 0 with its topology."""
    subtopology = (cstr("0") + carr([cstr("words")]) + carr([])
                   + carr([topic_info("app-counts-changelog", 0, 0,
                                      {"cleanup.policy": "compact"})])
                   + carr([cstr("app-repartition")])
                   + carr([topic_info("app-repartition", 4, -1, {})])
                   + carr([carr([i16(0)]) + carr([]) + carr([i16(0)]) + TAGS]) + TAGS)
    topology = i32(1) + carr([subtopology]) + TAGS
    return (cstr("app") + cstr("member-1") + i32(0) + i32(-1) + cstr(None) + cstr("rack-a")
            + i32(300000) + PRESENT + topology
            + carr([]) + carr([]) + carr([])                     # no tasks owned yet
            + cstr("process-1") + PRESENT + (cstr("localhost") + u16(8080) + TAGS)
            + carr([cstr("zone") + cstr("eu-1") + TAGS])
            + carr([cstr("0") + i32(0) + i64(42) + TAGS]) + carr(None)
            + b"\x01" + TAGS)


def request_frame(api_key: int, version: int, body: bytes) -> bytes:
    # Request header v2: key, version, correlation id, client id (int16 string), tags.
    client = b"streams"
    return (i16(api_key) + i16(version) + i32(7) + i16(len(client)) + client + TAGS + body)


def test_a_streams_join_decodes_field_by_field():
    parsed = parse_request(request_frame(ApiKey.STREAMS_GROUP_HEARTBEAT, 0,
                                         heartbeat_join_body()),
                           {ApiKey.STREAMS_GROUP_HEARTBEAT: Versions(0, 0)})
    body = parsed.body
    assert (body["group_id"], body["member_id"], body["member_epoch"],
            body["endpoint_information_epoch"], body["instance_id"], body["rack_id"],
            body["rebalance_timeout_ms"]) == ("app", "member-1", 0, -1, None, "rack-a", 300000)
    [sub] = body["topology"]["subtopologies"]
    assert body["topology"]["epoch"] == 1
    assert (sub["subtopology_id"], sub["source_topics"], sub["source_topic_regex"],
            sub["repartition_sink_topics"]) == ("0", ["words"], [], ["app-repartition"])
    assert sub["state_changelog_topics"] == [{
        "name": "app-counts-changelog", "partitions": 0, "replication_factor": 0,
        "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}]
    assert sub["repartition_source_topics"][0]["partitions"] == 4
    assert sub["copartition_groups"] == [{"source_topics": [0], "source_topic_regex": [],
                                          "repartition_source_topics": [0]}]
    assert (body["active_tasks"], body["standby_tasks"], body["warmup_tasks"]) == ([], [], [])
    assert body["process_id"] == "process-1"
    assert body["user_endpoint"] == {"host": "localhost", "port": 8080}
    assert body["client_tags"] == [{"key": "zone", "value": "eu-1"}]
    assert body["task_offsets"] == [{"subtopology_id": "0", "partition": 0, "offset": 42}]
    assert body["task_end_offsets"] is None
    assert body["shutdown_application"] is True
    assert parsed.header.client_id == "streams"


def test_a_streams_heartbeat_response_decodes():
    data = (i32(0) + i16(0) + cstr(None) + cstr("member-1") + i32(3) + i32(5000)
            + i32(10000) + i32(10000)
            + carr([i8(5) + cstr("Assignment delayed") + TAGS])
            + carr([task_ids("0", [0, 2])]) + carr([task_ids("0", [1])]) + carr([])
            + i32(2)
            + carr([(cstr("h1") + u16(9000) + TAGS)
                    + carr([cstr("words") + carr([i32(0), i32(2)]) + TAGS])
                    + carr([]) + TAGS])
            + TAGS)
    body = MESSAGES[ApiKey.STREAMS_GROUP_HEARTBEAT].response.decode(data, 0)
    assert (body["member_epoch"], body["acceptable_recovery_lag_legacy"],
            body["task_offset_interval_ms"]) == (3, 10000, 10000)
    assert body["status"] == [{"status_code": 5, "status_detail": "Assignment delayed"}]
    assert body["active_tasks"] == [{"subtopology_id": "0", "partitions": [0, 2]}]
    assert body["standby_tasks"] == [{"subtopology_id": "0", "partitions": [1]}]
    assert body["endpoint_information_epoch"] == 2
    [endpoint] = body["partitions_by_user_endpoint"]
    assert endpoint["user_endpoint"] == {"host": "h1", "port": 9000}
    assert endpoint["active_partitions"] == [{"topic": "words", "partitions": [0, 2]}]
    # Encoding the decoded value gives the same bytes back.
    assert MESSAGES[ApiKey.STREAMS_GROUP_HEARTBEAT].response.encode(body, 0) == data


def test_a_streams_group_describe_round_trip():
    parsed = parse_request(request_frame(ApiKey.STREAMS_GROUP_DESCRIBE, 0,
                                         carr([cstr("app")]) + b"\x01" + TAGS),
                           {ApiKey.STREAMS_GROUP_DESCRIBE: Versions(0, 0)})
    assert parsed.body == {"group_ids": ["app"], "include_authorized_operations": True,
                           "include_topology_description": False}   # v1's, absent at v0
    assignment = carr([task_ids("0", [0])]) + carr([]) + carr([]) + TAGS
    member = (cstr("member-1") + i32(3) + cstr(None) + cstr(None) + cstr("c") + cstr("/h")
              + i32(1) + cstr("process-1") + NULL + carr([]) + carr([]) + carr([])
              + assignment + assignment + b"\x00" + TAGS)
    topology = i32(1) + carr(None) + TAGS          # not configured yet: no subtopologies
    data = (i32(0) + carr([i16(0) + cstr(None) + cstr("app") + cstr("Assigning") + i32(3)
                           + i32(2) + PRESENT + topology + carr([member]) + i32(-2**31) + TAGS])
            + TAGS)
    body = MESSAGES[ApiKey.STREAMS_GROUP_DESCRIBE].response.decode(data, 0)
    [group] = body["groups"]
    assert (group["group_state"], group["group_epoch"], group["assignment_epoch"]) == \
        ("Assigning", 3, 2)
    assert group["topology"] == {"epoch": 1, "subtopologies": None}
    [m] = group["members"]
    assert (m["topology_epoch"], m["process_id"], m["user_endpoint"], m["is_classic"]) == \
        (1, "process-1", None, False)
    assert m["assignment"]["active_tasks"] == [{"subtopology_id": "0", "partitions": [0]}]
    assert MESSAGES[ApiKey.STREAMS_GROUP_DESCRIBE].response.encode(body, 0) == data


def test_a_streams_heartbeat_response_v1_widens_the_lag_and_asks_for_the_description():
    """KIP-1331: v1 drops the int32 lag before task_offset_interval_ms, puts an int64
    one after it, and adds topology_description_required after the warm-up tasks."""
    head = i32(0) + i16(0) + cstr(None) + cstr("m") + i32(1) + i32(2)
    nulls = carr(None) + carr(None) + carr(None) + carr(None)   # status and the three task lists
    v1 = head + i32(3) + i64(1000) + nulls + b"\x01" + i32(4) + carr(None) + TAGS
    v0 = head + i32(1000) + i32(3) + nulls + i32(4) + carr(None) + TAGS
    schema = MESSAGES[ApiKey.STREAMS_GROUP_HEARTBEAT].response
    body = schema.decode(v1, 1)
    assert (body["acceptable_recovery_lag"], body["task_offset_interval_ms"],
            body["topology_description_required"]) == (1000, 3, True)
    assert schema.encode(body, 1) == v1
    old = schema.decode(v0, 0)
    assert (old["acceptable_recovery_lag_legacy"], old["topology_description_required"]) == \
        (1000, False)
    assert schema.encode(old, 0) == v0


def test_a_streams_group_describe_request_v1_asks_for_the_description():
    schema = MESSAGES[ApiKey.STREAMS_GROUP_DESCRIBE].request
    body = {"group_ids": ["g"], "include_authorized_operations": True,
            "include_topology_description": True}
    assert schema.encode(body, 1) == carr([cstr("g")]) + b"\x01\x01" + TAGS
    assert schema.encode(body, 0) == carr([cstr("g")]) + b"\x01" + TAGS


@pytest.mark.parametrize("key", [ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE])
def test_the_broker_serves_versions_0_1_and_a_table_without_them_refuses_them(key):
    from kafka_net.server.apis import HANDLERS
    assert HANDLERS[key].VERSIONS == Versions(0, 1)
    with pytest.raises(InvalidRequestError, match="which is not enabled"):
        parse_request(request_frame(key, 0, b""), {})   # as.version before 4.2
