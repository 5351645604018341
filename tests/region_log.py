"""A partition log that answers Fetch with file regions, as the durable log does.

Until the durable log (UnifiedLog over segment files) is merged, the zero-copy
tests need a log whose reads are :class:`~kafka_net.network.send.FileRegion`
slices of a real file.  :class:`RegionLog` is the in-memory log with every
stored batch also written to one file, in append order (a single segment that
is never deleted); ``read`` picks the same batches the in-memory log would and
answers with the region of the file that holds them, without copying them.

:func:`region_server` starts a real broker whose topics get a RegionLog
(``ReplicaManager.log_factory``, Kafka's LogManager.getOrCreateLog seam),
except topics named in ``in_memory``, which keep the in-memory log: a test can
compare the two paths on one broker.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading

from kafka_net.network.send import FileRegion
from kafka_net.server.kafka_server import KafkaServer
from kafka_net.server.storage.base import FetchResult, OffsetOutOfRange
from kafka_net.server.storage.memory import InMemoryLog


class RegionLog(InMemoryLog):
    def __init__(self, directory: str) -> None:
        super().__init__()
        # Reentrant: append holds it around InMemoryLog.append (which takes it
        # too) and the file write, so no read sees offsets whose bytes are not
        # on file yet.
        self._lock = threading.RLock()
        self.fd, self.path = tempfile.mkstemp(dir=directory, suffix=".log")
        self.regions_served = 0

    def append(self, batch, record_count, max_timestamp, log_append_time_ms=-1,
               leader_epoch=0):
        with self._lock:
            result = super().append(batch, record_count, max_timestamp, log_append_time_ms,
                                    leader_epoch)
            # The file holds every batch ever appended, at its append position.
            os.pwrite(self.fd, self._batches[-1], self._bytes_before[-1])
        return result

    def read(self, fetch_offset, max_bytes, min_one_batch, max_offset=None) -> FetchResult:
        with self._lock:
            if fetch_offset < self._log_start or fetch_offset > self._log_end:
                raise OffsetOutOfRange(
                    f"offset {fetch_offset} is outside [{self._log_start}, {self._log_end}]")
            first = index = self._index_of(fetch_offset)
            size = 0
            while index < len(self._batches):
                if max_offset is not None and self._base_offsets[index] >= max_offset:
                    break
                length = len(self._batches[index])
                if size + length > max_bytes and (size or not min_one_batch):
                    break
                size += length
                index += 1
            records = b""
            if size:
                records = FileRegion(self.fd, self._bytes_before[first], size)
                self.regions_served += 1
            return FetchResult(records, self._log_end, self._log_end, self._log_start)

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass

    delete = close


@contextlib.contextmanager
def region_server(config, directory: str, in_memory: tuple[str, ...] = ()):
    """A started broker whose topics' logs are RegionLogs in ``directory`` (those
    named in ``in_memory`` excepted); yields (server, logs by topic and partition)."""
    server = KafkaServer(config)
    logs: dict[tuple[str, int], RegionLog] = {}

    def factory(topic, index, topic_id):
        if topic in in_memory:
            return InMemoryLog()
        log = logs[(topic, index)] = RegionLog(directory)
        return log

    server.replica_manager.log_factory = factory
    server.startup()
    try:
        yield server, logs
    finally:
        server.shutdown()
        for log in logs.values():
            log.close()
