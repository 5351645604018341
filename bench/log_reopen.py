"""How long a durable log takes to open: after a clean stop, and after a crash.

``python -m bench.log_reopen`` writes one partition of ``--gb`` GB (default 1)
in batches of ``--batch-bytes`` (default 16 KiB, ~60 records of 256 B each)
through a LogManager under a temporary log dir, then measures, each
``--rounds`` times (median and max printed):

* **clean**: stop the LogManager (flush, checkpoints, producer snapshot,
  ``.kafka_cleanshutdown``) and start a new one on the same folder: the logs
  open without scanning (the active segment's tail from its last index entry);
* **crash**: the same files with no marker and a recovery point of 0, as after
  a SIGKILL before the first checkpoint: every segment is recovered (each
  batch's size, magic, CRC32C and offsets checked, both indexes rebuilt).

Figures are with a warm page cache (the files were just written; dropping
caches needs root and would disturb others on a shared machine); a cold
cache adds the time to read the files from the device to the crash case.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import uuid

from kafka_net.protocol.records import build_batch
from kafka_net.server.log_manager import LogDirsConfig, LogManager
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.storage.checkpoint import (
    CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_CHECKPOINT)
from kafka_net.server.storage.segment import SegmentConfig

TOPIC_ID = uuid.UUID(int=1)


def manager(directory: str, config: SegmentConfig) -> LogManager:
    return LogManager(ReplicaManager(), 300_000, 300_000,
                      LogDirsConfig((directory,)), lambda topic: config)


def write(directory: str, total: int, batch_bytes: int, config: SegmentConfig) -> tuple:
    records = max(1, batch_bytes // 270)
    batch = bytearray(build_batch([(None, b"v" * 256, (), 1_700_000_000_000)] * records))
    lm = manager(directory, config)
    lm.load_logs()
    log = lm.get_or_create_log("bench", 0, TOPIC_ID)
    began = time.perf_counter()
    written = 0
    while written < total:
        log.append(batch, records, 1_700_000_000_000)
        written += len(batch)
    elapsed = time.perf_counter() - began
    lm.shutdown()
    return written, len(batch), elapsed, log.log_end_offset


def reopen(directory: str, config: SegmentConfig) -> float:
    lm = manager(directory, config)
    began = time.perf_counter()
    lm.load_logs()
    elapsed = time.perf_counter() - began
    lm.shutdown()
    return elapsed


def crash_files(directory: str) -> None:
    for name in (CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_CHECKPOINT):
        try:
            os.unlink(os.path.join(directory, name))
        except FileNotFoundError:
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--batch-bytes", type=int, default=16384)
    parser.add_argument("--segment-bytes", type=int, default=1 << 30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="parent folder (default: the temp dir)")
    args = parser.parse_args()
    config = SegmentConfig(segment_bytes=args.segment_bytes, file_delete_delay_ms=0)
    root = tempfile.mkdtemp(prefix="kn-log-reopen-", dir=args.dir)
    try:
        written, batch, write_s, end = write(root, int(args.gb * 1e9), args.batch_bytes, config)
        segments = len([n for n in os.listdir(os.path.join(root, "bench-0"))
                        if n.endswith(".log")])
        clean = [reopen(root, config) for _ in range(args.rounds)]
        crash = []
        for _ in range(args.rounds):
            crash_files(root)
            crash.append(reopen(root, config))
        print(f"| log | {written / 1e9:.2f} GB, {written // batch} batches of {batch} B, "
              f"{end} records, {segments} segment(s); written in {write_s:.1f} s |")
        print("|---|---|")
        print(f"| reopen after a clean stop | median {statistics.median(clean) * 1000:.0f} ms, "
              f"max {max(clean) * 1000:.0f} ms ({args.rounds} rounds) |")
        print(f"| crash recovery (every batch checked) | median {statistics.median(crash):.2f} s, "
              f"max {max(crash):.2f} s, {written / 1e9 / statistics.median(crash):.2f} GB/s |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
