"""LogManager with log.store=disk: log.dirs, meta.properties, checkpoints, the clean-shutdown
marker, loading with and without recovery, and a BrokerCore whose data survives a restart."""

from __future__ import annotations

import logging
import os
import uuid

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from kafka_net.server.broker import BrokerCore
from kafka_net.server.log_manager import LogDirsConfig, LogManager
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.storage.checkpoint import StorageError, read_properties
from kafka_net.server.storage.segment import LogSegment, SegmentConfig
from tests.server.storage_support import read_all

TOPIC_ID = uuid.UUID(int=42)


def manager(*dirs, **kw) -> LogManager:
    return LogManager(ReplicaManager(), 300_000, 30_000,
                      LogDirsConfig(tuple(str(d) for d in dirs), node_id=1, cluster_id="c1", **kw),
                      lambda topic: SegmentConfig(segment_bytes=2000))


def crash(lm: LogManager) -> None:
    """What SIGKILL leaves: files as written, no flush, no checkpoint, no marker."""
    lm._task.shutdown()
    lm._flusher.shutdown()
    lm.scheduler.shutdown(run_pending=False)
    for lg in lm.logs().values():
        lg.local.close()
    for fd in lm._locks:
        os.close(fd)
    lm._locks.clear()


def fill(lg, batches: int, start: int = 0) -> None:
    for i in range(start, start + batches):
        lg.append(bytearray(build_batch([(None, b"v" * 50, (), 1000 + i)] * 3)), 3, 1000 + i)


def test_startup_formats_the_log_dir_and_locks_it(tmp_path):
    lm = manager(tmp_path)
    lm.startup()
    props = read_properties(str(tmp_path / "meta.properties"))
    assert props["version"] == "1" and props["node.id"] == "1" and props["cluster.id"] == "c1"
    assert len(props["directory.id"]) == 22          # a Kafka Uuid in base64
    with pytest.raises(StorageError, match="Failed to acquire lock on file .lock"):
        manager(tmp_path).load_logs()
    lm.shutdown()
    again = manager(tmp_path)
    again.load_logs()                                # the lock was released
    assert read_properties(str(tmp_path / "meta.properties"))["directory.id"] == \
        props["directory.id"]
    again.shutdown()


def test_a_log_dir_of_another_cluster_is_refused(tmp_path):
    lm = manager(tmp_path)
    lm.startup()
    lm.shutdown()
    other = LogManager(ReplicaManager(), 1, 1, LogDirsConfig((str(tmp_path),), cluster_id="c2"))
    with pytest.raises(StorageError, match="Invalid cluster.id"):
        other.load_logs()


def test_clean_shutdown_writes_checkpoints_and_the_marker_then_reopens_without_recovery(
        tmp_path, monkeypatch, caplog):
    lm = manager(tmp_path)
    lm.startup()
    lg = lm.get_or_create_log("orders", 2, TOPIC_ID)
    assert lg.directory == str(tmp_path / "orders-2")
    fill(lg, 40)
    lg.delete_records_before(5)
    data = read_all(lg, 5)
    lm.shutdown()
    with open(tmp_path / "recovery-point-offset-checkpoint") as fh:
        assert fh.read() == "0\n1\norders 2 120\n"
    with open(tmp_path / "log-start-offset-checkpoint") as fh:
        assert fh.read() == "0\n1\norders 2 5\n"
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    with open(tmp_path / "orders-2" / "partition.metadata") as fh:
        assert fh.read().startswith("version: 0\ntopic_id: ")

    def no_scan(*args, **kwargs):
        raise AssertionError("recovery after a clean shutdown")

    monkeypatch.setattr(LogSegment, "recover", no_scan)
    again = manager(tmp_path)
    with caplog.at_level(logging.INFO):
        again.startup()
    assert "Loading logs from log dirs" in caplog.text and "Loaded 1 logs in" in caplog.text
    assert "Skipping recovery of 1 logs from" in caplog.text
    assert not (tmp_path / ".kafka_cleanshutdown").exists()   # a crash from now on shows
    reopened = again.get_or_create_log("orders", 2, TOPIC_ID)
    assert reopened.topic_id == TOPIC_ID
    assert (reopened.log_start_offset, reopened.log_end_offset) == (5, 120)
    assert read_all(reopened, 5) == data
    again.shutdown()


def test_after_a_crash_segments_past_the_recovery_point_are_recovered(tmp_path, caplog):
    lm = manager(tmp_path)
    lm.startup()
    lg = lm.get_or_create_log("orders", 0, TOPIC_ID)
    fill(lg, 40)
    lm.checkpoint_recovery_offsets()
    fill(lg, 10, start=40)
    data = read_all(lg)
    last = lg.segments()[-1].log.path
    crash(lm)
    with open(last, "r+b") as fh:                 # the last batch half written
        fh.truncate(os.path.getsize(last) - 20)
    again = manager(tmp_path)
    with caplog.at_level(logging.INFO):
        again.startup()
    assert "Recovering 1 logs from" in caplog.text
    assert "Recovering unflushed segment" in caplog.text
    assert "Found invalid messages in log segment" in caplog.text
    reopened = again.get_or_create_log("orders", 0, TOPIC_ID)
    assert reopened.log_end_offset == 147
    kept = read_all(reopened)
    assert kept == data[:len(kept)] and len(data) - len(kept) == len(data) // 50
    again.shutdown()


def test_partitions_spread_over_log_dirs(tmp_path):
    lm = manager(tmp_path / "a", tmp_path / "b")
    lm.startup()
    for p in range(4):
        lm.get_or_create_log("t", p, TOPIC_ID)
    assert sorted(os.listdir(tmp_path / "a")).count("t-0") + \
        sorted(os.listdir(tmp_path / "b")).count("t-0") == 1
    assert len([n for n in os.listdir(tmp_path / "a") if n.startswith("t-")]) == 2
    lm.shutdown()
    assert (tmp_path / "a" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "b" / ".kafka_cleanshutdown").exists()


def test_flush_messages_forces_an_fsync_and_moves_the_recovery_point(tmp_path):
    lm = LogManager(ReplicaManager(), 1, 1, LogDirsConfig((str(tmp_path),)),
                    lambda topic: SegmentConfig(flush_messages=9))
    lm.startup()
    lg = lm.get_or_create_log("t", 0, TOPIC_ID)
    fill(lg, 2)
    assert lg.recovery_point == 0            # 6 records: not yet
    fill(lg, 1, start=2)
    assert lg.recovery_point == 9
    lm.shutdown()


def test_flush_ms_is_applied_by_the_flusher(tmp_path):
    lm = LogManager(ReplicaManager(), 1, 1, LogDirsConfig((str(tmp_path),)),
                    lambda topic: SegmentConfig(flush_ms=1000))
    lm.startup()
    lg = lm.get_or_create_log("t", 0, TOPIC_ID)
    fill(lg, 1)
    lm.flush_dirty_logs(now_ms=lg._last_flush_ms + 999)
    assert lg.recovery_point == 0
    lm.flush_dirty_logs(now_ms=lg._last_flush_ms + 1000)
    assert lg.recovery_point == 3
    lm.shutdown()


def test_a_deleted_topic_leaves_the_log_dir(tmp_path):
    config = ServerConfig(log_dirs=(str(tmp_path),), log_segment_delete_delay_ms=0)
    core = BrokerCore(config)
    core.startup()
    core.replica_manager.ensure_partitions("gone", TOPIC_ID, 2)
    assert (tmp_path / "gone-1").is_dir()
    core.replica_manager.delete_topic("gone")
    core.shutdown()
    assert not [n for n in os.listdir(tmp_path) if n.startswith("gone")]


# -- a broker's API layer over log.dirs ---------------------------------------------------------

def durable_core(tmp_path) -> BrokerCore:
    core = BrokerCore(ServerConfig(log_dirs=(str(tmp_path),)))
    core.startup()
    # small segments, so the records cross rolls (below log.segment.bytes' minimum)
    core.replica_manager.config_repository.set_topic_config(
        "orders", {"internal.segment.bytes": 4000})
    core.replica_manager.ensure_partitions("orders", TOPIC_ID, 3)
    return core


def produce(core, partition: int, seq: int, pid: int = 11) -> tuple[int, int]:
    batch = build_batch([(None, b"value-%d" % seq, (), 1000)] * 2, producer_id=pid,
                        producer_epoch=0, base_sequence=seq)
    result = core.replica_manager.append_records("orders", partition, batch, 9)
    return result.error_code, result.base_offset


def test_records_and_idempotent_producer_state_survive_a_broker_restart(tmp_path):
    core = durable_core(tmp_path)
    for seq in range(0, 200, 2):
        assert produce(core, 1, seq) == (ErrorCode.NONE, seq)
    core.shutdown()

    core = durable_core(tmp_path)
    assert core.replica_manager.partition("orders", 1).log.log_end_offset == 200
    assert produce(core, 1, 198) == (ErrorCode.NONE, 198)     # a retry: the original offset
    assert produce(core, 1, 200) == (ErrorCode.NONE, 200)     # carries on
    assert produce(core, 1, 500)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    core.shutdown()


def test_in_memory_store_touches_no_folder(tmp_path):
    core = BrokerCore(ServerConfig(log_store="memory", log_dirs=(str(tmp_path / "x"),)))
    core.startup()
    core.replica_manager.ensure_partitions("t", TOPIC_ID, 1)
    core.shutdown()
    assert not (tmp_path / "x").exists()


def txn_batch(pid: int, seq: int) -> bytes:
    return build_batch([(None, b"t%d" % seq, (), 1000)], producer_id=pid, producer_epoch=0,
                       base_sequence=seq, transactional=True)


@pytest.mark.parametrize("clean", [True, False])
def test_transactions_survive_a_restart(tmp_path, clean):
    """Aborted transactions (.txnindex) and an open one (the producer snapshot, or the
    replay after a crash) come back: read_committed sees the same LSO and aborted list."""
    from kafka_net.server.replica_manager import READ_COMMITTED
    from kafka_net.server.transaction.markers import build_marker_batch

    core = durable_core(tmp_path)
    rm = core.replica_manager
    rm.transaction_verifier = None
    for seq in range(3):                                   # pid 5: aborted, offsets 0-2
        assert rm.append_records("orders", 0, txn_batch(5, seq), 9).error_code == 0
    rm.append_txn_marker("orders", 0, build_marker_batch(5, 0, False, 1000), 5, 0, False)
    for seq in range(2):                                   # pid 6: still open, 4-5
        assert rm.append_records("orders", 0, txn_batch(6, seq), 9).error_code == 0
    before = rm.read("orders", 0, 0, 1 << 20, True, READ_COMMITTED)[1]
    assert before.last_stable_offset == 4 and before.aborted_transactions == [(5, 0)]
    if clean:
        core.shutdown()
    else:
        core.stop_purgatories()
        core.quotas.shutdown()
        crash(core.log_manager)
    core = durable_core(tmp_path)
    rm = core.replica_manager
    after = rm.read("orders", 0, 0, 1 << 20, True, READ_COMMITTED)[1]
    assert after.last_stable_offset == 4 and after.aborted_transactions == [(5, 0)]
    aborted_files = [n for n in os.listdir(tmp_path / "orders-0") if n.endswith(".txnindex")]
    # the segment holding the ABORT marker (offset 3; the marker's timestamp, now,
    # is past segment.ms from the 1970 batches', so it opened a segment)
    assert aborted_files == ["00000000000000000003.txnindex"]
    rm.append_txn_marker("orders", 0, build_marker_batch(6, 0, True, 1000), 6, 0, True)
    assert rm.last_stable_offset("orders", 0) == 7
    core.shutdown()


def test_topic_configs_act_on_the_durable_log(tmp_path):
    """segment.bytes and index.interval.bytes set on the topic roll and index its
    segments; retention.ms then deletes whole segments through the ReplicaManager."""
    core = durable_core(tmp_path)
    rm = core.replica_manager
    repo = rm.config_repository
    repo.set_topic_config("orders", repo.validate("orders", {
        "internal.segment.bytes": "1000", "index.interval.bytes": "200"}))
    for i in range(40):
        batch = build_batch([(None, b"x" * 100, (), 1000 + i)])
        assert rm.append_records("orders", 2, batch, 9).error_code == 0
    lg = rm.partition("orders", 2).log
    assert len(lg.segments()) >= 5 and all(s.size <= 1000 for s in lg.segments())
    assert lg.segments()[1].offset_index.entries >= 2   # segments made after the change
    repo.set_topic_config("orders", repo.validate("orders", {
        "internal.segment.bytes": "1000", "retention.ms": "10"}))
    rm.clock_ms = lambda: 1000 + 30
    deleted = rm.apply_retention("orders")
    assert deleted >= 2 and lg.log_start_offset == lg.segments()[0].base_offset > 0
    core.shutdown()
