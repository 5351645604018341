"""An in-memory partition log: batches in a list, found by binary search.

One lock per partition makes offset assignment and the append one step, so
concurrent producers on many connections get distinct, dense offsets, and a
reader never sees a batch whose offset is not assigned yet.

Old batches leave the front of the list in two ways, both moving the log
start offset as Kafka's ``UnifiedLog.maybeIncrementLogStartOffset`` does:
DeleteRecords (:meth:`InMemoryLog.delete_records_before`, which may put the
log start in the middle of a batch) and retention
(:meth:`InMemoryLog.delete_retained`, whole batches only: here a batch plays
the part of Kafka's log segment).
"""

from __future__ import annotations

import bisect
import threading
import time

from kafka_net.protocol.records import Buffer, with_base_offset_and_epoch
from kafka_net.server.storage.base import AppendResult, FetchResult, OffsetOutOfRange
from kafka_net.server.storage.leader_epoch import LeaderEpochCache
from kafka_net.server.storage.timestamps import first_record_at_or_after, first_record_with


class InMemoryLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._base_offsets: list[int] = []     # sorted: bisect finds a batch by offset
        self._last_offsets: list[int] = []
        self._max_timestamps: list[int] = []
        # What retention.ms compares: the max timestamp, or the append time for a
        # batch without timestamps (Kafka falls back to the segment file's mtime).
        self._retention_times: list[int] = []
        self._batches: list[bytes] = []
        self._bytes_before: list[int] = []     # bytes appended before each batch, ever
        self._log_start = 0
        self._log_end = 0
        self.size_bytes = 0                    # bytes ever appended
        self._deleted_bytes = 0                # of which deleted from the front
        self.leader_epoch_cache = LeaderEpochCache()

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._log_end

    @property
    def retained_bytes(self) -> int:
        """Bytes of the batches still held (what retention.bytes limits)."""
        return self.size_bytes - self._deleted_bytes

    size_in_bytes = retained_bytes   # PartitionLog's name for it

    def append(self, batch: Buffer, record_count: int, max_timestamp: int,
               log_append_time_ms: int = -1, leader_epoch: int = 0) -> AppendResult:
        with self._lock:
            base = self._log_end
            # the one copy the log keeps, stamped with the leader's epoch
            stored = with_base_offset_and_epoch(batch, base, leader_epoch)
            self.leader_epoch_cache.assign(leader_epoch, base)
            # Offsets follow the batch's own last_offset_delta (validated equal to
            # record_count - 1 for client batches), so offsets stay dense.
            last = base + record_count - 1
            self._base_offsets.append(base)
            self._last_offsets.append(last)
            self._max_timestamps.append(max_timestamp)
            self._retention_times.append(
                max_timestamp if max_timestamp >= 0 else int(time.time() * 1000))
            self._bytes_before.append(self.size_bytes)
            self._batches.append(stored)
            self._log_end = last + 1
            self.size_bytes += len(stored)
            return AppendResult(base, last, log_append_time_ms, self._log_start)

    def _index_of(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (or the next one after a gap)."""
        index = bisect.bisect_right(self._base_offsets, offset) - 1
        if index < 0 or (index < len(self._last_offsets)
                         and self._last_offsets[index] < offset):
            index += 1
        return index

    def read(self, fetch_offset: int, max_bytes: int, min_one_batch: bool,
             max_offset: int | None = None) -> FetchResult:
        """``max_offset``: no batch starting at or after it (a read_committed
        fetch stops at the last stable offset)."""
        with self._lock:
            if fetch_offset < self._log_start or fetch_offset > self._log_end:
                raise OffsetOutOfRange(
                    f"offset {fetch_offset} is outside [{self._log_start}, {self._log_end}]")
            index = self._index_of(fetch_offset)
            chunks, size = [], 0
            while index < len(self._batches):
                if max_offset is not None and self._base_offsets[index] >= max_offset:
                    break
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

    # -- timestamps ---------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after the log start whose
        timestamp is >= ``timestamp`` (Kafka's ``searchOffsetInLocalLog``): the first
        batch whose max timestamp reaches it, then the record inside that batch."""
        with self._lock:
            start = self._index_of(self._log_start)
            for index in range(start, len(self._batches)):
                if self._max_timestamps[index] >= timestamp:
                    hit = first_record_at_or_after(self._batches[index], timestamp,
                                                   self._log_start)
                    if hit is not None:
                        return hit
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) for ListOffsets MAX_TIMESTAMP (KIP-734): the first
        batch holding the largest max timestamp, and in it the first record with
        that timestamp (Kafka's ``RecordBatch.offsetOfMaxTimestamp``)."""
        with self._lock:
            start = self._index_of(self._log_start)
            if start >= len(self._batches):
                return None
            i = max(range(start, len(self._batches)), key=self._max_timestamps.__getitem__)
            return first_record_with(self._batches[i], self._max_timestamps[i])

    # -- moving the log start -------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: raise the log start to ``offset`` (never lower it, never past
        the log end; the caller checks the range) and drop the batches wholly below
        it.  Returns the new log start offset (the low watermark)."""
        with self._lock:
            if offset > self._log_start:
                self._log_start = min(offset, self._log_end)
                self._drop_front(self._index_of(self._log_start))
                self.leader_epoch_cache.truncate_from_start(self._log_start)
            return self._log_start

    def delete_retained(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Delete whole batches from the front that retention no longer keeps: those
        whose max timestamp is older than ``now_ms - retention_ms`` (-1 = forever),
        then the oldest while the rest still exceeds ``retention_bytes`` (-1 = no
        limit), as Kafka's ``deleteRetentionMsBreachedSegments`` and
        ``deleteRetentionSizeBreachedSegments`` do per segment.  Returns how many."""
        with self._lock:
            count = 0
            if retention_ms >= 0:
                while (count < len(self._batches)
                       and now_ms - self._retention_times[count] > retention_ms):
                    count += 1
            if retention_bytes >= 0:
                excess = self.retained_bytes - retention_bytes
                for index in range(count):
                    excess -= len(self._batches[index])
                while count < len(self._batches) and excess - len(self._batches[count]) >= 0:
                    excess -= len(self._batches[count])
                    count += 1
            if count:
                new_start = (self._base_offsets[count] if count < len(self._batches)
                             else self._log_end)
                self._log_start = max(self._log_start, new_start)
                self._drop_front(count)
                self.leader_epoch_cache.truncate_from_start(self._log_start)
            return count

    def _drop_front(self, count: int) -> None:
        if count <= 0:
            return
        self._deleted_bytes += sum(len(b) for b in self._batches[:count])
        for column in (self._base_offsets, self._last_offsets, self._max_timestamps,
                       self._retention_times, self._batches, self._bytes_before):
            del column[:count]

    # -- the log's life: nothing to flush, release or remove in memory -------------------

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def delete(self) -> None:
        pass
