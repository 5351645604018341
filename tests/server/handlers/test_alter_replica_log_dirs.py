"""AlterReplicaLogDirs (key 34) through the API layer: Kafka's per-partition answers
(ReplicaManager.alterReplicaLogDirs), on the in-memory log and on two log.dirs."""

from __future__ import annotations

import logging
import os
import shutil

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers.describe_log_dirs import DEFAULT_LOG_DIR
from tests.server.conftest import Broker
from tests.server.handlers.conftest import create_topic, produce, versions
from tests.server.handlers.test_acl_checks import secured_broker


def alter(broker, *dirs, version: int = 2) -> dict:
    """dirs: (path, {topic: [partitions]}) pairs; {(topic, partition): error code}."""
    body = broker.call(ApiKey.ALTER_REPLICA_LOG_DIRS, version, dirs=[
        {"path": path, "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
        for path, topics in dirs])
    return {(r["topic_name"], p["partition_index"]): p["error_code"]
            for r in body["results"] for p in r["partitions"]}


def where(broker) -> dict:
    """{(topic, partition): log dir} as DescribeLogDirs reports them."""
    body = broker.call(ApiKey.DESCRIBE_LOG_DIRS, 4, topics=None)
    return {(t["name"], p["partition_index"]): r["log_dir"]
            for r in body["results"] for t in r["topics"] for p in t["partitions"]}


# -- the in-memory log: every partition in the first log dir ------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_REPLICA_LOG_DIRS))
def test_a_partition_already_in_the_dir_is_answered_none(broker, version):
    create_topic(broker, partitions=2)
    assert alter(broker, (DEFAULT_LOG_DIR, {"t": [0, 1]}), version=version) == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}


def test_a_path_that_is_not_a_log_dir_is_log_dir_not_found(broker, caplog):
    create_topic(broker)
    with caplog.at_level(logging.WARNING):
        got = alter(broker, ("/elsewhere", {"t": [0], "missing": [0]}),
                    (DEFAULT_LOG_DIR + "/", {"u": [3]}))
    # Checked before the partition: an unknown one gets the same answer.
    assert got == {("t", 0): ErrorCode.LOG_DIR_NOT_FOUND,
                   ("missing", 0): ErrorCode.LOG_DIR_NOT_FOUND,
                   ("u", 3): ErrorCode.LOG_DIR_NOT_FOUND}   # compared as sent, as Kafka does
    assert "Unable to alter log dirs for t-0 to /elsewhere" in caplog.text


def test_an_unknown_partition_is_unknown_topic_or_partition(broker):
    create_topic(broker)
    assert alter(broker, (DEFAULT_LOG_DIR, {"t": [0, 5], "missing": [0]})) == {
        ("t", 0): ErrorCode.NONE, ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_a_topic_too_long_for_a_future_log_folder_is_invalid_topic(broker):
    # "<topic>-0." + 32 hex digits + "-future" over 255 characters: 213 is the longest.
    longest, too_long = "a" * 213, "a" * 214
    create_topic(broker, name=longest)
    create_topic(broker, name=too_long)
    assert alter(broker, (DEFAULT_LOG_DIR, {longest: [0], too_long: [0]})) == {
        (longest, 0): ErrorCode.NONE, (too_long, 0): ErrorCode.INVALID_TOPIC_EXCEPTION}


def test_a_partition_named_twice_is_answered_once_for_the_last_dir(broker):
    create_topic(broker)
    body = broker.call(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, dirs=[
        {"path": DEFAULT_LOG_DIR, "topics": [{"name": "t", "partitions": [0]}]},
        {"path": "/elsewhere", "topics": [{"name": "t", "partitions": [0]}]}])
    assert body["results"] == [{"topic_name": "t", "partitions": [
        {"partition_index": 0, "error_code": ErrorCode.LOG_DIR_NOT_FOUND}]}]


def test_without_alter_on_the_cluster_every_partition_is_refused():
    b = secured_broker()
    try:
        b.principal = "User:nobody"
        body = b.call(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, dirs=[
            {"path": DEFAULT_LOG_DIR, "topics": [{"name": "t", "partitions": [0, 1]}]},
            {"path": "/elsewhere", "topics": [{"name": "t", "partitions": [0]}]}])
    finally:
        b.stop()
    # Kafka's getErrorResponse: one result per topic of each dir, nothing merged.
    refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert body["results"] == [
        {"topic_name": "t", "partitions": [{"partition_index": 0, "error_code": refused},
                                           {"partition_index": 1, "error_code": refused}]},
        {"topic_name": "t", "partitions": [{"partition_index": 0, "error_code": refused}]}]


# -- two log.dirs on disk -------------------------------------------------------------------


@pytest.fixture
def two_dirs(tmp_path):
    dirs = (str(tmp_path / "a"), str(tmp_path / "b"))
    b = Broker(ServerConfig(log_store="disk", log_dirs=dirs))
    b.startup()
    try:
        yield b, dirs
    finally:
        b.shutdown()


def test_on_disk_a_partition_in_its_dir_is_none_and_stays(two_dirs):
    b, (a, other) = two_dirs
    create_topic(b, partitions=2)   # the least-used dir first: one partition in each
    homes = where(b)
    assert sorted(homes.values()) == [a, other]
    assert alter(b, (homes[("t", 0)], {"t": [0]}), (homes[("t", 1)], {"t": [1]})) == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
    assert where(b) == homes


def test_on_disk_a_move_to_the_other_dir_is_refused_and_nothing_moves(two_dirs, caplog):
    """kafka-net does not move replicas between log dirs: Kafka's answer when it
    cannot create the future log, and a WARN saying why."""
    b, (a, other) = two_dirs
    create_topic(b)
    assert produce(b)["error_code"] == ErrorCode.NONE
    here = where(b)[("t", 0)]
    there = other if here == a else a
    with caplog.at_level(logging.WARNING):
        assert alter(b, (there, {"t": [0]})) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    assert "does not move replicas between log dirs" in caplog.text
    assert where(b) == {("t", 0): here}
    assert os.listdir(there) == [n for n in os.listdir(there) if not n.startswith("t-0")]
    assert produce(b)["error_code"] == ErrorCode.NONE   # the partition is served as before


def test_on_disk_an_offline_destination_is_kafka_storage_error(two_dirs):
    b, (a, other) = two_dirs
    create_topic(b)
    here = where(b)[("t", 0)]
    there = other if here == a else a
    shutil.rmtree(there)
    b.log_manager.failure_channel.failure(there, "a test", OSError(5, "Input/output error"))
    assert alter(b, (there, {"t": [0]}), (here, {"t": [1]})) == {
        ("t", 0): ErrorCode.KAFKA_STORAGE_ERROR,
        ("t", 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
