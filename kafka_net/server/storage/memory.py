"""An in-memory partition log: batches in a list, found by binary search.

One lock per partition makes offset assignment and the append one step, so
concurrent producers on many connections get distinct, dense offsets, and a
reader never sees a batch whose offset is not assigned yet.
"""

from __future__ import annotations

import bisect
import threading

from kafka_net.protocol.records import set_base_offset
from kafka_net.server.storage.base import AppendResult, FetchResult, OffsetOutOfRange


class InMemoryLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._base_offsets: list[int] = []     # sorted: bisect finds a batch by offset
        self._last_offsets: list[int] = []
        self._max_timestamps: list[int] = []
        self._batches: list[bytes] = []
        self._bytes_before: list[int] = []     # total size of the batches before each
        self._log_start = 0
        self._log_end = 0
        self.size_bytes = 0

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._log_end

    def append(self, batch: bytearray, record_count: int, max_timestamp: int) -> AppendResult:
        with self._lock:
            base = self._log_end
            set_base_offset(batch, base)
            # Offsets follow the batch's own last_offset_delta (validated equal to
            # record_count - 1 for client batches), so offsets stay dense.
            last = base + record_count - 1
            self._base_offsets.append(base)
            self._last_offsets.append(last)
            self._max_timestamps.append(max_timestamp)
            self._bytes_before.append(self.size_bytes)
            self._batches.append(bytes(batch))
            self._log_end = last + 1
            self.size_bytes += len(batch)
            return AppendResult(base, last, -1, self._log_start)

    def read(self, fetch_offset: int, max_bytes: int, min_one_batch: bool) -> FetchResult:
        with self._lock:
            if fetch_offset < self._log_start or fetch_offset > self._log_end:
                raise OffsetOutOfRange(
                    f"offset {fetch_offset} is outside [{self._log_start}, {self._log_end}]")
            index = bisect.bisect_right(self._base_offsets, fetch_offset) - 1
            if index < 0 or (index < len(self._last_offsets)
                             and self._last_offsets[index] < fetch_offset):
                index += 1
            chunks, size = [], 0
            while index < len(self._batches):
                batch = self._batches[index]
                if size + len(batch) > max_bytes and (chunks or not min_one_batch):
                    break
                chunks.append(batch)
                size += len(batch)
                index += 1
            return FetchResult(b"".join(chunks), self._log_end, self._log_end, self._log_start)

    def bytes_from(self, fetch_offset: int) -> int:
        """Bytes a fetch from ``fetch_offset`` could return (1 for an out-of-range
        offset: an error is an answer, so a waiting fetch should complete)."""
        with self._lock:
            if fetch_offset < self._log_start or fetch_offset > self._log_end:
                return 1
            if fetch_offset == self._log_end:
                return 0
            index = bisect.bisect_right(self._base_offsets, fetch_offset) - 1
            return self.size_bytes - self._bytes_before[max(index, 0)]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        with self._lock:
            for base, ts in zip(self._base_offsets, self._max_timestamps):
                if ts >= timestamp:
                    return base, ts
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        with self._lock:
            if not self._batches:
                return None
            i = max(range(len(self._max_timestamps)), key=self._max_timestamps.__getitem__)
            return self._base_offsets[i], self._max_timestamps[i]
