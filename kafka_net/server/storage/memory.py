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

Segments, for the log cleaner: batches are grouped as Kafka groups them in
segment files.  A new segment starts ("rolls", Kafka's ``UnifiedLog.maybeRoll``
and ``LogSegment.shouldRoll``) when the batch would take the active segment
past ``segment.bytes``, or when the batch's max timestamp is more than
``segment.ms`` past the max timestamp of the segment's first batch (past the
segment's creation time when the batches carry no timestamps); a compacted
log uses ``max.compaction.lag.ms`` if smaller (``LogConfig.maxSegmentMs``).
The last segment is the *active segment*, which the cleaner never cleans.
:meth:`InMemoryLog.segment_infos` describes the segments; the others are
cleaned in place (:meth:`InMemoryLog.replace_cleaned`), their batches
replaced by the cleaned ones at the same offsets, and the cleaned segments
merged up to ``segment.bytes`` as Kafka's ``groupSegmentsBySize`` does.
Only the roll points are kept (``_segment_bases``, the base offset of each
segment's first batch): the batches themselves stay in one list.
"""

from __future__ import annotations

import bisect
import threading
import time

from kafka_net.protocol.records import Buffer, read_header, with_base_offset_and_epoch
from kafka_net.server.storage.base import (
    AppendResult, FetchResult, OffsetOutOfRange, SegmentInfo)
from kafka_net.server.storage.leader_epoch import LeaderEpochCache
from kafka_net.server.storage.timestamps import first_record_at_or_after, first_record_with


DEFAULT_SEGMENT_BYTES = 1073741824   # segment.bytes
DEFAULT_SEGMENT_MS = 604800000       # segment.ms


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
        self._deleted_bytes = 0                # of which deleted (retention, cleaning)
        self.leader_epoch_cache = LeaderEpochCache()
        # Segments (see the module docstring): the base offset of each segment's
        # first batch; the last one is the active segment.
        self._segment_bases: list[int] = []
        self._active_bytes = 0
        self._active_first_timestamp = -1      # max timestamp of its first batch
        self._active_created_ms = 0
        self.segment_bytes = DEFAULT_SEGMENT_BYTES
        self.segment_ms = DEFAULT_SEGMENT_MS

    def update_config(self, config) -> None:
        """The topic's configs changed (Kafka's ``UnifiedLog.updateConfig``): the
        roll settings apply from the next append."""
        self.segment_bytes = config.segment_bytes
        # Kafka's LogConfig.maxSegmentMs (max.compaction.lag.ms for a compacted log)
        self.segment_ms = config.segment.segment_ms

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
            size = len(stored)
            retention_time = max_timestamp if max_timestamp >= 0 else int(time.time() * 1000)
            # LogSegment.shouldRoll, inline (this runs per produced batch): by size, or by
            # time, the batch's timestamp against the segment's first batch's, else (no
            # timestamps to go by) the segment's age
            first = self._active_first_timestamp
            if first >= 0 and max_timestamp >= 0:
                waited = max_timestamp - first
            else:
                waited = (retention_time if max_timestamp < 0 else int(time.time() * 1000)) \
                    - self._active_created_ms
            if not self._active_bytes or self._active_bytes + size > self.segment_bytes \
                    or waited > self.segment_ms:
                self._roll(base, max_timestamp)
            self._active_bytes += size
            # Offsets follow the batch's own last_offset_delta (validated equal to
            # record_count - 1 for client batches), so offsets stay dense.
            last = base + record_count - 1
            self._base_offsets.append(base)
            self._last_offsets.append(last)
            self._max_timestamps.append(max_timestamp)
            self._retention_times.append(retention_time)
            self._bytes_before.append(self.size_bytes)
            self._batches.append(stored)
            self._log_end = last + 1
            self.size_bytes += size
            return AppendResult(base, last, log_append_time_ms, self._log_start)

    def _roll(self, base: int, first_timestamp: int) -> None:
        self._segment_bases.append(base)
        self._active_bytes = 0
        self._active_first_timestamp = first_timestamp
        self._active_created_ms = int(time.time() * 1000)

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
        self._trim_segments()

    def _trim_segments(self) -> None:
        """Segment roll points after batches left the front: the first batch left
        starts the first segment; an empty log starts a new one on its next append."""
        if not self._batches:
            self._segment_bases.clear()
            self._active_bytes = 0
            return
        first = self._base_offsets[0]
        index = bisect.bisect_right(self._segment_bases, first)
        del self._segment_bases[:index]
        self._segment_bases.insert(0, first)
        if len(self._segment_bases) == 1:   # what is left is all in the active segment
            self._active_bytes = self.retained_bytes

    # -- segments, for the log cleaner (Kafka's logSegments / replaceSegments) ------------

    @property
    def active_segment_base(self) -> int:
        """Base offset of the active segment (the log end offset while the log is empty)."""
        with self._lock:
            return self._segment_bases[-1] if self._segment_bases else self._log_end

    def segment_infos(self) -> list[SegmentInfo]:
        """Every segment, the active one last."""
        with self._lock:
            bases = self._segment_bases
            out = []
            for n, base in enumerate(bases):
                start = bisect.bisect_left(self._base_offsets, base)
                end = (bisect.bisect_left(self._base_offsets, bases[n + 1])
                       if n + 1 < len(bases) else len(self._batches))
                next_offset = bases[n + 1] if n + 1 < len(bases) else self._log_end
                size = sum(len(b) for b in self._batches[start:end])
                largest = max(self._max_timestamps[start:end], default=-1)
                first_ts = self._max_timestamps[start] if start < end else -1
                out.append(SegmentInfo(base, next_offset, size, largest, first_ts))
            return out

    def batches_between(self, start: int, end: int) -> list[bytes]:
        """The stored batches whose base offset is in [start, end)."""
        with self._lock:
            first = bisect.bisect_left(self._base_offsets, start)
            last = bisect.bisect_left(self._base_offsets, end)
            return self._batches[first:last]

    def replace_cleaned(self, start: int, end: int, cleaned, before_swap=None) -> None:
        """Swap the batches based in [start, end) for ``cleaned`` (the log cleaner's
        output for them: a subset of their offsets, each batch at its base offset),
        as one segment (Kafka's ``replaceSegments``); ``before_swap`` runs between
        the two.  Batches deleted from the front meanwhile (retention,
        DeleteRecords) stay deleted."""
        cleaned = list(cleaned)
        if before_swap is not None:
            before_swap()
        with self._lock:
            first = bisect.bisect_left(self._base_offsets, start)
            last = bisect.bisect_left(self._base_offsets, end)
            if first < last:
                floor = self._base_offsets[first]
                cleaned = [b for b in cleaned if read_header(b).base_offset >= floor]
            else:
                cleaned = []
            self._splice(first, last, cleaned)
            lo = bisect.bisect_left(self._segment_bases, start)
            hi = bisect.bisect_left(self._segment_bases, end)
            self._segment_bases[lo:hi] = [start] if cleaned else []
            if self._batches and self._segment_bases[0] != self._base_offsets[0]:
                self._trim_segments()

    def _splice(self, first: int, last: int, cleaned: list[bytes]) -> None:
        old_bytes = sum(len(b) for b in self._batches[first:last])
        headers = [read_header(b) for b in cleaned]
        after = self._bytes_before[last] if last < len(self._batches) else self.size_bytes
        sizes = [len(b) for b in cleaned]
        before, running = [], after - sum(sizes)
        for size in sizes:
            before.append(running)
            running += size
        old_times = dict(zip(self._base_offsets[first:last], self._retention_times[first:last]))
        self._base_offsets[first:last] = [h.base_offset for h in headers]
        self._last_offsets[first:last] = [h.last_offset for h in headers]
        self._max_timestamps[first:last] = [h.max_timestamp for h in headers]
        self._retention_times[first:last] = [
            h.max_timestamp if h.max_timestamp >= 0 else old_times[h.base_offset]
            for h in headers]
        self._batches[first:last] = cleaned
        self._bytes_before[first:last] = before
        self._deleted_bytes += old_bytes - sum(sizes)

    # -- the log's life: nothing to flush, release or remove in memory -------------------

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def delete(self) -> None:
        pass
