"""AlterReplicaLogDirs (key 34) against a real broker on two log.dirs: raw frames,
kafka-python's ``alter_replica_log_dirs`` moving a replica that then serves a
consumer from its new dir, and v0 while playing Kafka 2.8."""

from __future__ import annotations

import dataclasses

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartitionReplica
from kafka.admin import NewTopic
from kafka.errors import LogDirNotFoundError, NoError, UnknownTopicOrPartitionError

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.integration.client_support import bootstrap
from tests.support import RawClient, make_config, running_server

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def two_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("log-dirs")
    dirs = (str(root / "a"), str(root / "b"))
    with running_server(make_config(log_store="disk", log_dirs=dirs)) as server:
        yield server, dirs


def homes(client, topic: str) -> dict[int, str]:
    """{partition: log dir} from DescribeLogDirs."""
    body = client.call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
    return {p["partition_index"]: r["log_dir"] for r in body["results"]
            for t in r["topics"] if t["name"] == topic for p in t["partitions"]}


def test_raw_frames_get_kafkas_answer_per_partition(two_dirs):
    server, (a, b) = two_dirs
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(server), request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic("raw-dirs", 2, 1)])
    finally:
        admin.close()
    with RawClient(server.bound_port()) as client:
        where = homes(client, "raw-dirs")
        assert sorted(where.values()) == [a, b]     # one partition in each dir
        other = {a: b, b: a}
        body = client.call(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, {"dirs": [
            {"path": where[0], "topics": [{"name": "raw-dirs", "partitions": [0]}]},
            {"path": other[where[1]], "topics": [{"name": "raw-dirs", "partitions": [1]}]},
            {"path": "/not/a/log/dir", "topics": [{"name": "missing", "partitions": [0]}]},
            {"path": a, "topics": [{"name": "missing", "partitions": [1]}]}]})
        got = {(r["topic_name"], p["partition_index"]): p["error_code"]
               for r in body["results"] for p in r["partitions"]}
        assert got == {("raw-dirs", 0): ErrorCode.NONE,
                       ("raw-dirs", 1): ErrorCode.NONE,
                       ("missing", 0): ErrorCode.LOG_DIR_NOT_FOUND,
                       ("missing", 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        # Partition 1 moved: both partitions are in one dir now.
        assert homes(client, "raw-dirs") == {0: where[0], 1: other[where[1]]}
        # The connection is still served.
        assert client.call(ApiKey.METADATA, 9, {
            "topics": None, "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})["brokers"]


def test_kafka_python_moves_a_replica_and_a_consumer_reads_it_from_the_new_dir(two_dirs):
    server, (a, b) = two_dirs
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(server), request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic("kp-move", 1, 1)])
        producer = KafkaProducer(bootstrap_servers=bootstrap(server))
        for i in range(5):
            producer.send("kp-move", value=b"before-%d" % i)
        producer.flush(20)
        [broker] = admin.describe_log_dirs(topic_partitions={"kp-move": [0]})
        [here] = [d["log_dir"] for d in broker["log_dirs"] if d["topics"]]
        node = server.config.node_id
        there = b if here == a else a
        replica = TopicPartitionReplica("kp-move", 0, node)
        missing = TopicPartitionReplica("kp-missing", 0, node)
        assert admin.alter_replica_log_dirs({replica: here}) == {replica: NoError}
        assert admin.alter_replica_log_dirs({replica: there, missing: here}) == {
            replica: NoError, missing: UnknownTopicOrPartitionError}
        assert admin.alter_replica_log_dirs({replica: "/nowhere"}) == {
            replica: LogDirNotFoundError}
        [broker] = admin.describe_log_dirs(topic_partitions={"kp-move": [0]})
        assert [d["log_dir"] for d in broker["log_dirs"] if d["topics"]] == [there]
        for i in range(5):
            producer.send("kp-move", value=b"after-%d" % i)
        producer.flush(20)
        producer.close()
    finally:
        admin.close()
    consumer = KafkaConsumer("kp-move", bootstrap_servers=bootstrap(server),
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    try:
        values = []
        for message in consumer:   # stops after 10 s without a record
            values.append(message.value)
            if len(values) == 10:
                break
    finally:
        consumer.close()
    assert values == [b"before-%d" % i for i in range(5)] + [b"after-%d" % i for i in range(5)]


def test_v0_is_served_only_while_playing_a_release_before_4_0():
    for release, served in (("2.8", True), ("4.2", False)):
        config = dataclasses.replace(make_config(), as_version=release)
        with running_server(config) as server, RawClient(server.bound_port()) as client:
            body = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t",
                                                        "client_software_version": "1"})
            ranges = {e["api_key"]: (e["min_version"], e["max_version"])
                      for e in body["api_keys"]}
            assert ranges[ApiKey.ALTER_REPLICA_LOG_DIRS] == ((0, 2) if served else (1, 2))
            if served:
                answer = client.call(ApiKey.ALTER_REPLICA_LOG_DIRS, 0, {"dirs": [
                    {"path": "/tmp/kafka-logs", "topics": [{"name": "none", "partitions": [0]}]}]})
                assert answer["results"] == [{"topic_name": "none", "partitions": [
                    {"partition_index": 0, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}]}]
