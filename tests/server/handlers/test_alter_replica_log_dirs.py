"""AlterReplicaLogDirs (key 34) through the API layer: Kafka's per-partition answers
(ReplicaManager.alterReplicaLogDirs), on the in-memory log and on two log.dirs."""

from __future__ import annotations

import logging
import os
import shutil
import threading

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch, read_header, split_batches
from kafka_net.server.handlers.describe_log_dirs import DEFAULT_LOG_DIR
from kafka_net.server.replica_manager import READ_COMMITTED
from kafka_net.server.transaction.markers import build_marker_batch
from tests.server.conftest import Broker
from tests.server.handlers.conftest import create_topic, produce, records, versions
from tests.server.handlers.test_acl_checks import secured_broker
from tests.server.storage_support import as_bytes
from tests.server.test_log_dirs import txn_batch


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


def stored(b, partition: int = 0) -> bytes:
    code, result = b.replica_manager.read("t", partition, 0, 1 << 20, True)
    assert code == ErrorCode.NONE
    return as_bytes(result.records)


def other_dir(dirs, here: str) -> str:
    a, b = dirs
    return b if here == a else a


def test_on_disk_a_move_to_the_other_dir_copies_the_log_and_serves_it_from_there(two_dirs):
    b, dirs = two_dirs
    create_topic(b)
    for ts in (1000, 2000, 3000):
        assert produce(b, data=records(ts))["error_code"] == ErrorCode.NONE
    before = stored(b)
    here = where(b)[("t", 0)]
    there = other_dir(dirs, here)
    assert alter(b, (there, {"t": [0]})) == {("t", 0): ErrorCode.NONE}
    assert where(b) == {("t", 0): there}
    assert stored(b) == before
    assert os.path.isdir(os.path.join(there, "t-0"))
    # The old folder waits for file.delete.delay.ms under its -delete name.
    assert not os.path.exists(os.path.join(here, "t-0"))
    assert [n for n in os.listdir(here) if n.startswith("t-0.")][0].endswith("-delete")
    appended = produce(b, data=records(4000))
    assert (appended["error_code"], appended["base_offset"]) == (ErrorCode.NONE, 3)
    assert stored(b).startswith(before) and len(stored(b)) > len(before)
    assert alter(b, (there, {"t": [0]})) == {("t", 0): ErrorCode.NONE}   # already there


def test_on_disk_a_moved_log_comes_back_from_its_new_dir_after_a_restart(tmp_path):
    dirs = (str(tmp_path / "a"), str(tmp_path / "b"))
    first = Broker(ServerConfig(log_store="disk", log_dirs=dirs))
    first.startup()
    create_topic(first)
    produce(first, data=records(1000, 2000))
    here = where(first)[("t", 0)]
    there = other_dir(dirs, here)
    assert alter(first, (there, {"t": [0]})) == {("t", 0): ErrorCode.NONE}
    produce(first, data=records(3000))
    contents = stored(first)
    first.shutdown()
    again = Broker(ServerConfig(log_store="disk", log_dirs=dirs))
    again.startup()
    try:
        assert where(again) == {("t", 0): there}
        assert stored(again) == contents
        assert not [n for n in os.listdir(here) if n.startswith("t-0")]
    finally:
        again.shutdown()


def test_the_in_memory_log_is_not_moved(tmp_path, caplog):
    dirs = (str(tmp_path / "a"), str(tmp_path / "b"))
    b = Broker(ServerConfig(log_store="memory", log_dirs=dirs))
    create_topic(b)
    with caplog.at_level(logging.WARNING):
        assert alter(b, (dirs[1], {"t": [0]})) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    assert "has no folder to move" in caplog.text
    assert alter(b, (dirs[0], {"t": [0]})) == {("t", 0): ErrorCode.NONE}


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


def test_on_disk_a_failed_copy_takes_the_destination_offline_and_the_log_stays(two_dirs):
    """The rename onto the partition's folder name fails (a file sits there): the
    destination dir goes offline, its -future copy is removed, and the partition
    is served from where it was."""
    b, dirs = two_dirs
    create_topic(b)
    produce(b)
    here = where(b)[("t", 0)]
    there = other_dir(dirs, here)
    with open(os.path.join(there, "t-0"), "w") as blocker:
        blocker.write("not a log")
    assert alter(b, (there, {"t": [0]})) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    assert b.log_manager.failure_channel.is_offline(there)
    assert not [n for n in os.listdir(there) if n.endswith("-future")]
    assert where(b)[("t", 0)] == here
    assert produce(b)["error_code"] == ErrorCode.NONE



def test_on_disk_a_compacted_log_moves_with_its_cleaner_checkpoint(tmp_path, caplog):
    """The cleaner leaves gaps between segments; moved, and after a restart, they are
    still known as the cleaner's, not named as missing segments."""
    caplog.set_level(logging.INFO)
    dirs = (str(tmp_path / "a"), str(tmp_path / "b"))
    first = Broker(ServerConfig(log_store="disk", log_dirs=dirs))
    first.startup()
    create_topic(first, configs={"cleanup.policy": "compact", "internal.segment.bytes": "300",
                                 "min.cleanable.dirty.ratio": "0.0"})
    for i in range(12):
        batch = build_batch([(b"k%d" % (i % 2), b"v%d" % i, (), 1000 + i)])
        assert produce(first, data=batch)["error_code"] == ErrorCode.NONE
    assert first.log_cleaner.try_clean_filthiest_log()
    contents = stored(first)
    there = other_dir(dirs, where(first)[("t", 0)])
    assert alter(first, (there, {"t": [0]})) == {("t", 0): ErrorCode.NONE}
    assert stored(first) == contents
    first.shutdown()
    again = Broker(ServerConfig(log_store="disk", log_dirs=dirs))
    again.startup()
    try:
        assert where(again) == {("t", 0): there} and stored(again) == contents
    finally:
        again.shutdown()
    assert "Swapping in cleaned segment" in caplog.text
    assert "No segment holds offsets" not in caplog.text


def test_on_disk_transactions_move_with_the_log(two_dirs):
    """An aborted transaction (.txnindex) and an open one (the producer snapshot
    written for the copy): read_committed sees the same LSO and aborted list after
    the move, and the open transaction commits in the moved log."""
    b, dirs = two_dirs
    rm = b.replica_manager
    rm.transaction_verifier = None
    create_topic(b)
    for seq in range(3):                                   # pid 5: aborted, offsets 0-2
        assert rm.append_records("t", 0, txn_batch(5, seq), 9).error_code == 0
    rm.append_txn_marker("t", 0, build_marker_batch(5, 0, False, 1000), 5, 0, False)
    for seq in range(2):                                   # pid 6: still open, 4-5
        assert rm.append_records("t", 0, txn_batch(6, seq), 9).error_code == 0
    there = other_dir(dirs, where(b)[("t", 0)])
    assert alter(b, (there, {"t": [0]})) == {("t", 0): ErrorCode.NONE}
    after = rm.read("t", 0, 0, 1 << 20, True, READ_COMMITTED)[1]
    assert after.last_stable_offset == 4 and after.aborted_transactions == [(5, 0)]
    rm.append_txn_marker("t", 0, build_marker_batch(6, 0, True, 1000), 6, 0, True)
    assert rm.last_stable_offset("t", 0) == 7
    # The sequence of pid 6 goes on where it was: the producer state moved too.
    assert rm.append_records("t", 0, txn_batch(6, 2), 9).error_code == ErrorCode.NONE


def test_on_disk_appends_during_moves_all_land_in_the_log_that_stays(two_dirs):
    """A producer thread appends while the partition moves back and forth: every
    acknowledged batch is in the final log, at its offset, none twice."""
    b, dirs = two_dirs
    create_topic(b)
    rm = b.replica_manager
    acknowledged: list[int] = []
    failures: list[object] = []

    def produce_batches() -> None:
        for i in range(300):
            result = rm.append_records("t", 0, records(10_000 + i), 9)
            if result.error_code != ErrorCode.NONE:
                failures.append(result)
                return
            acknowledged.append(result.base_offset)

    producer = threading.Thread(target=produce_batches, name="test-producer")
    producer.start()
    try:
        for move in range(6):
            there = other_dir(dirs, where(b)[("t", 0)])
            assert alter(b, (there, {"t": [0]})) == {("t", 0): ErrorCode.NONE}, move
    finally:
        producer.join(timeout=120)
    assert not producer.is_alive() and not failures
    assert acknowledged == list(range(300))
    batches = split_batches(stored(b))
    assert [read_header(batch).base_offset for batch in batches] == list(range(300))
