"""The log cleaner on a bad day's edges (issue 30): the producer snapshots of
segments it replaced are deleted (Kafka's UnifiedLog.replaceSegments; before, a
compacted topic of 3 segments kept one ``.snapshot`` per segment it ever
rolled), and ``log.cleaner.backoff.ms`` changes at run time, as in Kafka."""

from __future__ import annotations

import os
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic)

from tests.storage.bad_day_support import running  # noqa: E402

TIMEOUT = 60.0


def files(folder: str, suffix: str) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(suffix))


def test_compaction_deletes_the_snapshots_of_replaced_segments(tmp_path):
    log_dir = str(tmp_path / "logs")
    with running(log_dir, "log.cleaner.backoff.ms=50") as (broker, port):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic("compacted", 1, 1, config={
            "cleanup.policy": "compact", "internal.segment.bytes": "4096",
            "min.cleanable.dirty.ratio": "0.01"})])["compacted"].result(timeout=TIMEOUT)
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}",
                             "enable.idempotence": True, "linger.ms": 1,
                             "batch.size": 1024})

        def write(n: int) -> None:
            for i in range(n):
                producer.produce("compacted", b"v" * 40, key=f"k{i % 10}".encode())
                if i % 50 == 0:
                    producer.flush(TIMEOUT)   # many small batches: many rolls
            assert producer.flush(TIMEOUT) == 0

        write(1500)
        folder = os.path.join(log_dir, "compacted-0")

        def merged() -> bool:
            """The first segment, merged, reaches past offset 500: dozens of rolled
            segments."""
            bases = [int(n.split(".")[0]) for n in files(folder, ".log")]
            return len(bases) >= 2 and bases[1] > 500

        def settled() -> bool:
            """Merged, and at most one snapshot per remaining segment, plus the latest."""
            return merged() and \
                len(files(folder, ".snapshot")) <= len(files(folder, ".log")) + 1

        # A round groups segments by their sizes at its start, as Kafka's does:
        # segments still dirty are full-size and each stays a segment of its own,
        # and only a later round merges them. A cleaner starved while the topic
        # was written (a loaded machine) may have left them so, and with nothing
        # dirty there is no later round: until merged, the topic is kept
        # written, as a live one is.
        deadline = time.monotonic() + TIMEOUT
        while not settled() and time.monotonic() < deadline:
            time.sleep(0.2)
            if not merged():
                write(50)
        assert settled(), (files(folder, ".log"), files(folder, ".snapshot"))


def test_log_cleaner_backoff_changes_at_run_time(tmp_path):
    log_dir = str(tmp_path / "logs")
    # An hour's backoff: the cleaner, idle at start, would not look again in this test.
    with running(log_dir, "log.cleaner.backoff.ms=3600000") as (broker, port):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic("later", 1, 1, config={
            "cleanup.policy": "compact", "internal.segment.bytes": "4096",
            "min.cleanable.dirty.ratio": "0.01"})])["later"].result(timeout=TIMEOUT)
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 1,
                             "batch.size": 1024})
        for i in range(1000):
            producer.produce("later", b"v" * 40, key=f"k{i % 10}".encode())
            if i % 50 == 0:
                producer.flush(TIMEOUT)
        assert producer.flush(TIMEOUT) == 0
        assert "Swapping in cleaned segment" not in broker.stderr   # idle for an hour
        resource = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
            ConfigEntry("log.cleaner.backoff.ms", "50",
                        incremental_operation=AlterConfigOpType.SET)])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=TIMEOUT)
        broker.wait_for(r"Swapping in cleaned segment .* in log later-0|"
                        r"Cleaner 0: Cleaning .* in log later-0")
