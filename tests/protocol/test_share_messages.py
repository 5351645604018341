"""The share-group messages (KIP-932, Kafka 4.2), checked against frames written
by hand from franz-go's definitions (generate/definitions/76-79, 83-87, 90-92 at
adb3a18): field order, types, nullability and the versions each field exists
in.  kafka-python bundles none of these JSONs, so test_schema.py's comparison
with Kafka's own definitions does not cover them; this does.  The round trip
at every version is test_codegen.py's (it walks every message)."""

from __future__ import annotations

import struct
import uuid

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import encode_uvarint

TOPIC = uuid.UUID("0123456789abcdef0123456789abcdef")
TAGS = b"\x00"   # an empty tagged-field section


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def boolean(v): return b"\x01" if v else b"\x00"


def s(text):   # compact string; None is null
    if text is None:
        return b"\x00"
    data = text.encode()
    return encode_uvarint(len(data) + 1) + data


def arr(items, null=False):   # compact array of already-encoded elements
    if null:
        return b"\x00"
    return encode_uvarint(len(items) + 1) + b"".join(items)


def check(key: int, kind: str, version: int, value: dict, frame: bytes) -> None:
    """``value`` encodes to ``frame``, and ``frame`` decodes to what encodes to it."""
    schema = getattr(MESSAGES[key], kind)
    assert schema.encode(value, version) == frame
    assert schema.encode(schema.decode(frame, version), version) == frame


def test_share_group_heartbeat_v1():
    check(ApiKey.SHARE_GROUP_HEARTBEAT, "request", 1, {
        "group_id": "g", "member_id": "m", "member_epoch": 0, "rack_id": None,
        "subscribed_topic_names": ["t"]},
        s("g") + s("m") + i32(0) + s(None) + arr([s("t")]) + TAGS)
    check(ApiKey.SHARE_GROUP_HEARTBEAT, "response", 1, {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m",
        "member_epoch": 3, "heartbeat_interval_ms": 5000,
        "assignment": {"topic_partitions": [{"topic_id": TOPIC, "partitions": [0, 2]}]}},
        i32(0) + i16(0) + s(None) + s("m") + i32(3) + i32(5000)
        + b"\x01" + arr([TOPIC.bytes + arr([i32(0), i32(2)]) + TAGS]) + TAGS + TAGS)


def test_share_group_describe_v1():
    check(ApiKey.SHARE_GROUP_DESCRIBE, "request", 1,
          {"group_ids": ["g"], "include_authorized_operations": True},
          arr([s("g")]) + boolean(True) + TAGS)
    member = (s("m") + s(None) + i32(2) + s("c") + s("/h") + arr([s("t")])
              + arr([TOPIC.bytes + s("t") + arr([i32(1)]) + TAGS]) + TAGS + TAGS)
    check(ApiKey.SHARE_GROUP_DESCRIBE, "response", 1, {
        "throttle_time_ms": 0, "groups": [{
            "error_code": 0, "error_message": None, "group_id": "g", "group_state": "Stable",
            "group_epoch": 2, "assignment_epoch": 2, "assignor_name": "simple",
            "members": [{"member_id": "m", "rack_id": None, "member_epoch": 2,
                         "client_id": "c", "client_host": "/h",
                         "subscribed_topic_names": ["t"],
                         "assignment": {"topic_partitions": [
                             {"topic_id": TOPIC, "topic_name": "t", "partitions": [1]}]}}],
            "authorized_operations": 328}]},
        i32(0) + arr([i16(0) + s(None) + s("g") + s("Stable") + i32(2) + i32(2) + s("simple")
                      + arr([member]) + i32(328) + TAGS]) + TAGS)


def _ack(first, last, types):
    return i64(first) + i64(last) + arr([i8(t) for t in types]) + TAGS


@pytest.mark.parametrize("version", [1, 2])
def test_share_fetch_request(version):
    body = {"group_id": "g", "member_id": "m", "share_session_epoch": 1, "max_wait_ms": 500,
            "min_bytes": 1, "max_bytes": 1024, "max_records": 10, "batch_size": 10,
            "topics": [{"topic_id": TOPIC, "partitions": [{
                "partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": 0, "last_offset": 1, "acknowledge_types": [1, 3]}]}]}],
            "forgotten_topics_data": [{"topic_id": TOPIC, "partitions": [1]}]}
    v2 = b""
    if version >= 2:
        body.update(share_acquire_mode=1, is_renew_ack=True)
        v2 = i8(1) + boolean(True)
    check(ApiKey.SHARE_FETCH, "request", version, body,
          s("g") + s("m") + i32(1) + i32(500) + i32(1) + i32(1024) + i32(10) + i32(10) + v2
          + arr([TOPIC.bytes + arr([i32(0) + arr([_ack(0, 1, [1, 3])]) + TAGS]) + TAGS])
          + arr([TOPIC.bytes + arr([i32(1)]) + TAGS]) + TAGS)


def test_share_fetch_response_v2():
    records = b"\x00" * 5
    partition = (i32(0) + i16(0) + s(None) + i16(121) + s("x") + i32(1) + i32(4) + TAGS
                 + encode_uvarint(len(records) + 1) + records
                 + arr([i64(0) + i64(4) + i16(2) + TAGS]) + TAGS)
    check(ApiKey.SHARE_FETCH, "response", 2, {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None,
        "acquisition_lock_timeout_ms": 30000,
        "responses": [{"topic_id": TOPIC, "partitions": [{
            "partition_index": 0, "error_code": 0, "error_message": None,
            "acknowledge_error_code": 121, "acknowledge_error_message": "x",
            "current_leader": {"leader_id": 1, "leader_epoch": 4}, "records": records,
            "acquired_records": [{"first_offset": 0, "last_offset": 4,
                                  "delivery_count": 2}]}]}],
        "node_endpoints": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}]},
        i32(0) + i16(0) + s(None) + i32(30000) + arr([TOPIC.bytes + arr([partition]) + TAGS])
        + arr([i32(1) + s("h") + i32(9092) + s(None) + TAGS]) + TAGS)


@pytest.mark.parametrize("version", [1, 2])
def test_share_acknowledge(version):
    body = {"group_id": "g", "member_id": "m", "share_session_epoch": -1,
            "topics": [{"topic_id": TOPIC, "partitions": [{
                "partition_index": 3, "acknowledgement_batches": [
                    {"first_offset": 5, "last_offset": 5, "acknowledge_types": [4]}]}]}]}
    renew = b""
    if version >= 2:
        body["is_renew_ack"] = True
        renew = boolean(True)
    check(ApiKey.SHARE_ACKNOWLEDGE, "request", version, body,
          s("g") + s("m") + i32(-1) + renew
          + arr([TOPIC.bytes + arr([i32(3) + arr([_ack(5, 5, [4])]) + TAGS]) + TAGS]) + TAGS)
    response = {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                "responses": [{"topic_id": TOPIC, "partitions": [{
                    "partition_index": 3, "error_code": 0, "error_message": None,
                    "current_leader": {"leader_id": 1, "leader_epoch": 0}}]}],
                "node_endpoints": []}
    lock = b""
    if version >= 2:
        response["acquisition_lock_timeout_ms"] = 15000
        lock = i32(15000)
    check(ApiKey.SHARE_ACKNOWLEDGE, "response", version, response,
          i32(0) + i16(0) + s(None) + lock
          + arr([TOPIC.bytes + arr([i32(3) + i16(0) + s(None) + i32(1) + i32(0) + TAGS + TAGS])
                 + TAGS]) + arr([]) + TAGS)


def _state_batch(first, last, state, count):
    return i64(first) + i64(last) + i8(state) + i16(count) + TAGS


@pytest.mark.parametrize("version", [0, 1])
def test_write_share_group_state(version):
    body = {"group_id": "g", "topics": [{"topic_id": TOPIC, "partitions": [{
        "partition": 0, "state_epoch": 1, "leader_epoch": 2, "start_offset": 10,
        "state_batches": [{"first_offset": 10, "last_offset": 12, "delivery_state": 0,
                           "delivery_count": 1}]}]}]}
    complete = b""
    if version >= 1:
        body["topics"][0]["partitions"][0]["delivery_complete_count"] = 3
        complete = i32(3)
    check(ApiKey.WRITE_SHARE_GROUP_STATE, "request", version, body,
          s("g") + arr([TOPIC.bytes + arr([i32(0) + i32(1) + i32(2) + i64(10) + complete
                                           + arr([_state_batch(10, 12, 0, 1)]) + TAGS])
                        + TAGS]) + TAGS)
    check(ApiKey.WRITE_SHARE_GROUP_STATE, "response", version, {"results": [
        {"topic_id": TOPIC, "partitions": [{"partition": 0, "error_code": 0,
                                            "error_message": None}]}]},
        arr([TOPIC.bytes + arr([i32(0) + i16(0) + s(None) + TAGS]) + TAGS]) + TAGS)


def test_the_other_state_rpcs():
    check(ApiKey.INITIALIZE_SHARE_GROUP_STATE, "request", 0, {"group_id": "g", "topics": [
        {"topic_id": TOPIC, "partitions": [{"partition": 1, "state_epoch": 0,
                                            "start_offset": 7}]}]},
        s("g") + arr([TOPIC.bytes + arr([i32(1) + i32(0) + i64(7) + TAGS]) + TAGS]) + TAGS)
    check(ApiKey.READ_SHARE_GROUP_STATE, "response", 0, {"results": [{
        "topic_id": TOPIC, "partitions": [{
            "partition": 1, "error_code": 0, "error_message": None, "state_epoch": 0,
            "start_offset": 7, "state_batches": [{"first_offset": 7, "last_offset": 7,
                                                  "delivery_state": 4,
                                                  "delivery_count": 5}]}]}]},
        arr([TOPIC.bytes + arr([i32(1) + i16(0) + s(None) + i32(0) + i64(7)
                                + arr([_state_batch(7, 7, 4, 5)]) + TAGS]) + TAGS]) + TAGS)
    check(ApiKey.DELETE_SHARE_GROUP_STATE, "request", 0, {"group_id": "g", "topics": [
        {"topic_id": TOPIC, "partitions": [{"partition": 1}]}]},
        s("g") + arr([TOPIC.bytes + arr([i32(1) + TAGS]) + TAGS]) + TAGS)
    check(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, "response", 1, {"results": [{
        "topic_id": TOPIC, "partitions": [{
            "partition": 1, "error_code": 0, "error_message": None, "state_epoch": 2,
            "leader_epoch": 3, "start_offset": 7, "delivery_complete_count": 4}]}]},
        arr([TOPIC.bytes + arr([i32(1) + i16(0) + s(None) + i32(2) + i32(3) + i64(7) + i32(4)
                                + TAGS]) + TAGS]) + TAGS)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_share_group_offsets(version):
    check(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "request", version,
          {"groups": [{"group_id": "g", "topics": None}]},
          arr([s("g") + arr([], null=True) + TAGS]) + TAGS)
    part = {"partition_index": 0, "start_offset": 5, "leader_epoch": 1, "error_code": 0,
            "error_message": None}
    lag = b""
    if version >= 1:
        part["lag"] = 9
        lag = i64(9)
    check(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "response", version, {
        "throttle_time_ms": 0, "groups": [{"group_id": "g", "topics": [{
            "topic_name": "t", "topic_id": TOPIC, "partitions": [part]}],
            "error_code": 0, "error_message": None}]},
        i32(0) + arr([s("g") + arr([s("t") + TOPIC.bytes + arr([
            i32(0) + i64(5) + i32(1) + lag + i16(0) + s(None) + TAGS]) + TAGS])
            + i16(0) + s(None) + TAGS]) + TAGS)


def test_alter_and_delete_share_group_offsets():
    check(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "request", 0, {"group_id": "g", "topics": [
        {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 3}]}]},
        s("g") + arr([s("t") + arr([i32(0) + i64(3) + TAGS]) + TAGS]) + TAGS)
    check(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "response", 0, {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": [
            {"topic_name": "t", "topic_id": TOPIC, "partitions": [
                {"partition_index": 0, "error_code": 68, "error_message": None}]}]},
        i32(0) + i16(0) + s(None) + arr([s("t") + TOPIC.bytes + arr([
            i32(0) + i16(68) + s(None) + TAGS]) + TAGS]) + TAGS)
    check(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "request", 0,
          {"group_id": "g", "topics": [{"topic_name": "t"}]},
          s("g") + arr([s("t") + TAGS]) + TAGS)
    check(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "response", 0, {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None,
        "responses": [{"topic_name": "t", "topic_id": TOPIC, "error_code": 0,
                       "error_message": None}]},
        i32(0) + i16(0) + s(None) + arr([s("t") + TOPIC.bytes + i16(0) + s(None) + TAGS])
        + TAGS)


def test_version_zero_of_the_early_access_apis_is_read_but_not_served():
    # Kafka 4.0's early-access v0 of 76-79 was removed from the broker in 4.1: the
    # codec reads it (captures), the broker does not serve it.
    from kafka_net.server.apis import HANDLERS
    for key in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE,
                ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE):
        assert 0 in MESSAGES[key].request.valid and HANDLERS[key].VERSIONS.low == 1


def test_share_fetch_v0_is_the_early_access_layout():
    check(ApiKey.SHARE_FETCH, "request", 0, {
        "group_id": "g", "member_id": "m", "share_session_epoch": 0, "max_wait_ms": 1,
        "min_bytes": 1, "max_bytes": 2,
        "topics": [{"topic_id": TOPIC, "partitions": [
            {"partition_index": 0, "partition_max_bytes": 3, "acknowledgement_batches": []}]}],
        "forgotten_topics_data": []},
        s("g") + s("m") + i32(0) + i32(1) + i32(1) + i32(2)
        + arr([TOPIC.bytes + arr([i32(0) + i32(3) + arr([]) + TAGS]) + TAGS]) + arr([]) + TAGS)
