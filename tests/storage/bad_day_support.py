"""Helpers for the bad-day tests: a durable ``kafka-net serve`` on a folder the
test owns, stopped cleanly or killed, and the segment files it leaves."""

from __future__ import annotations

import contextlib
import os
import signal

from kafka_net.protocol.records import iter_batches
from tests.integration.test_cli import Broker

TOPIC = "damaged"
SEGMENT_BYTES = 1 << 20   # Kafka 4's minimum segment.bytes


def serve_on(log_dir: str, *overrides: str) -> Broker:
    return Broker("--override", "listeners=PLAINTEXT://127.0.0.1:0",
                  "--override", f"log.dirs={log_dir}",
                  "--override", "auto.create.topics.enable=false",
                  "--override", f"log.segment.bytes={SEGMENT_BYTES}",
                  *[arg for item in overrides for arg in ("--override", item)])


@contextlib.contextmanager
def running(log_dir: str, *overrides: str):
    """A started broker and its port; killed on the way out if still running."""
    broker = serve_on(log_dir, *overrides)
    try:
        port = broker.wait_started()["PLAINTEXT"]
        yield broker, port
    finally:
        broker.kill()


def stop_cleanly(broker: Broker) -> None:
    broker.send_signal(signal.SIGTERM)
    assert broker.wait_exit() == 0, broker.stderr


def segment_files(log_dir: str, topic: str = TOPIC, partition: int = 0) -> list[str]:
    folder = os.path.join(log_dir, f"{topic}-{partition}")
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".log"))


def batch_positions(path: str) -> list[tuple[int, int, int]]:
    """(position, base offset, size) of each whole batch of a segment file."""
    with open(path, "rb") as fh:
        data = fh.read()
    positions, position = [], 0
    for batch in iter_batches(data, allow_partial_tail=True):
        positions.append((position, int.from_bytes(batch[:8], "big"), len(batch)))
        position += len(batch)
    return positions


def flip(path: str, position: int, count: int = 16) -> None:
    """Invert ``count`` bytes of a file at ``position`` (a damaged sector)."""
    with open(path, "r+b") as fh:
        fh.seek(position)
        data = fh.read(count)
        fh.seek(position)
        fh.write(bytes(b ^ 0xFF for b in data))
