"""Both partition stores behind one fixture: every PartitionLog test runs on each.

* ``memory``: :class:`~kafka_net.server.storage.InMemoryLog`;
* ``disk``: a :class:`~kafka_net.server.storage.unified_log.UnifiedLog` rolling a
  segment per batch (``segment.bytes=1``), so whole-segment retention and
  DeleteRecords act batch by batch exactly as the in-memory log does;
* ``disk-one-segment``: a UnifiedLog keeping every batch in one segment with an
  index entry every 64 bytes, so reads go through the offset index and the
  header scans inside a segment.
"""

from __future__ import annotations

import shutil
import tempfile

import pytest

from kafka_net.network.send import FileRegion
from kafka_net.server.storage import InMemoryLog
from kafka_net.server.storage.segment import SegmentConfig
from kafka_net.server.storage.unified_log import UnifiedLog

STORES = ("memory", "disk", "disk-one-segment")
# Retention and DeleteRecords delete whole segments: batch-for-batch only with one
# batch per segment.
SEGMENT_PER_BATCH_STORES = ("memory", "disk")

CONFIGS = {"disk": SegmentConfig(segment_bytes=1, file_delete_delay_ms=0),
           "disk-one-segment": SegmentConfig(index_interval_bytes=64, file_delete_delay_ms=0)}


def as_bytes(records) -> bytes:
    """A read's records as bytes, whether the log gave bytes or a FileRegion."""
    return records.read_bytes() if isinstance(records, FileRegion) else bytes(records)


class LogFactory:
    """Makes logs of one store; closes them and removes their folders afterwards."""

    def __init__(self, store: str) -> None:
        self.store = store
        self._opened: list = []
        self._dirs: list[str] = []

    def __call__(self):
        if self.store == "memory":
            return InMemoryLog()
        directory = tempfile.mkdtemp(prefix="kn-log-")
        self._dirs.append(directory)
        log = UnifiedLog(f"{directory}/topic-0", CONFIGS[self.store])
        self._opened.append(log)
        return log

    def close(self) -> None:
        for log in self._opened:
            log.close()
        for directory in self._dirs:
            shutil.rmtree(directory, ignore_errors=True)
        self._opened.clear()
        self._dirs.clear()

    def __enter__(self) -> "LogFactory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@pytest.fixture(params=STORES)
def new_log(request):
    with LogFactory(request.param) as factory:
        yield factory


@pytest.fixture(params=("memory", "disk-one-segment"))
def new_multi_batch_log(request):
    """Stores whose one read may return several batches (a disk log reads one
    segment per fetch, as Kafka does)."""
    with LogFactory(request.param) as factory:
        yield factory


def read_all(log, offset: int = 0) -> bytes:
    """Every batch from ``offset`` to the log end, read as a consumer would: one
    read after another (a disk log answers from one segment at a time)."""
    from kafka_net.protocol.records import read_header, split_batches

    chunks = []
    while offset < log.log_end_offset:
        data = as_bytes(log.read(offset, 1 << 30, True).records)
        if not data:
            break
        chunks.append(data)
        offset = read_header(split_batches(data)[-1]).next_offset
    return b"".join(chunks)
