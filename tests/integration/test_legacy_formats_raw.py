"""Legacy message sets (magic 0 and 1) on a real socket: Produce v0-v2 and Fetch v0-v3.

Playing Kafka 2.8 (``as.version``), the broker accepts legacy message sets and
stores them as one magic-2 batch (Kafka 3.x's LogValidator up-conversion), and
serves Fetch v0-v3 converting the stored batches down.  Playing nothing
(Kafka 4.x) or 4.0, Produce v0-v2 stay INVALID_RECORD and Fetch v0-v3 is
not served (the connection is closed, as for any version a broker lacks).
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    Compression, TimestampType, build_batch, compress, decode_records, read_header,
    split_batches)
from kafka_net.protocol.records.legacy import (
    LegacyRecord, build_message_set, encode_message, read_message_set)
from tests.integration.as_version_support import advertised, new_topic, server_playing
from tests.support import RawClient, fetch_body, produce_body

PRODUCE, FETCH = ApiKey.PRODUCE, ApiKey.FETCH


@pytest.fixture(scope="module")
def kafka_2_8():
    with server_playing("2.8", num_io_threads=2) as server:
        yield server


def messages(magic: int, n: int, start_ts: int = 1_700_000_000_000, key: bool = True):
    return [LegacyRecord(i, start_ts + i if magic else -1, b"k%d" % i if key else None,
                         b"v%d" % i) for i in range(n)]


def produce(client, version: int, topic: str, records: bytes, partition: int = 0,
            acks: int = 1) -> dict:
    body = client.call(PRODUCE, version, produce_body(topic, partition, records, acks=acks))
    return body["responses"][0]["partition_responses"][0]


def stored(client, topic: str, partition: int = 0, offset: int = 0) -> list[bytes]:
    """The partition's batches as stored (Fetch v4: magic 2 as it is)."""
    body = client.call(FETCH, 4, fetch_body([(topic, partition, offset)], isolation_level=0))
    answer = body["responses"][0]["partitions"][0]
    assert answer["error_code"] == 0
    return [bytes(b) for b in split_batches(answer["records"])]


# --- Produce v0-v2 ----------------------------------------------------------------------


@pytest.mark.parametrize("version, magic", [(0, 0), (1, 0), (2, 1)])
def test_produce_legacy_message_set_is_stored_as_one_magic2_batch(kafka_2_8, version, magic):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        first = produce(client, version, topic, build_message_set(messages(magic, 3), magic))
        second = produce(client, version, topic, build_message_set(messages(magic, 2), magic))
        assert (first["error_code"], first["base_offset"]) == (0, 0)
        assert (second["error_code"], second["base_offset"]) == (0, 3)
        if version == 2:
            assert first["log_append_time_ms"] == -1
        batches = stored(client, topic)
    assert len(batches) == 2
    records = decode_records(batches[0])
    assert [(r.offset, r.key, r.value) for r in records] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    expected_ts = [1_700_000_000_000 + i for i in range(3)] if magic else [-1, -1, -1]
    assert [r.timestamp for r in records] == expected_ts
    assert read_header(batches[0]).producer_id == -1


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_produce_compressed_wrapper_keeps_its_codec(kafka_2_8, codec):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        answer = produce(client, 2, topic,
                         build_message_set(messages(1, 4), 1, compression=codec))
        assert answer["error_code"] == 0
        (batch,) = stored(client, topic)
    assert read_header(batch).compression == codec
    assert [r.value for r in decode_records(batch)] == [b"v%d" % i for i in range(4)]


def test_produce_uses_the_topics_compression_type(kafka_2_8):
    topic = new_topic(kafka_2_8, compression_type="gzip")
    with RawClient(kafka_2_8.bound_port()) as client:
        assert produce(client, 0, topic, build_message_set(messages(0, 2), 0))["error_code"] == 0
        (batch,) = stored(client, topic)
    assert read_header(batch).compression == Compression.GZIP


def test_produce_v2_log_append_time_topic_answers_the_time(kafka_2_8):
    topic = new_topic(kafka_2_8, message_timestamp_type="LogAppendTime")
    with RawClient(kafka_2_8.bound_port()) as client:
        answer = produce(client, 2, topic, build_message_set(messages(1, 2), 1))
        assert answer["error_code"] == 0 and answer["log_append_time_ms"] > 0
        (batch,) = stored(client, topic)
    header = read_header(batch)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in decode_records(batch)} == {answer["log_append_time_ms"]}


def test_corrupt_crc_fails_that_partition_only(kafka_2_8):
    topic = new_topic(kafka_2_8, partitions=2)
    good = build_message_set(messages(1, 2), 1)
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    body = produce_body(topic, 0, bytes(bad))
    body["topic_data"][0]["partition_data"].append({"index": 1, "records": good})
    with RawClient(kafka_2_8.bound_port()) as client:
        answers = client.call(PRODUCE, 2, body)["responses"][0]["partition_responses"]
        assert [(a["index"], a["error_code"]) for a in answers] == [
            (0, ErrorCode.CORRUPT_MESSAGE), (1, ErrorCode.NONE)]
        assert len(stored(client, topic, partition=1)) == 1


def test_compressed_wrapper_with_corrupt_inner_crc_is_corrupt_message(kafka_2_8):
    topic = new_topic(kafka_2_8)
    inner = bytearray(encode_message(0, 1, 0, 5, b"k", b"v"))
    inner[-1] ^= 1
    wrapper = encode_message(0, 1, Compression.GZIP, 5, None,
                             compress(Compression.GZIP, bytes(inner)))
    with RawClient(kafka_2_8.bound_port()) as client:
        assert produce(client, 2, topic, wrapper)["error_code"] == ErrorCode.CORRUPT_MESSAGE


def test_two_compressed_wrappers_are_invalid_record(kafka_2_8):
    topic = new_topic(kafka_2_8)
    wrapper = build_message_set(messages(1, 2), 1, compression=Compression.GZIP)
    with RawClient(kafka_2_8.bound_port()) as client:
        assert produce(client, 2, topic, wrapper + wrapper)["error_code"] == \
            ErrorCode.INVALID_RECORD


def test_compacted_topic_needs_keys(kafka_2_8):
    topic = new_topic(kafka_2_8, cleanup_policy="compact")
    with RawClient(kafka_2_8.bound_port()) as client:
        keyless = build_message_set(messages(1, 2, key=False), 1)
        assert produce(client, 2, topic, keyless)["error_code"] == ErrorCode.INVALID_RECORD
        keyed = build_message_set(messages(1, 2), 1)
        assert produce(client, 2, topic, keyed)["error_code"] == ErrorCode.NONE


def test_max_message_bytes_bounds_each_message(kafka_2_8):
    topic = new_topic(kafka_2_8, max_message_bytes="200")
    big = build_message_set([LegacyRecord(0, 1, None, b"x" * 300)], 1)
    with RawClient(kafka_2_8.bound_port()) as client:
        assert produce(client, 2, topic, big)["error_code"] == ErrorCode.MESSAGE_TOO_LARGE


def test_magic2_batch_in_produce_v2_is_accepted(kafka_2_8):
    """Kafka does not check the magic below Produce v3 (ProduceRequest.validateRecords)."""
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        answer = produce(client, 2, topic, build_batch([(b"k", b"v")]))
        assert (answer["error_code"], answer["base_offset"]) == (0, 0)


def test_acks_0_appends_without_an_answer(kafka_2_8):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        client.send(PRODUCE, 0, produce_body(topic, 0, build_message_set(messages(0, 1), 0),
                                             acks=0))
        # the next answer on the connection is the fetch's: the produce had none
        assert len(stored(client, topic)) == 1


@pytest.mark.parametrize("release", [None, "4.0"])
def test_produce_v0_v2_stay_refused_without_legacy_formats(release):
    with server_playing(release) as server:
        topic = new_topic(server)
        with RawClient(server.bound_port()) as client:
            for version, magic in ((0, 0), (1, 0), (2, 1)):
                answer = produce(client, version, topic,
                                 build_message_set(messages(magic, 1), magic))
                assert answer["error_code"] == ErrorCode.INVALID_RECORD


# --- Fetch v0-v3 ------------------------------------------------------------------------


def fetch_legacy(client, version: int, topic: str, offset: int = 0, partition: int = 0,
                 **limits) -> dict:
    body = client.call(FETCH, version, fetch_body([(topic, partition, offset)], **limits))
    return body["responses"][0]["partitions"][0]


def produce_v3(client, topic: str, records, version: int = 3, **kw) -> int:
    body = client.call(PRODUCE, version, produce_body(topic, 0, build_batch(records, **kw)))
    answer = body["responses"][0]["partition_responses"][0]
    assert answer["error_code"] == 0
    return answer["base_offset"]


@pytest.mark.parametrize("version, magic", [(0, 0), (1, 0), (2, 1), (3, 1)])
def test_fetch_down_converts_stored_batches(kafka_2_8, version, magic):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        produce_v3(client, topic, [(b"k0", b"v0", [("h", b"x")], 1000), (None, b"v1", (), 1001)])
        produce_v3(client, topic, [(b"k2", b"v2", (), 1002)])
        answer = fetch_legacy(client, version, topic, offset=1)
    assert answer["error_code"] == 0 and answer["high_watermark"] == 3
    ts = (lambda t: t) if magic else (lambda t: -1)
    # offset 0 is below the fetch offset in an uncompressed batch: skipped
    assert read_message_set(answer["records"]) == [
        LegacyRecord(1, ts(1001), None, b"v1"), LegacyRecord(2, ts(1002), b"k2", b"v2")]
    first_magic = answer["records"][16]
    assert first_magic == magic


def test_fetch_v2_keeps_the_batch_codec_and_reads_produced_legacy_messages(kafka_2_8):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        produce(client, 2, topic, build_message_set(messages(1, 3), 1,
                                                    compression=Compression.SNAPPY))
        answer = fetch_legacy(client, 2, topic)
    records = bytes(answer["records"])
    assert records[17] & 0x07 == Compression.SNAPPY   # one snappy wrapper
    assert read_message_set(records) == messages(1, 3)


def test_fetch_v3_zstd_batch_is_unsupported_compression_type(kafka_2_8):
    topic = new_topic(kafka_2_8, partitions=2)
    with RawClient(kafka_2_8.bound_port()) as client:
        produce_v3(client, topic, [(None, b"z")], version=7, compression=Compression.ZSTD)
        body = client.call(PRODUCE, 3, produce_body(topic, 1, build_batch([(None, b"p")])))
        assert body["responses"][0]["partition_responses"][0]["error_code"] == 0
        request = fetch_body([(topic, 0, 0), (topic, 1, 0)])
        answers = client.call(FETCH, 3, request)["responses"][0]["partitions"]
    assert answers[0]["error_code"] == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert answers[1]["error_code"] == 0
    assert read_message_set(answers[1]["records"]) == [LegacyRecord(0, -1, None, b"p")]


def test_fetch_drops_control_batches(kafka_2_8):
    """A transaction's records are read uncommitted below v4; its marker is not sent."""
    topic = new_topic(kafka_2_8)
    kafka_2_8.apis.replica_manager.append_txn_marker(topic, 0, bytearray(build_batch(
        [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")], control=True,
        producer_id=7, producer_epoch=0)), 7, 0, True)
    with RawClient(kafka_2_8.bound_port()) as client:
        produce_v3(client, topic, [(None, b"after")])
        answer = fetch_legacy(client, 1, topic)
    assert read_message_set(answer["records"]) == [LegacyRecord(1, -1, None, b"after")]


def test_fetch_v3_respects_max_bytes_at_whole_messages(kafka_2_8):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        # one stored batch of 20 one-byte records, 221 bytes; as magic 1 messages
        # 20 x 35 bytes (12 of log overhead, 22 of message header, 1 of value)
        produce_v3(client, topic, [(None, b"%d" % (i % 10), (), i) for i in range(20)])
        produce_v3(client, topic, [(None, b"x", (), 20)])
        one = fetch_legacy(client, 3, topic, max_bytes=1)
        assert [r.offset for r in read_message_set(one["records"])] == [0]   # the first always
        cut = fetch_legacy(client, 3, topic, max_bytes=300)
        assert len(cut["records"]) == 8 * 35
        assert [r.offset for r in read_message_set(cut["records"])] == list(range(8))
        per_partition = fetch_legacy(client, 3, topic, partition_max_bytes=100)
        assert [r.offset for r in read_message_set(per_partition["records"])] == [0, 1]


def test_api_versions_advertises_fetch_from_v0_at_2_8(kafka_2_8):
    with RawClient(kafka_2_8.bound_port()) as client:
        ranges = advertised(client)
    assert ranges[FETCH] == (0, 12) and ranges[PRODUCE] == (0, 9)


@pytest.mark.parametrize("release", [None, "4.0"])
def test_fetch_v0_v3_are_not_served_without_legacy_formats(release):
    with server_playing(release) as server:
        topic = new_topic(server)
        with RawClient(server.bound_port()) as client:
            assert advertised(client)[FETCH][0] == 4
            client.send(FETCH, 3, fetch_body([(topic, 0, 0)]))
            assert client.is_closed_by_server()


def test_fetch_v1_down_converts_from_segment_files(tmp_path):
    """The durable log answers with a file region; it is read and converted."""
    with server_playing("3.9", log_store="disk", log_dirs=(str(tmp_path),)) as server:
        topic = new_topic(server)
        with RawClient(server.bound_port()) as client:
            produce(client, 0, topic, build_message_set(messages(0, 3), 0,
                                                        compression=Compression.GZIP))
            answer = fetch_legacy(client, 1, topic)
    assert read_message_set(answer["records"]) == messages(0, 3)


# --- ListOffsets v0 (the consumers of the legacy formats look offsets up with it) ---------


def list_offsets_v0(client, topic: str, timestamp: int, max_num_offsets: int = 1) -> dict:
    body = client.call(ApiKey.LIST_OFFSETS, 0, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp,
                                        "max_num_offsets": max_num_offsets}]}]})
    return body["topics"][0]["partitions"][0]


def test_list_offsets_v0_answers_old_style_offsets(kafka_2_8):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        empty = list_offsets_v0(client, topic, -1)
        assert (empty["error_code"], empty["old_style_offsets"]) == (0, [0])
        for i in range(3):
            produce_v3(client, topic, [(None, b"x", (), 1_000 + i)])
        assert list_offsets_v0(client, topic, -1)["old_style_offsets"] == [3]
        assert list_offsets_v0(client, topic, -1, 10)["old_style_offsets"] == [3, 0]
        assert list_offsets_v0(client, topic, -2, 10)["old_style_offsets"] == [0]
        # the one segment's newest record is at 1002: before it, no offset
        assert list_offsets_v0(client, topic, 1_001, 10)["old_style_offsets"] == []
        assert list_offsets_v0(client, topic, 1_002, 10)["old_style_offsets"] == [0]
        refused = list_offsets_v0(client, topic, -3)
        assert refused["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        unknown = list_offsets_v0(client, "no-such-topic", -1)
        assert unknown["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("release", [None, "4.0"])
def test_list_offsets_v0_is_not_served_without_legacy_formats(release):
    with server_playing(release) as server:
        topic = new_topic(server)
        with RawClient(server.bound_port()) as client:
            client.send(ApiKey.LIST_OFFSETS, 0, {"replica_id": -1, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1,
                                                "max_num_offsets": 1}]}]})
            assert client.is_closed_by_server()


def test_acks_0_with_a_corrupt_message_closes_the_connection(kafka_2_8):
    """As for any acks=0 failure: closing is how the producer learns of it."""
    topic = new_topic(kafka_2_8)
    bad = bytearray(build_message_set(messages(0, 1), 0))
    bad[-1] ^= 0xFF
    with RawClient(kafka_2_8.bound_port()) as client:
        client.send(PRODUCE, 0, produce_body(topic, 0, bytes(bad), acks=0))
        assert client.is_closed_by_server()
