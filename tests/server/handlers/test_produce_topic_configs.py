"""Produce (0) under topic configs: max.message.bytes, LogAppendTime, retention."""

from __future__ import annotations

import time

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    Compression, TimestampType, build_batch, decode_records, read_header, validate_batch)
import pytest

from kafka_net.config import ServerConfig
from kafka_net.server.broker import retention_ms
from tests.server.conftest import make_broker
from tests.server.handlers.conftest import (
    config_values, create_topic, describe, list_offset, produce, records)


def fetch_records(broker, offset: int = 0) -> bytes:
    body = broker.call(ApiKey.FETCH, 4, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        {"topic": "t", "partitions": [
            {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}])
    return body["responses"][0]["partitions"][0]["records"]


def test_max_message_bytes_is_per_topic(broker):
    create_topic(broker, "t", configs={"max.message.bytes": "100"})
    create_topic(broker, "u")
    big = records(*range(20))
    assert len(big) > 100
    refused = produce(broker, "t", data=big)
    assert refused["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
    assert refused["base_offset"] == -1
    assert produce(broker, "u", data=big)["error_code"] == ErrorCode.NONE
    assert produce(broker, "t", data=records(1))["error_code"] == ErrorCode.NONE


def test_log_append_time_stamps_the_batch(broker):
    create_topic(broker, configs={"message.timestamp.type": "LogAppendTime"})
    broker.replica_manager.clock_ms = lambda: 1_234_567
    answer = produce(broker, data=records(10, 20))
    assert (answer["error_code"], answer["log_append_time_ms"]) == (0, 1_234_567)
    stored = fetch_records(broker)
    header = validate_batch(stored, from_client=False)    # the CRC was recomputed
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 1_234_567
    assert [r.timestamp for r in decode_records(stored)] == [1_234_567, 1_234_567]


def test_create_time_topics_answer_minus_one(broker):
    create_topic(broker)
    assert produce(broker, data=records(10))["log_append_time_ms"] == -1
    assert read_header(fetch_records(broker)).max_timestamp == 10


def test_retention_ms_deletes_whole_old_batches_on_append(broker):
    create_topic(broker, configs={"retention.ms": "60000"})
    now = int(time.time() * 1000)
    produce(broker, data=records(now - 120_000, now - 90_000))  # 0-1: past retention
    produce(broker, data=records(now - 1000))                   # 2: kept
    assert list_offset(broker, -2) == (0, 2, -1)
    assert produce(broker, data=records(now))["log_start_offset"] == 2


def test_default_retention_leaves_old_timestamps_alone(broker):
    create_topic(broker)
    produce(broker, data=records(1000))       # 1970: Kafka would delete it minutes later
    assert list_offset(broker, -2) == (0, 0, -1)


def test_compact_only_topics_are_not_trimmed_by_retention(broker):
    create_topic(broker, configs={"cleanup.policy": "compact", "retention.ms": "1"})
    produce(broker, data=records(1000))
    produce(broker, data=records(2000))
    assert list_offset(broker, -2) == (0, 0, -1)


def test_a_batch_larger_than_a_segment_is_record_list_too_large(broker):
    create_topic(broker, configs={"internal.segment.bytes": "100"})
    big = records(*range(20))
    refused = produce(broker, data=big)
    assert refused["error_code"] == ErrorCode.RECORD_LIST_TOO_LARGE
    assert refused["error_message"] == (
        f"Message batch size is {len(big)} bytes in append to partition t-0 which exceeds "
        "the maximum configured segment size of 100.")
    assert produce(broker, data=records(1))["error_code"] == ErrorCode.NONE


# -- cleanup.policy=compact: every record needs a key (Kafka's LogValidator) ------------

def test_a_compacted_topic_refuses_keyless_records_with_record_errors(broker):
    create_topic(broker, configs={"cleanup.policy": "compact"})
    mixed = build_batch([(b"k", b"1"), (None, b"2"), (b"k", b"3"), (None, b"4")])
    answer = produce(broker, data=mixed)
    message = "Compacted topic cannot accept message without key in topic partition t-0"
    assert answer["error_code"] == ErrorCode.INVALID_RECORD
    assert answer["base_offset"] == -1
    assert answer["record_errors"] == [
        {"batch_index": 1, "batch_index_error_message": message},
        {"batch_index": 3, "batch_index_error_message": message}]
    assert answer["error_message"].startswith(
        "One or more records have been rejected due to 2 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=1, message='{message}')")
    assert produce(broker, data=build_batch([(b"k", b"v")]))["error_code"] == ErrorCode.NONE


def test_keyless_records_compressed_and_on_compact_delete_topics(broker):
    create_topic(broker, configs={"cleanup.policy": "compact,delete"})
    keyless = build_batch([(None, b"v")], compression=Compression.ZSTD)
    answer = produce(broker, data=keyless)
    assert answer["error_code"] == ErrorCode.INVALID_RECORD
    assert [e["batch_index"] for e in answer["record_errors"]] == [0]


def test_keyless_records_are_fine_elsewhere_and_before_v8_get_no_record_errors(broker):
    create_topic(broker, "plain")
    assert produce(broker, "plain")["error_code"] == ErrorCode.NONE
    create_topic(broker, configs={"cleanup.policy": "compact"})
    answer = produce(broker, version=7)
    assert answer["error_code"] == ErrorCode.INVALID_RECORD
    assert "record_errors" not in answer or answer["record_errors"] == []


# -- log.retention.{ms,minutes,hours,bytes}: the broker's static defaults ------------------

def test_log_retention_hours_from_server_properties_is_enforced():
    b = make_broker(log_retention_hours=1).start()
    try:
        create_topic(b)
        now = int(time.time() * 1000)
        produce(b, data=records(now - 2 * 3_600_000))     # two hours old: past 1 hour
        assert produce(b, data=records(now))["log_start_offset"] == 1
        assert config_values(describe(b, keys=["retention.ms"])) == {"retention.ms": "3600000"}
    finally:
        b.stop()


@pytest.mark.parametrize("overrides, expected", [
    ({}, 604_800_000),                                            # 168 hours
    ({"log_retention_hours": 2}, 7_200_000),
    ({"log_retention_minutes": 5, "log_retention_hours": 2}, 300_000),
    ({"log_retention_ms": 1234, "log_retention_minutes": 5}, 1234),
    ({"log_retention_ms": -5}, -1),                               # negative: forever
    ({"log_retention_hours": -1}, -1),
])
def test_retention_ms_then_minutes_then_hours_as_kafka_reads_them(overrides, expected):
    assert retention_ms(ServerConfig(**overrides)) == expected


def test_retention_keys_parse_from_a_properties_file():
    config = ServerConfig.from_properties({"log.retention.minutes": "30",
                                           "log.retention.bytes": "1048576"})
    assert (config.log_retention_minutes, config.log_retention_bytes) == (30, 1048576)
    assert ServerConfig.from_properties({}).log_retention_hours == 168
