"""Produce (API key 0) through KafkaApis with real encoding: offsets, acks,
per-partition errors, decompression bounds, v0-v2 refusal and idempotence."""

from __future__ import annotations

import pytest

from kafka_net.network.request_channel import CloseConnectionResponse, NoOpResponse
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    Compression, batch_from_payload, compress, decode_records, split_batches)
from tests.server.conftest import batch, make_broker, produce


def test_produce_appends_and_returns_offsets(broker):
    broker.create_topic("t", 2)
    body = produce(broker, records=batch([b"a", b"b"]))
    [topic] = body["responses"]
    [p] = topic["partition_responses"]
    assert (topic["name"], p["index"], p["error_code"], p["base_offset"]) == ("t", 0, 0, 0)
    assert p["log_append_time_ms"] == -1 and p["log_start_offset"] == 0
    body = produce(broker, records=batch([b"c"]))
    assert body["responses"][0]["partition_responses"][0]["base_offset"] == 2


def test_produce_acks_all_behaves_as_acks_one(broker):
    broker.create_topic("t")
    body = produce(broker, acks=-1)
    assert body["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE


def test_produce_acks_zero_is_a_noop_response(broker):
    broker.create_topic("t")
    response = produce(broker, acks=0)
    assert isinstance(response, NoOpResponse)
    assert broker.replica_manager.partition("t", 0).log.log_end_offset == 1


def test_produce_acks_zero_with_a_bad_batch_closes_the_connection(broker):
    broker.create_topic("t")
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    assert isinstance(produce(broker, acks=0, records=bytes(bad)), CloseConnectionResponse)
    assert isinstance(produce(broker, acks=0, topic="missing"), CloseConnectionResponse)


@pytest.mark.parametrize("acks", [2, -2, 5])
def test_produce_invalid_acks(broker, acks):
    broker.create_topic("t")
    body = produce(broker, acks=acks)
    [p] = body["responses"][0]["partition_responses"]
    assert p["error_code"] == ErrorCode.INVALID_REQUIRED_ACKS
    assert broker.replica_manager.partition("t", 0).log.log_end_offset == 0


def test_produce_does_not_create_topics(broker):
    body = produce(broker, topic="never-created")
    assert body["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.metadata_cache.topic("never-created") is None


def test_produce_errors_are_per_partition(broker):
    broker.create_topic("t", 2)
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    body = broker.call(ApiKey.PRODUCE, 9, acks=1, timeout_ms=1000, topic_data=[
        {"name": "t", "partition_data": [{"index": 0, "records": bytes(bad)},
                                         {"index": 1, "records": batch()},
                                         {"index": 2, "records": batch()}]}])
    codes = [(p["index"], p["error_code"]) for p in body["responses"][0]["partition_responses"]]
    assert codes == [(0, ErrorCode.CORRUPT_MESSAGE), (1, ErrorCode.NONE),
                     (2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert body["responses"][0]["partition_responses"][0]["error_message"]


def test_produce_decompression_bombs_fail_only_their_own_partitions():
    bound = 64 * 1024
    broker = make_broker(message_max_uncompressed_bytes=bound).start()
    try:
        broker.create_topic("t", 4)
        good = batch([b"x" * 100] * 50, compression=Compression.GZIP)
        bombs = {codec: batch_from_payload(compress(codec, bytes(4 * bound)), 1,
                                           compression=codec)
                 for codec in (Compression.GZIP, Compression.ZSTD, Compression.SNAPPY)}
        body = broker.call(ApiKey.PRODUCE, 9, acks=1, timeout_ms=1000, topic_data=[
            {"name": "t", "partition_data": [
                {"index": 0, "records": bombs[Compression.GZIP]},
                {"index": 1, "records": good},
                {"index": 2, "records": bombs[Compression.ZSTD]},
                {"index": 3, "records": bombs[Compression.SNAPPY]}]}])
        parts = body["responses"][0]["partition_responses"]
        assert [p["error_code"] for p in parts] == [ErrorCode.CORRUPT_MESSAGE, ErrorCode.NONE,
                                                    ErrorCode.CORRUPT_MESSAGE,
                                                    ErrorCode.CORRUPT_MESSAGE]
        assert "message.max.uncompressed.bytes" in parts[0]["error_message"]
        stored = broker.replica_manager.read("t", 1, 0, 1 << 20, True)[1].records
        assert [r.value for b in split_batches(stored) for r in decode_records(b)] == \
            [b"x" * 100] * 50
        assert broker.replica_manager.partition("t", 0).log.log_end_offset == 0
    finally:
        broker.stop()


def test_produce_compressed_batches_of_one_request_share_a_budget():
    bound = 128 * 1024  # per request: bound // 4 = 32,768 records and headers
    broker = make_broker(message_max_uncompressed_bytes=bound).start()
    try:
        broker.create_topic("t", 4)
        many = batch([b""] * 12_000, compression=Compression.ZSTD)  # ~100 KB inflated
        plain = batch([b""] * 12_000)
        body = broker.call(ApiKey.PRODUCE, 9, acks=1, timeout_ms=1000, topic_data=[
            {"name": "t", "partition_data": [{"index": 0, "records": many},
                                             {"index": 1, "records": many},
                                             {"index": 2, "records": many},
                                             {"index": 3, "records": plain}]}])
        parts = body["responses"][0]["partition_responses"]
        assert [p["error_code"] for p in parts] == [ErrorCode.NONE, ErrorCode.NONE,
                                                    ErrorCode.CORRUPT_MESSAGE, ErrorCode.NONE]
        assert "decompression budget" in parts[2]["error_message"]
        # The budget is per request: the next one starts afresh.
        again = produce(broker, partition=2, records=many)
        assert again["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    finally:
        broker.stop()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_are_refused_with_invalid_record(broker, version):
    """The module docstring: v0-v2 are advertised but refused with INVALID_RECORD."""
    broker.create_topic("t")
    body = produce(broker, version)
    assert body["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.INVALID_RECORD
    assert broker.replica_manager.partition("t", 0).log.log_end_offset == 0


def test_produce_idempotent_retry_gets_the_original_offset(broker):
    broker.create_topic("t")
    pid = broker.call(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=None)["producer_id"]
    data = batch([b"a"], producer_id=pid, producer_epoch=0, base_sequence=0)
    first = produce(broker, records=data)["responses"][0]["partition_responses"][0]
    again = produce(broker, records=data)["responses"][0]["partition_responses"][0]
    assert first["base_offset"] == again["base_offset"] == 0
    assert again["error_code"] == ErrorCode.NONE
    gap = batch([b"b"], producer_id=pid, producer_epoch=0, base_sequence=5)
    assert produce(broker, records=gap)["responses"][0]["partition_responses"][0][
        "error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
