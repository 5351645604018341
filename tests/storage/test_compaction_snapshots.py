"""Producer snapshots of segments the cleaner replaced are deleted (issue 30):
Kafka's UnifiedLog.replaceSegments removes them; before, a compacted topic of
3 segments kept one ``.snapshot`` per segment it ever rolled."""

from __future__ import annotations

import os
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.storage.bad_day_support import running  # noqa: E402

TIMEOUT = 60.0


def files(folder: str, suffix: str) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(suffix))


def test_compaction_deletes_the_snapshots_of_replaced_segments(tmp_path):
    log_dir = str(tmp_path / "logs")
    with running(log_dir, "log.cleaner.backoff.ms=50") as (broker, port):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic("compacted", 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": "4096",
            "min.cleanable.dirty.ratio": "0.01"})])["compacted"].result(timeout=TIMEOUT)
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}",
                             "enable.idempotence": True, "linger.ms": 1,
                             "batch.size": 1024})
        for i in range(3000):
            producer.produce("compacted", b"v" * 40, key=f"k{i % 10}".encode())
            if i % 50 == 0:
                producer.flush(TIMEOUT)   # many small batches: many rolls
        assert producer.flush(TIMEOUT) == 0
        folder = os.path.join(log_dir, "compacted-0")

        def settled() -> bool:
            """Cleaned (the first segment, merged, reaches past offset 1000: dozens
            of rolled segments), and at most one snapshot per remaining segment,
            plus the latest."""
            bases = [int(n.split(".")[0]) for n in files(folder, ".log")]
            return len(bases) >= 2 and bases[1] > 1000 \
                and len(files(folder, ".snapshot")) <= len(bases) + 1

        deadline = time.monotonic() + TIMEOUT
        while not settled() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert settled(), (files(folder, ".log"), files(folder, ".snapshot"))
