"""The admin APIs on a real server, over raw sockets: what a test suite's teardown
and setup send (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
DeleteRecords, CreateTopics with configs) and ListOffsets by timestamp."""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import TimestampType, build_batch, read_header
from tests.integration.client_support import recent_timestamps
from tests.support import RawClient, server_fixture

T = recent_timestamps()


server = server_fixture(scope="module")


@pytest.fixture
def client(server):
    with RawClient(server.bound_port()) as c:
        yield c


def create(client, name, configs=None, version=7):
    body = client.call(ApiKey.CREATE_TOPICS, version, {
        "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": [{"name": k, "value": v}
                                                   for k, v in (configs or {}).items()]}],
        "timeout_ms": 5000, "validate_only": False})
    return body["topics"][0]


def produce(client, topic, timestamps):
    data = build_batch([(None, b"v", (), ts) for ts in timestamps])
    body = client.call(ApiKey.PRODUCE, 9, {"transactional_id": None, "acks": -1,
                                           "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": data}]}]})
    return body["responses"][0]["partition_responses"][0]


def list_offsets(client, topic, timestamp, version=9):
    body = client.call(ApiKey.LIST_OFFSETS, version, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
    p = body["topics"][0]["partitions"][0]
    return p["error_code"], p["offset"], p["timestamp"]


def test_api_versions_advertises_the_admin_apis(client):
    body = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "raw",
                                                "client_software_version": "1"})
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    assert ranges[ApiKey.DELETE_RECORDS] == (0, 2)
    assert ranges[ApiKey.DESCRIBE_CONFIGS] == (1, 4)   # v0 removed in Kafka 4.0
    assert ranges[ApiKey.ALTER_CONFIGS] == (0, 2)
    assert ranges[ApiKey.INCREMENTAL_ALTER_CONFIGS] == (0, 1)


def test_create_with_a_bad_config_is_invalid_config(client):
    result = create(client, "raw-bad", {"cleanup.policy": "nonsense"})
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        "Invalid value nonsense for configuration cleanup.policy: String must be one of: "
        "compact, delete")


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_configs_at_every_version(client, version):
    create(client, f"raw-describe-{version}", {"retention.ms": "12345"})
    body = client.call(ApiKey.DESCRIBE_CONFIGS, version, {
        "resources": [{"resource_type": 2, "resource_name": f"raw-describe-{version}",
                       "configuration_keys": ["retention.ms", "cleanup.policy"]},
                      {"resource_type": 2, "resource_name": "raw-missing",
                       "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": True})
    found, missing = body["results"]
    assert found["error_code"] == ErrorCode.NONE
    assert {c["name"]: c["value"] for c in found["configs"]} == {
        "retention.ms": "12345", "cleanup.policy": "delete"}
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_alter_then_incremental_alter(client):
    create(client, "raw-alter")
    body = client.call(ApiKey.ALTER_CONFIGS, 2, {"validate_only": False, "resources": [
        {"resource_type": 2, "resource_name": "raw-alter",
         "configs": [{"name": "retention.bytes", "value": "1000000"}]}]})
    assert body["responses"][0]["error_code"] == ErrorCode.NONE
    body = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False,
                                                              "resources": [
        {"resource_type": 2, "resource_name": "raw-alter", "configs": [
            {"name": "cleanup.policy", "config_operation": 2, "value": "compact"},
            {"name": "retention.bytes", "config_operation": 1, "value": None}]}]})
    assert body["responses"][0]["error_code"] == ErrorCode.NONE
    body = client.call(ApiKey.DESCRIBE_CONFIGS, 4, {"include_synonyms": False,
                                                    "include_documentation": False,
                                                    "resources": [
        {"resource_type": 2, "resource_name": "raw-alter", "configuration_keys": None}]})
    assert {c["name"]: c["value"] for c in body["results"][0]["configs"]
            if c["config_source"] == 1} == {"cleanup.policy": "delete,compact"}


@pytest.mark.parametrize("version", range(1, 11))
def test_list_offsets_by_timestamp_looks_inside_the_batch(client, version):
    topic = f"raw-ts-{version}"
    create(client, topic)
    assert produce(client, topic, T)["error_code"] == ErrorCode.NONE
    assert list_offsets(client, topic, T[5], version) == (0, 5, T[5])
    assert list_offsets(client, topic, -3, version) == (0, 9, T[9])
    assert list_offsets(client, topic, -2, version) == (0, 0, -1)
    assert list_offsets(client, topic, -1, version) == (0, 10, -1)


def test_delete_records_then_fetch_below_the_log_start(client):
    create(client, "raw-delete")
    produce(client, "raw-delete", T)
    body = client.call(ApiKey.DELETE_RECORDS, 2, {"timeout_ms": 5000, "topics": [
        {"name": "raw-delete", "partitions": [{"partition_index": 0, "offset": 4}]}]})
    assert body["topics"][0]["partitions"][0] == {
        "partition_index": 0, "low_watermark": 4, "error_code": 0}
    assert list_offsets(client, "raw-delete", -2) == (0, 4, -1)
    fetch = client.call(ApiKey.FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
            {"topic": "raw-delete", "topic_id": uuid.UUID(int=0), "partitions": [  # v12: by name
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 1,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    p = fetch["responses"][0]["partitions"][0]
    assert (p["error_code"], p["log_start_offset"]) == (ErrorCode.OFFSET_OUT_OF_RANGE, 4)


def test_log_append_time_topic(client, server):
    create(client, "raw-lat", {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    answer = produce(client, "raw-lat", [1, 2])
    assert answer["error_code"] == ErrorCode.NONE and answer["log_append_time_ms"] >= before
    _, result = server.replica_manager.read("raw-lat", 0, 0, 1 << 20, True)
    header = read_header(result.records)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == answer["log_append_time_ms"]
