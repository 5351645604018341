"""Restarts stay flat (issue 30): what a restart replays does not grow with the
broker's history -- a deleted topic's partitions are not created again (and
deleted again) at each start, and the metadata log is snapshotted on time as
well as size."""

from __future__ import annotations

import os

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.storage.bad_day_support import running, stop_cleanly  # noqa: E402

TIMEOUT = 60.0


def test_deleted_topics_are_not_rebuilt_at_each_restart(tmp_path):
    log_dir = str(tmp_path / "logs")
    names = [f"gone-{i}" for i in range(5)]
    with running(log_dir) as (broker, port):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        for name, future in admin.create_topics([NewTopic(n, 4, 1) for n in names]).items():
            future.result(timeout=TIMEOUT)
        admin.create_topics([NewTopic("kept", 2, 1)])["kept"].result(timeout=TIMEOUT)
        for future in admin.delete_topics(names, operation_timeout=30).values():
            future.result(timeout=TIMEOUT)
        stop_cleanly(broker)
    for _ in range(2):
        with running(log_dir) as (broker, port):
            broker.wait_for(r"Skipped 20 partition record\(s\) of 5 topic\(s\) deleted later")
            topics = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(
                timeout=TIMEOUT).topics
            assert "kept" in topics and not set(names) & set(topics)
            stop_cleanly(broker)
            assert "Created log for partition gone-" not in broker.stderr
        assert not [n for n in os.listdir(log_dir) if n.startswith("gone-")]


def replayed(broker) -> int:
    return int(broker.wait_for(r"Replayed (\d+) metadata record\(s\)")[1])


def test_metadata_snapshots_on_time_keep_what_a_restart_replays_flat(tmp_path):
    log_dir = str(tmp_path / "logs")
    interval = "metadata.log.max.snapshot.interval.ms=1"   # every change is due one
    with running(log_dir, interval) as (broker, port):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic("t", 10, 1)])["t"].result(timeout=TIMEOUT)
        broker.wait_for(r"Wrote a metadata snapshot of \d+ record\(s\)")
        stop_cleanly(broker)
    counts = []
    for _ in range(2):   # each restart appends a leader change per partition (10 here)
        with running(log_dir, interval) as (broker, port):
            counts.append(replayed(broker))
            stop_cleanly(broker)
    assert counts[0] == counts[1], counts
