"""DeleteRecords (21): the log start offset moves; Fetch and ListOffsets follow it."""

from __future__ import annotations

import uuid

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import (
    create_topic, incremental, list_offset, produce, records, versions)


def delete_records(broker, *specs, version=2, topic="t"):
    body = broker.call(ApiKey.DELETE_RECORDS, version, timeout_ms=1000, topics=[
        {"name": topic, "partitions": [{"partition_index": p, "offset": o} for p, o in specs]}])
    return [(p["partition_index"], p["error_code"], p["low_watermark"])
            for p in body["topics"][0]["partitions"]]


def fetch_error(broker, offset: int) -> tuple[int, int]:
    body = broker.call(ApiKey.FETCH, 12, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        {"topic": "t", "topic_id": uuid.UUID(int=0), "partitions": [
            {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}])
    p = body["responses"][0]["partitions"][0]
    return p["error_code"], p["log_start_offset"]


@pytest.fixture
def ten(broker):
    """Topic t: offsets 0-9 in two batches of five."""
    create_topic(broker)
    produce(broker, data=records(*range(1000, 1005)))
    produce(broker, data=records(*range(1005, 1010)))
    return broker


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_RECORDS))
def test_delete_moves_the_log_start(ten, version):
    assert delete_records(ten, (0, 3), version=version) == [(0, ErrorCode.NONE, 3)]
    assert list_offset(ten, -2) == (0, 3, -1)
    assert list_offset(ten, -4) == (0, 3, -1)
    assert fetch_error(ten, 2) == (ErrorCode.OFFSET_OUT_OF_RANGE, 3)
    assert fetch_error(ten, 3) == (ErrorCode.NONE, 3)
    # By timestamp: records below the log start are not answered.
    assert list_offset(ten, 0) == (0, 3, 1003)


def test_never_moves_backwards_and_minus_one_is_the_high_watermark(ten):
    assert delete_records(ten, (0, 6)) == [(0, 0, 6)]
    assert delete_records(ten, (0, 2)) == [(0, 0, 6)]
    assert delete_records(ten, (0, -1)) == [(0, 0, 10)]
    assert list_offset(ten, -2) == (0, 10, -1)
    assert list_offset(ten, -3) == (0, -1, -1)   # nothing left
    assert produce(ten)["base_offset"] == 10


def test_out_of_range_and_unknown_partitions(ten):
    assert delete_records(ten, (0, 11), (0, -5), (3, 0)) == [
        (0, ErrorCode.OFFSET_OUT_OF_RANGE, -1), (0, ErrorCode.OFFSET_OUT_OF_RANGE, -1),
        (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)]
    assert delete_records(ten, (0, 0), topic="missing") == [
        (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)]
    assert list_offset(ten, -2) == (0, 0, -1)


def test_a_compacted_topic_refuses(ten):
    assert incremental(ten, ("cleanup.policy", 0, "compact"))["error_code"] == 0
    assert delete_records(ten, (0, 1)) == [(0, ErrorCode.POLICY_VIOLATION, -1)]
