"""LogManager.move_log's traces after a crash, and the cleaner checkpoint that follows
a moved log (AlterReplicaLogDirs; the API's own tests are in
tests/server/handlers/test_alter_replica_log_dirs.py)."""

from __future__ import annotations

import logging
import os
import shutil

import pytest

from kafka_net.server.log_cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleanerManager
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.storage.checkpoint import OffsetCheckpointFile, StorageError
from tests.server.test_log_dirs import TOPIC_ID, fill, manager


def test_a_move_cut_short_by_a_crash_is_dropped_at_the_next_start(tmp_path, caplog):
    a, b = tmp_path / "a", tmp_path / "b"
    lm = manager(a, b)
    lm.startup()
    lg = lm.get_or_create_log("t", 0, TOPIC_ID)
    fill(lg, 3)
    home = lm._log_dir_of[("t", 0)]
    other = str(b) if home == str(a) else str(a)
    lg.copy_to(os.path.join(other, "t-0.0123456789abcdef0123456789abcdef-future"))
    lm.shutdown()
    again = manager(a, b)
    with caplog.at_level(logging.WARNING):
        again.startup()
    try:
        assert "did not finish; the partition stays where it was" in caplog.text
        assert os.listdir(other) == [n for n in os.listdir(other) if "t-0" not in n]
        assert again._log_dir_of[("t", 0)] == home
        assert again.logs()[("t", 0)].log_end_offset == 9
    finally:
        again.shutdown()


def test_a_partition_found_in_two_log_dirs_stops_the_start_with_kafkas_message(tmp_path):
    """A crash between a move's two renames leaves the partition in both dirs."""
    a, b = tmp_path / "a", tmp_path / "b"
    lm = manager(a, b)
    lm.startup()
    fill(lm.get_or_create_log("t", 0, TOPIC_ID), 1)
    home = lm._log_dir_of[("t", 0)]
    other = str(b) if home == str(a) else str(a)
    lm.shutdown()
    shutil.copytree(os.path.join(home, "t-0"), os.path.join(other, "t-0"))
    with pytest.raises(StorageError, match="Duplicate log directories for t-0 are found in "
                                           "both .* It is likely because log directory "
                                           "failure happened"):
        manager(a, b).load_logs()


def test_a_moved_log_takes_its_cleaner_checkpoint_along(tmp_path):
    source, destination = str(tmp_path / "a"), str(tmp_path / "b")
    for d in (source, destination):
        os.makedirs(d)
    OffsetCheckpointFile(os.path.join(source, CLEANER_OFFSET_CHECKPOINT)).write(
        {("t", 0): 40, ("u", 0): 7})
    OffsetCheckpointFile(os.path.join(destination, CLEANER_OFFSET_CHECKPOINT)).write(
        {("v", 1): 3})
    rm = ReplicaManager()
    rm.ensure_partitions("t", TOPIC_ID, 1)
    LogCleanerManager(rm).alter_checkpoint_dir(("t", 0), source, destination)
    read = lambda d: OffsetCheckpointFile(os.path.join(d, CLEANER_OFFSET_CHECKPOINT)).read()
    assert read(source) == {("u", 0): 7}
    assert read(destination) == {("v", 1): 3, ("t", 0): 40}
