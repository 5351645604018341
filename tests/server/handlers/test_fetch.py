"""Fetch (API key 1) through KafkaApis with real encoding: records and watermarks,
topic ids, fetch sessions, size limits, and long polls parked in the purgatory."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from tests.server.conftest import (
    LONG, Deferred, batch, fetch, partition_of, produce, stored_offsets, versions)


@pytest.mark.parametrize("version", versions(ApiKey.FETCH))
def test_fetch_returns_records_and_watermarks(broker, version):
    broker.create_topic("t", 1)
    produce(broker, records=batch([b"a", b"b"]))
    produce(broker, records=batch([b"c"]))
    body = fetch(broker, version, partitions=[("t", 0, 1)])
    p = partition_of(body)
    assert p["error_code"] == ErrorCode.NONE
    assert p["high_watermark"] == 3
    assert p["last_stable_offset"] == 3
    if version >= 5:
        assert p["log_start_offset"] == 0
    assert stored_offsets(p["records"]) == [0, 1, 2]  # the whole first batch
    if version >= 7:
        assert body["session_id"] == 0 and body["error_code"] == ErrorCode.NONE
    if version >= 13:
        assert body["responses"][0]["topic_id"] == broker.metadata_cache.topic("t").topic_id
    else:
        assert body["responses"][0]["topic"] == "t"


def test_fetch_offset_out_of_range_reports_the_log_bounds(broker):
    broker.create_topic("t")
    produce(broker)
    p = partition_of(fetch(broker, partitions=[("t", 0, 5)], max_wait_ms=LONG))
    assert p["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (p["high_watermark"], p["log_start_offset"]) == (1, 0)
    assert p["records"] in (b"", None)


def test_fetch_unknown_topic_is_answered_at_once(broker):
    body = fetch(broker, partitions=[("nope", 0, 0)], max_wait_ms=LONG)
    assert partition_of(body)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [13, 15, 17])
def test_fetch_by_unknown_topic_id(broker, version):
    body = fetch(broker, version, partitions=[("ghost", 0, 0)], max_wait_ms=LONG)
    assert body["responses"][0]["topic_id"] != ZERO_UUID
    assert partition_of(body)["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_fetch_by_topic_id(broker):
    topic = broker.create_topic("t")
    produce(broker)
    body = fetch(broker, 13, partitions=[("t", 0, 0)])
    assert body["responses"][0]["topic_id"] == topic.topic_id
    assert stored_offsets(partition_of(body)["records"]) == [0]


def test_incremental_fetch_in_a_session_we_never_created(broker):
    broker.create_topic("t")
    body = fetch(broker, 12, session_id=123, session_epoch=1)
    assert body["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert body["responses"] == []


@pytest.mark.parametrize("epoch", [0, -1])
def test_full_fetch_naming_a_session_is_served_without_one(broker, epoch):
    # Kafka: a full fetch (epoch 0 = new session, -1 = no session) is always
    # served; the old session id is simply dropped.
    broker.create_topic("t")
    body = fetch(broker, 12, session_id=7, session_epoch=epoch)
    assert body["error_code"] == ErrorCode.NONE and body["session_id"] == 0
    assert len(body["responses"]) == 1


def test_fetch_session_epoch_without_a_session(broker):
    broker.create_topic("t")
    body = fetch(broker, 12, session_id=0, session_epoch=3)
    assert body["error_code"] != ErrorCode.NONE
    # Epoch 0 asks for a new session: declined (session id 0) but served in full.
    produce(broker)
    body = fetch(broker, 12, session_id=0, session_epoch=0)
    assert body["error_code"] == ErrorCode.NONE and body["session_id"] == 0
    assert stored_offsets(partition_of(body)["records"]) == [0]


def test_fetch_max_bytes_and_partition_max_bytes(broker):
    broker.create_topic("t", 2)
    for _ in range(3):
        produce(broker, records=batch([b"x" * 200]))
        produce(broker, partition=1, records=batch([b"y" * 200]))
    one = len(bytes(broker.replica_manager.read("t", 0, 0, 1 << 20, True)[1].records)) // 3
    # max_bytes smaller than one batch: the first batch still comes back (KIP-74),
    # and nothing more, not even from the next partition.
    body = fetch(broker, partitions=[("t", 0, 0), ("t", 1, 0)], max_bytes=10)
    assert stored_offsets(partition_of(body, 0)["records"]) == [0]
    assert not partition_of(body, 1)["records"]
    # partition_max_bytes limits each partition; max_bytes the total.
    body = fetch(broker, partitions=[("t", 0, 0), ("t", 1, 0)],
                 partition_max_bytes=2 * one, max_bytes=3 * one)
    assert stored_offsets(partition_of(body, 0)["records"]) == [0, 1]
    assert stored_offsets(partition_of(body, 1)["records"]) == [0]
    assert partition_of(body, 1)["high_watermark"] == 3


def test_fetch_first_partition_without_data_does_not_use_up_min_one(broker):
    broker.create_topic("t", 2)
    produce(broker, partition=1, records=batch([b"y" * 300]))
    body = fetch(broker, partitions=[("t", 0, 0), ("t", 1, 0)], max_bytes=10)
    assert stored_offsets(partition_of(body, 1)["records"]) == [0]


def test_long_poll_fetch_is_parked_and_completed_by_an_append(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG)
    assert isinstance(parked, Deferred) and not parked.done
    assert broker.replica_manager.fetch_purgatory.watched() == 1
    produce(broker, records=batch([b"late"]))
    body = parked.body()
    p = partition_of(body)
    assert p["error_code"] == ErrorCode.NONE and p["high_watermark"] == 1
    assert stored_offsets(p["records"]) == [0]
    assert broker.replica_manager.fetch_purgatory.watched() == 0


def test_long_poll_fetch_times_out_with_an_empty_answer(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=30)
    assert isinstance(parked, Deferred)
    p = partition_of(parked.body())
    assert p["error_code"] == ErrorCode.NONE and not p["records"]


def test_long_poll_fetch_waits_for_min_bytes(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG, min_bytes=500)
    produce(broker, records=batch([b"small"]))
    assert not parked.done
    produce(broker, records=batch([b"x" * 600]))
    assert stored_offsets(partition_of(parked.body())["records"]) == [0, 1]


def test_fetch_with_enough_data_is_answered_at_once(broker):
    broker.create_topic("t")
    produce(broker)
    body = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG)
    assert isinstance(body, dict)


def test_long_poll_fetch_answered_when_its_topic_is_deleted(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG)
    broker.call(ApiKey.DELETE_TOPICS, 5, topic_names=["t"], timeout_ms=1000)
    assert partition_of(parked.body())["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_parked_fetches_answered_by_complete_all(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG)
    assert broker.replica_manager.fetch_purgatory.complete_all() == 1
    assert partition_of(parked.body())["error_code"] == ErrorCode.NONE
