"""The metadata log on disk (``log.store=disk``): real restarts, clean and by
``kill -9``, a torn tail, ``metadata.log.dir``, snapshots deleting segments.

A broker is a BrokerCore over a tmp ``log.dirs`` (tests/server/conftest.py's
Broker: requests through the real wire path); a restart shuts it down (or
kills its process) and opens a new one over the same folder.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from kafka_net.server.storage.checkpoint import StorageError
from tests.server.conftest import Broker, batch, fetch, partition_of, produce
from tests.server.handlers.test_alter_user_scram_credentials import SHA512, alter, upsert
from tests.server.test_metadata_restart import (
    create, delete, grow, incremental, producer_id, set_quota, state)

REPO = Path(__file__).resolve().parents[2]


def disk_config(log_dir: Path, **overrides) -> ServerConfig:
    return dataclasses.replace(ServerConfig(log_store="disk", log_dirs=(str(log_dir),)),
                               **overrides)


def open_broker(config: ServerConfig) -> Broker:
    return Broker(config).start()


def stop(b: Broker) -> None:
    b.stop()
    b.shutdown()


def some_life(b: Broker) -> None:
    create(b, "kept", 2, [("retention.ms", "60000")])
    create(b, "gone")
    create(b, "grown")
    assert grow(b, "grown", 3) == ErrorCode.NONE
    assert delete(b, "gone") == ErrorCode.NONE
    assert incremental(b, "kept", ("cleanup.policy", 0, "compact,delete")) == ErrorCode.NONE
    assert alter(b, upsertions=[upsert("alice", SHA512, 8192)]) == {"alice": (0, None)}
    assert set_quota(b, [("user", "alice")], "producer_byte_rate", 1024.0) == 0
    b.controller.alter_broker_configs("", {"log.retention.ms": "3600000"})


def test_a_clean_restart_brings_the_metadata_and_the_data_back(tmp_path):
    config = disk_config(tmp_path)
    b = open_broker(config)
    some_life(b)
    # keyed: "kept" is compact,delete (some_life), which refuses keyless records
    produce(b, topic="kept", records=build_batch([(b"k1", b"a"), (b"k2", b"b")]))
    pids = [producer_id(b) for _ in range(2)]
    before = state(b)
    stop(b)
    assert (tmp_path / "__cluster_metadata-0").is_dir()

    b = open_broker(config)
    try:
        assert state(b) == before
        assert producer_id(b) > max(pids)
        # The partition's log is the one on disk, under the topic's id.
        body = fetch(b, partitions=(("kept", 0, 0),))
        assert partition_of(body)["high_watermark"] == 2
        # The metadata log is not a partition: neither loaded nor served.
        assert b.replica_manager.partition("__cluster_metadata", 0) is None
        assert ("__cluster_metadata", 0) not in b.log_manager.logs()
        assert b.metadata_cache.topic("__cluster_metadata") is None
    finally:
        stop(b)


CRASHING_BROKER = """
import json, sys
from tests.server.test_metadata_durable import disk_config, open_broker, some_life
from tests.server.test_metadata_restart import producer_id
b = open_broker(disk_config(sys.argv[1]))
some_life(b)
ids = {t.name: str(t.topic_id) for t in b.metadata_cache.topics()}
print(json.dumps({"ids": ids, "producer_id": producer_id(b)}), flush=True)
sys.stdin.readline()   # killed here
"""


def test_everything_acknowledged_before_a_kill_9_comes_back(tmp_path):
    child = subprocess.Popen(
        [sys.executable, "-c", CRASHING_BROKER, str(tmp_path)], cwd=REPO,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        seen = json.loads(child.stdout.readline())
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()   # a crash, not a stop

    b = open_broker(disk_config(tmp_path))
    try:
        assert {t.name: str(t.topic_id) for t in b.metadata_cache.topics()} == seen["ids"]
        assert set(seen["ids"]) == {"kept", "grown"}
        assert b.metadata_cache.topic("grown").num_partitions == 3
        assert b.apis.config_repository.topic_overrides("kept") == {
            "retention.ms": 60000, "cleanup.policy": ["compact", "delete"]}
        assert b.credential_cache.get("alice", "SCRAM-SHA-512").iterations == 8192
        assert b.quotas.enabled
        assert b.apis.config_repository.broker_configs("") == {"log.retention.ms": "3600000"}
        assert producer_id(b) > seen["producer_id"]
    finally:
        stop(b)


def test_a_torn_last_record_is_cut_and_the_rest_replayed(tmp_path, caplog):
    config = disk_config(tmp_path)
    b = open_broker(config)
    create(b, "t")
    create(b, "u", 2)
    before = state(b)
    stop(b)
    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    whole = segment.stat().st_size
    torn = b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x01\x00\xff"
    with open(segment, "ab") as f:   # the start of a batch a crash cut short
        f.write(torn)
    with caplog.at_level(logging.INFO):
        b = open_broker(config)
    try:
        assert state(b) == before
        # Cut at the last whole batch: what follows it now (the restart's own
        # PartitionChangeRecords, the leader epochs moved on) is a new batch.
        assert segment.read_bytes()[whole:whole + len(torn)] != torn
        assert "13 bytes truncated" in caplog.text   # the recovery says what it cut
        create(b, "v")   # and the log goes on from the last whole batch
    finally:
        stop(b)
    b = open_broker(config)
    try:
        assert [t.name for t in b.metadata_cache.topics()] == ["t", "u", "v"]
    finally:
        stop(b)


def test_metadata_log_dir_puts_the_metadata_log_elsewhere(tmp_path):
    config = disk_config(tmp_path / "data", metadata_log_dir=str(tmp_path / "meta"))
    b = open_broker(config)
    topic_id = create(b, "t")["topic_id"]
    stop(b)
    assert (tmp_path / "meta" / "__cluster_metadata-0").is_dir()
    assert not (tmp_path / "data" / "__cluster_metadata-0").exists()
    assert (tmp_path / "data" / "t-0").is_dir()
    b = open_broker(config)
    try:
        assert b.metadata_cache.topic("t").topic_id == topic_id
    finally:
        stop(b)


def test_a_snapshot_deletes_the_segments_before_it(tmp_path):
    config = disk_config(tmp_path, metadata_log_max_record_bytes_between_snapshots=4096)
    b = open_broker(config)
    for i in range(40):
        create(b, f"t{i}", 2)
        if i % 2:
            delete(b, f"t{i}")
    before = state(b)
    stop(b)
    folder = tmp_path / "__cluster_metadata-0"
    segments = sorted(p.name for p in folder.glob("*.log"))
    assert segments[0] != "00000000000000000000.log"   # the first segments are gone
    b = open_broker(config)
    try:
        assert state(b) == before
        assert b.metadata_log.log.log_start_offset > 0
    finally:
        stop(b)


def test_a_deleted_topic_s_id_never_comes_back(tmp_path):
    config = disk_config(tmp_path)
    b = open_broker(config)
    old = create(b, "t")["topic_id"]
    produce(b, topic="t", records=batch([b"old"]))
    assert delete(b, "t") == ErrorCode.NONE
    new = create(b, "t")["topic_id"]
    stop(b)
    b = open_broker(config)
    try:
        assert b.metadata_cache.topic("t").topic_id == new != old
        assert isinstance(new, uuid.UUID)
        # The new topic's log is a fresh one: the old record is not in it.
        body = fetch(b, partitions=(("t", 0, 0),))
        assert partition_of(body)["high_watermark"] == 0
    finally:
        stop(b)



def test_a_partition_folder_of_no_known_topic_is_reported_and_left_alone(tmp_path, caplog):
    config = disk_config(tmp_path)
    b = open_broker(config)
    create(b, "t")
    create(b, "u")
    stop(b)
    # The metadata log lost (a log dir from a build that kept none): no topic is known.
    shutil.rmtree(tmp_path / "__cluster_metadata-0")
    b = Broker(config)
    with caplog.at_level(logging.WARNING):
        b.startup()
    try:
        assert "Found 2 stray log dir(s) of no topic in the metadata log" in caplog.text
        assert "t-0, u-0" in caplog.text
        assert b.metadata_cache.topics() == []
    finally:
        b.shutdown()
    assert (tmp_path / "t-0").is_dir()


@pytest.mark.parametrize("separate", [False, True])
def test_a_second_broker_on_the_same_metadata_log_is_refused(tmp_path, separate):
    meta = str(tmp_path / "meta") if separate else ""
    config = disk_config(tmp_path / "data", metadata_log_dir=meta)
    # Separate: another log dir, but the same metadata.log.dir.
    second = disk_config(tmp_path / ("data2" if separate else "data"), metadata_log_dir=meta)
    b = open_broker(config)
    try:
        with pytest.raises(StorageError, match="Failed to acquire lock on file .lock"):
            Broker(second)
    finally:
        stop(b)
    stop(open_broker(second))   # free again once the first has stopped


def test_an_idempotent_producer_carries_on_in_a_partition_the_replay_opened(tmp_path):
    config = disk_config(tmp_path)
    b = open_broker(config)
    create(b, "t")
    pid = producer_id(b)
    first = batch([b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0)
    assert partition_of(produce(b, topic="t", records=first), key="partition_responses")[
        "error_code"] == ErrorCode.NONE
    stop(b)
    b = open_broker(config)   # partition t-0 opened by the replay of its PartitionRecord
    try:
        # A retry of the batch before the restart: its original offset, not a new one.
        again = partition_of(produce(b, topic="t", records=first), key="partition_responses")
        assert (again["error_code"], again["base_offset"]) == (ErrorCode.NONE, 0)
        following = batch([b"c"], producer_id=pid, producer_epoch=0, base_sequence=2)
        after = partition_of(produce(b, topic="t", records=following),
                             key="partition_responses")
        assert (after["error_code"], after["base_offset"]) == (ErrorCode.NONE, 2)
    finally:
        stop(b)


def test_a_restart_writes_each_leader_epoch_checkpoint_once(tmp_path, monkeypatch):
    """A replay passes every leader epoch a partition had (one more per restart);
    its leader-epoch-checkpoint is written once, at the end, with the latest."""
    from kafka_net.server.storage import unified_log

    config = disk_config(tmp_path)
    b = open_broker(config)
    assert create(b, "t", 4)["error_code"] == ErrorCode.NONE
    for _ in range(3):
        stop(b)
        b = open_broker(config)
    epoch = b.replica_manager.partition("t", 0).leader_epoch
    stop(b)
    written = []
    real = unified_log.write_atomically
    monkeypatch.setattr(unified_log, "write_atomically",
                        lambda path, data, *a: (written.append(path), real(path, data, *a)))
    b = open_broker(config)
    try:
        epochs = [p for p in written if p.endswith("leader-epoch-checkpoint")]
        assert sorted(epochs) == sorted({*epochs}) and len(epochs) == 4, epochs
        now = b.replica_manager.partition("t", 0).leader_epoch
        assert now > epoch   # led again at a new epoch (fenced, then led: two steps)
        with open(tmp_path / "t-0" / "leader-epoch-checkpoint") as fh:
            assert fh.read().splitlines()[-1] == f"{now} 0"
    finally:
        stop(b)


def test_a_failing_epoch_write_at_restart_takes_its_log_dir_offline(tmp_path, monkeypatch):
    """A disk error while the pool writes a leader-epoch checkpoint is the log dir's
    failure (Kafka's LogDirFailureChannel), found before anything is served: the
    start does not raise, and the dir is offline."""
    import errno

    from kafka_net.server.storage import unified_log

    config = disk_config(tmp_path)
    b = open_broker(config)
    assert create(b, "t", 4)["error_code"] == ErrorCode.NONE
    stop(b)
    real = unified_log.write_atomically

    def full_disk_for_t2(path, data, *a):
        if path.endswith(os.path.join("t-2", "leader-epoch-checkpoint")):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data, *a)

    monkeypatch.setattr(unified_log, "write_atomically", full_disk_for_t2)
    b = open_broker(config)
    try:
        assert b.log_manager.failure_channel.is_offline(str(tmp_path))
    finally:
        stop(b)


def test_a_restarts_checkpoints_are_written_from_a_pool_then_at_once(tmp_path, monkeypatch):
    """The restart's leader-epoch checkpoints are written together, from
    LogManager.end_replay's pool (their fsyncs share journal commits); once it
    ends, every log writes a new epoch at once again, deferring nothing."""
    import threading

    from kafka_net.server.storage import unified_log

    config = disk_config(tmp_path)
    b = open_broker(config)
    assert create(b, "t", 20)["error_code"] == ErrorCode.NONE
    stop(b)
    writers = {}
    real = unified_log.write_atomically

    def record(path, data, *a):
        writers[path] = threading.current_thread().name
        real(path, data, *a)

    monkeypatch.setattr(unified_log, "write_atomically", record)
    b = open_broker(config)
    try:
        epochs = {p: n for p, n in writers.items() if p.endswith("leader-epoch-checkpoint")}
        assert len(epochs) == 20
        assert all(n.startswith("kn-epoch-writer") for n in epochs.values()), epochs
        for partition in range(20):
            now = b.replica_manager.partition("t", partition).leader_epoch
            with open(tmp_path / f"t-{partition}" / "leader-epoch-checkpoint") as fh:
                assert fh.read().splitlines()[-1] == f"{now} 0"
        log = b.replica_manager.partition("t", 3).log
        writers.clear()
        log.leader_epoch_cache.assign(now + 5, log.log_end_offset)
        assert list(writers) == [str(tmp_path / "t-3" / "leader-epoch-checkpoint")]
        with open(tmp_path / "t-3" / "leader-epoch-checkpoint") as fh:
            assert fh.read().splitlines()[-1] == f"{now + 5} 0"
    finally:
        stop(b)
