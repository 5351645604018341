"""The client-facing API versions Kafka 4.0 removed (KIP-896), on a real socket.

Playing a release before 4.0 (``as.version``), kafka-net serves them as that
release's broker did (each handler's ``LEGACY_LOW``); unset or playing 4.0 it
does not: ApiVersions leaves them out and a request at one closes the
connection, as for any version a broker lacks.  (Produce v0-v2, Fetch v0-v3
and ListOffsets v0, the legacy message formats, are in
test_legacy_formats_raw.py.)
"""

from __future__ import annotations

import pytest

from kafka_net.protocol import decode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from kafka_net.server.topic_config import parse_value
from tests.support import RawClient, make_config, produce_body, running_server

OFFSET_FOR_LEADER_EPOCH = ApiKey.OFFSET_FOR_LEADER_EPOCH
DESCRIBE_LOG_DIRS = ApiKey.DESCRIBE_LOG_DIRS


def server_playing(release: str | None, **overrides):
    return running_server(make_config(as_version=release, num_network_threads=1,
                                      num_io_threads=1, **overrides))


@pytest.fixture(scope="module")
def kafka_2_8():
    with server_playing("2.8") as server:
        yield server


@pytest.fixture(scope="module")
def kafka_3_9():
    with server_playing("3.9") as server:
        yield server


def advertised(client) -> dict[int, tuple[int, int]]:
    """{api key: (min, max)} from the broker's ApiVersions answer."""
    body = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t",
                                                "client_software_version": "1"})
    return {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}


_topics = iter(range(10_000))


def new_topic(server, partitions: int = 1, **configs) -> str:
    name = f"kip896-{next(_topics)}"
    server.apis.create_topic(name, partitions, {
        k.replace("_", "."): parse_value(k.replace("_", "."), v) for k, v in configs.items()})
    return name


def produce(client, topic: str, n: int, partition: int = 0) -> None:
    batch = build_batch([(None, b"v%d" % i, (), 1_000 + i) for i in range(n)])
    body = client.call(ApiKey.PRODUCE, 3, produce_body(topic, partition, batch))
    assert body["responses"][0]["partition_responses"][0]["error_code"] == 0


# Each removed version, with a request body valid at it: refused unset and at 4.0.
REMOVED = {
    (OFFSET_FOR_LEADER_EPOCH, 0): lambda t: {"topics": [
        {"topic": t, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
    (OFFSET_FOR_LEADER_EPOCH, 1): lambda t: {"topics": [
        {"topic": t, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
    (DESCRIBE_LOG_DIRS, 0): lambda t: {"topics": None},
}


def test_api_versions_advertises_the_removed_versions_before_4_0(kafka_2_8, kafka_3_9):
    with RawClient(kafka_2_8.bound_port()) as client:
        at_2_8 = advertised(client)
    with RawClient(kafka_3_9.bound_port()) as client:
        at_3_9 = advertised(client)
    assert at_2_8[OFFSET_FOR_LEADER_EPOCH] == at_3_9[OFFSET_FOR_LEADER_EPOCH] == (0, 4)
    assert at_2_8[DESCRIBE_LOG_DIRS] == (0, 2) and at_3_9[DESCRIBE_LOG_DIRS] == (0, 4)


@pytest.mark.parametrize("release", [None, "4.0"])
def test_the_removed_versions_are_not_served_from_4_0(release):
    with server_playing(release) as server:
        topic = new_topic(server)
        with RawClient(server.bound_port()) as client:
            ranges = advertised(client)
        for (key, version), body in REMOVED.items():
            assert ranges[key][0] > version
            with RawClient(server.bound_port()) as client:
                client.send(key, version, body(topic))
                assert client.is_closed_by_server(), (key, version)


# --- OffsetForLeaderEpoch v0-v1 -------------------------------------------------------------


def end_offset(client, version: int, topic: str, epoch: int, partition: int = 0
               ) -> tuple[dict, int]:
    """(the partition's answer, the response frame's size)."""
    client.send(OFFSET_FOR_LEADER_EPOCH, version, {"topics": [
        {"topic": topic, "partitions": [{"partition": partition, "leader_epoch": epoch}]}]})
    frame = client.recv_frame()
    _, body = decode_response(OFFSET_FOR_LEADER_EPOCH, version, frame)
    return body["topics"][0]["partitions"][0], len(frame)


@pytest.mark.parametrize("version", [0, 1])
def test_offset_for_leader_epoch_v0_v1_answer_the_epochs_end_offset(kafka_2_8, version):
    topic = new_topic(kafka_2_8)
    with RawClient(kafka_2_8.bound_port()) as client:
        produce(client, topic, 3)
        current, size = end_offset(client, version, topic, 0)
        newer, _ = end_offset(client, version, topic, 7)
        unknown, _ = end_offset(client, version, "no-such-topic", 0)
        _, size_at_v2 = end_offset(client, 2, topic, 0)
    assert (current["error_code"], current["end_offset"]) == (0, 3)
    assert (newer["error_code"], newer["end_offset"]) == (0, -1)   # UNDEFINED_EPOCH_OFFSET
    assert unknown["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # v2 added throttle_time_ms (4 bytes), v1 leader_epoch (4 bytes): v0 has neither
    assert size_at_v2 - size == (8 if version == 0 else 4)
    if version == 1:
        assert (current["leader_epoch"], newer["leader_epoch"]) == (0, -1)


# --- DescribeLogDirs v0 ---------------------------------------------------------------------


def test_describe_log_dirs_v0_lists_the_partitions_and_their_sizes(kafka_3_9):
    topic = new_topic(kafka_3_9, partitions=2)
    with RawClient(kafka_3_9.bound_port()) as client:
        produce(client, topic, 2, partition=1)
        everything = client.call(DESCRIBE_LOG_DIRS, 0, {"topics": None})
        one = client.call(DESCRIBE_LOG_DIRS, 0, {"topics": [
            {"topic": topic, "partitions": [1, 5]}]})
    [result] = everything["results"]
    assert result["error_code"] == 0 and topic in {t["name"] for t in result["topics"]}
    [only] = one["results"][0]["topics"]
    [partition] = only["partitions"]   # partition 5 does not exist: left out
    assert (only["name"], partition["partition_index"]) == (topic, 1)
    assert partition["partition_size"] > 0 and partition["is_future_key"] is False
