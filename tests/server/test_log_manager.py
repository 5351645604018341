"""LogManager's kafka-log-retention task: retention reaches topics nobody writes to."""

from __future__ import annotations

import logging
import threading
import uuid

import pytest

from kafka_net.protocol.records import build_batch
from kafka_net.server.log_manager import LogManager
from kafka_net.server.replica_manager import ReplicaManager
from tests.server.conftest import wait_until


class Clock:
    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture
def rm():
    manager = ReplicaManager()
    manager.clock_ms = Clock(10_000)
    for topic in ("kept", "short"):
        manager.ensure_partitions(topic, uuid.uuid4(), 2)
    repo = manager.config_repository
    repo.set_topic_config("short", repo.validate("short", {"retention.ms": "1000"}))
    return manager


def append(rm, topic, partition, timestamp_ms):
    result = rm.append_records(topic, partition, build_batch([(None, b"v", (), timestamp_ms)]), 9)
    assert result.error_code == 0


def log_start(rm, topic, partition=0) -> int:
    return rm.partition(topic, partition).log.log_start_offset


def test_one_run_deletes_what_aged_past_each_topics_retention(rm):
    for topic in ("kept", "short"):
        for p in (0, 1):
            append(rm, topic, p, 9_500)       # fresh when appended: nothing deleted yet
            append(rm, topic, p, 9_900)
    assert log_start(rm, "short") == 0
    task = LogManager(rm, retention_check_ms=300_000, initial_task_delay_ms=30_000)
    rm.clock_ms.now_ms = 10_700               # the first batch is now 1200 ms old
    assert task.cleanup_logs() == 2           # one batch of each "short" partition
    assert (log_start(rm, "short", 0), log_start(rm, "short", 1)) == (1, 1)
    rm.clock_ms.now_ms = 20_000
    assert task.cleanup_logs() == 2
    assert log_start(rm, "short") == 2
    assert log_start(rm, "kept") == 0         # no retention override: kept (as before)


def test_the_task_runs_on_its_period(rm):
    append(rm, "short", 0, 9_800)
    task = LogManager(rm, retention_check_ms=20, initial_task_delay_ms=0)
    task.startup()
    try:
        rm.clock_ms.now_ms = 60_000           # nobody appends again: only the task can delete
        assert wait_until(lambda: log_start(rm, "short") == 1)
        assert [t.name for t in threading.enumerate()].count("kafka-log-retention") == 1
    finally:
        task.shutdown()
    assert "kafka-log-retention" not in [t.name for t in threading.enumerate()]


def test_a_failing_run_is_logged_and_the_next_one_runs(rm, caplog):
    runs = []

    class Flaky:
        def apply_retention(self):
            runs.append(1)
            if len(runs) == 1:
                raise RuntimeError("disk on fire")
            return 0

    task = LogManager(Flaky(), retention_check_ms=10, initial_task_delay_ms=0)
    with caplog.at_level(logging.ERROR, logger="kafka_net.server.log_manager"):
        task.startup()
        try:
            assert wait_until(lambda: len(runs) >= 3)
        finally:
            task.shutdown()
    assert "Uncaught exception in scheduled task 'kafka-log-retention'" in caplog.text


def test_the_initial_delay_holds_the_first_run(rm):
    append(rm, "short", 0, 9_800)
    rm.clock_ms.now_ms = 60_000     # past retention, but no run may happen yet
    task = LogManager(rm, retention_check_ms=10, initial_task_delay_ms=60_000)
    task.startup()
    task.shutdown()                 # stopped within the initial delay
    assert log_start(rm, "short") == 0
    assert task.cleanup_logs() == 1  # what a run would have done
