"""UnifiedLog: a partition's durable log, the :class:`~.base.PartitionLog` on disk.

Kafka's ``UnifiedLog`` over a :class:`~.local_log.LocalLog`: dense offsets
assigned under one lock as in the in-memory log, each batch written exactly
as its wire bytes (base offset set) to the active segment, which rolls on
``segment.bytes``, ``segment.ms`` or a full index.  It adds what the
segments alone do not know:

* the **log start offset** (DeleteRecords may put it inside a segment;
  retention and DeleteRecords delete whole segments below it);
* the **flush policy**: ``flush.messages`` appends, or ``flush.ms`` (checked
  by the LogManager's flusher), force an fsync; by default neither ever
  does and the OS writes pages back when it likes, as in Kafka.  A roll
  flushes the rolled segment in the background, moving the recovery point;
* **producer state** (:class:`~kafka_net.server.producer_state.ProducerStateManager`)
  and the partition's **transaction index**, snapshotted at each roll and
  on close (:mod:`.producer_snapshot`), aborted transactions kept in each
  segment's ``.txnindex``; both rebuilt on load from the latest snapshot
  and the batches after it.

Reads answer a :class:`~kafka_net.network.send.FileRegion` over one segment
file (Kafka reads one segment per partition per fetch), bounded by the end
published with the last complete append.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import threading
import time
import uuid
from typing import Callable

from kafka_net.protocol.records import Buffer, read_header, with_base_offset_and_epoch
from kafka_net.protocol.records.control import ABORT, COMMIT, control_type
from kafka_net.protocol.records.framing import RecordError
from kafka_net.server.producer_state import ProducerStateManager
from kafka_net.server.storage.base import (
    AppendResult, CleaningAborted, CorruptRecordException, FetchResult, OffsetOutOfRange,
    SegmentInfo)
from kafka_net.server.storage.checkpoint import fsync_dir, fsync_path, write_atomically
from kafka_net.server.storage.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT, LeaderEpochCache, checkpoint_text, parse_checkpoint)
from kafka_net.server.storage.local_log import LocalLog
from kafka_net.server.storage.producer_snapshot import (
    delete_snapshots_before, read_latest_snapshot, snapshot_path, sync_file, write_snapshot)
from kafka_net.server.storage.scheduler import LogScheduler
from kafka_net.server.storage.segment import CLEANED_SUFFIX, LogSegment, SegmentConfig
from kafka_net.server.storage.timestamps import first_record_at_or_after, first_record_with
from kafka_net.server.storage.txn_index import AbortedTxn, TransactionIndex
from kafka_net.server.storage.txn_index_file import append_aborted, read_aborted

log = logging.getLogger("kafka_net.server.storage.log")

# A read failing with one of these is the disk's failure (its log dir goes offline);
# an append failing with any OSError is, as in Kafka.
_DISK_ERRORS = frozenset({errno.EIO, errno.ENXIO, errno.ENODEV, errno.ENOSPC, errno.EDQUOT,
                          errno.EMFILE, errno.ENFILE, errno.EROFS, errno.EFBIG})




class UnifiedLog:
    def __init__(self, directory: str, config: Callable[[], SegmentConfig] | SegmentConfig
                 = SegmentConfig(), scheduler: LogScheduler | None = None, *,
                 recovery_point: int = 0, log_start_offset: int | None = 0,
                 had_clean_shutdown: bool = True, topic_id: uuid.UUID | None = None,
                 clock_ms: Callable[[], int] | None = None, refuse_truncation=None,
                 cleaner_checkpoint: int = 0, defer_epoch_writes: bool = False) -> None:
        self.directory = directory
        self.topic_id = topic_id
        self._config = config if callable(config) else (lambda: config)
        self._own_scheduler = scheduler is None
        self.scheduler = scheduler or LogScheduler()
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.log_ident = (f"[UnifiedLog partition={os.path.basename(directory)}, "
                          f"dir={os.path.dirname(directory)}] ")
        self._lock = threading.RLock()
        self.producer_state = ProducerStateManager()
        self.txns = TransactionIndex()
        self.local = LocalLog(directory, self._config, self.scheduler,
                              recovery_point=recovery_point, log_start_offset=log_start_offset,
                              had_clean_shutdown=had_clean_shutdown,
                              refuse_truncation=refuse_truncation,
                              cleaner_checkpoint=cleaner_checkpoint)
        first_base = self.local.segments[0].base_offset
        self._log_start = min(max(log_start_offset or 0, first_base), self.local.next_offset)
        self._publish_end()
        self.deleted_bytes = 0
        self._last_flush_ms = self.clock_ms()
        self._closed = False
        self.on_deleted: Callable[[], None] | None = None   # the LogManager forgets it
        # Set by the LogManager: an I/O error takes the log dir offline (Kafka's
        # LogDirFailureChannel); without one, the OSError goes to the caller.
        self.failure_channel = None
        self.log_dir = os.path.dirname(os.path.abspath(directory))
        self._rebuild_producer_state()
        self.txns.on_aborted = self._append_aborted
        # While the broker replays its metadata log, the leader-epoch-checkpoint is
        # written once at the end (write_deferred_epochs), not once per epoch replayed.
        self._defer_epochs = defer_epoch_writes
        self._epochs_dirty = False
        self.leader_epoch_cache = self._load_leader_epochs()

    # -- the PartitionLog protocol ------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._end[0]

    @property
    def recovery_point(self) -> int:
        return self.local.recovery_point

    @property
    def retained_bytes(self) -> int:
        return self.local.size_in_bytes()

    size_in_bytes = retained_bytes   # PartitionLog's name (DescribeLogDirs, kafka.log:type=Log)

    @property
    def size_bytes(self) -> int:
        """Bytes held plus those deleted from the front since the log was opened."""
        return self.retained_bytes + self.deleted_bytes

    def _publish_end(self) -> None:
        # (log end offset, active segment, its size): what readers may see.
        active = self.local.active_segment
        self._end = (self.local.next_offset, active, active.size)

    def append(self, batch: Buffer, record_count: int, max_timestamp: int,
               log_append_time_ms: int = -1, leader_epoch: int = 0) -> AppendResult:
        channel = self.failure_channel
        if channel is None:
            return self._append(batch, record_count, max_timestamp, log_append_time_ms,
                                leader_epoch)
        if channel.is_offline(self.log_dir):
            raise channel.offline_error(self.log_dir, "appending to " + self.name)
        try:
            return self._append(batch, record_count, max_timestamp, log_append_time_ms,
                                leader_epoch)
        except OSError as exc:
            # Nothing half-written is acknowledged: the offsets did not move, and
            # the bytes past the published size are cut at the next start.
            raise channel.failure(self.log_dir, "appending to " + self.name, exc) from None

    @property
    def name(self) -> str:
        return os.path.basename(self.directory)

    def _append(self, batch: Buffer, record_count: int, max_timestamp: int,
                log_append_time_ms: int, leader_epoch: int) -> AppendResult:
        with self._lock:
            local = self.local
            base = local.next_offset
            # the one copy the log keeps, stamped with the leader's epoch
            stored = with_base_offset_and_epoch(batch, base, leader_epoch)
            self.leader_epoch_cache.assign(leader_epoch, base)
            last = base + record_count - 1
            config = self._config()
            segment = local.segments[-1]   # the active segment
            if segment.should_roll(len(stored), max_timestamp, self.clock_ms(), config, last):
                segment = self.roll()
            segment.append(last, max_timestamp, base, stored)
            local.next_offset = last + 1
            # _publish_end, inline (this runs per batch): segment is the active one.
            self._end = (last + 1, segment, segment.log._size)
            if last + 1 - local.recovery_point >= config.flush_messages:
                self.flush()
            return AppendResult(base, last, log_append_time_ms, self._log_start)

    def read(self, fetch_offset: int, max_bytes: int, min_one_batch: bool,
             max_offset: int | None = None) -> FetchResult:
        channel = self.failure_channel
        if channel is None:
            return self._read(fetch_offset, max_bytes, min_one_batch, max_offset)
        if channel.is_offline(self.log_dir):
            raise channel.offline_error(self.log_dir, "reading " + self.name)
        try:
            return self._read(fetch_offset, max_bytes, min_one_batch, max_offset)
        except OSError as exc:
            if exc.errno not in _DISK_ERRORS:
                raise   # not the disk (a descriptor closed under a slow reader): a bug
            raise channel.failure(self.log_dir, "reading " + self.name, exc) from None

    def _read(self, fetch_offset: int, max_bytes: int, min_one_batch: bool,
              max_offset: int | None) -> FetchResult:
        end, active, active_size = self._end
        start = self._log_start
        if fetch_offset < start or fetch_offset > end:
            raise OffsetOutOfRange(f"offset {fetch_offset} is outside [{start}, {end}]")
        if fetch_offset == end:
            return FetchResult(b"", end, end, start)
        segments = self.local.segments
        index = self.local.segment_index_for(fetch_offset, segments)
        for segment in segments[index:]:
            if max_offset is not None and segment.base_offset >= max_offset:
                break
            region = segment.read(fetch_offset, max_bytes, min_one_batch, max_offset,
                                  active_size if segment is active else None)
            if region is not None:
                return FetchResult(region if region.size else b"", end, end, start)
        return FetchResult(b"", end, end, start)

    def bytes_from(self, fetch_offset: int) -> int:
        end, active, active_size = self._end
        if fetch_offset < self._log_start or fetch_offset > end:
            return 1
        if fetch_offset == end:
            return 0
        segments = self.local.segments
        index = self.local.segment_index_for(fetch_offset, segments)
        total = 0
        for i, segment in enumerate(segments[index:]):
            size = active_size if segment is active else segment.size
            if i == 0:
                batch = segment.translate_offset(fetch_offset)
                size = size - batch.position if batch is not None else 0
            total += max(size, 0)
        return total

    # -- timestamps ---------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """First record at or after the log start with a timestamp >= ``timestamp``:
        the time index finds where to start in the first segment that reaches it
        (Kafka's ``LogSegment.findOffsetByTimestamp``)."""
        start = self._log_start
        segments = self.local.segments
        for segment in segments[self.local.segment_index_for(start, segments):]:
            if segment.max_timestamp_so_far < timestamp:
                continue
            _, indexed = segment.time_index.lookup(timestamp)
            _, position = segment.offset_index.lookup(max(indexed, start))
            for batch in segment.batches(position):
                if batch.last_offset < start or batch.max_timestamp < timestamp:
                    continue
                hit = first_record_at_or_after(segment.read_batch(batch), timestamp, start)
                if hit is not None:
                    return hit
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        start = self._log_start
        segments = self.local.segments
        best = None   # (timestamp, segment, offset of its batch)
        for i, segment in enumerate(segments[self.local.segment_index_for(start, segments):]):
            if i == 0 and segment.base_offset < start:
                found = self._max_in(segment, start)    # part of it is below the log start
            elif segment.max_timestamp_so_far >= 0:
                found = (segment.max_timestamp_so_far, segment.offset_of_max_timestamp)
            else:
                found = None
            if found is not None and (best is None or found[0] > best[0]):
                best = (found[0], segment, found[1])
        if best is None:
            return None
        timestamp, segment, offset = best
        batch = segment.translate_offset(offset)
        return None if batch is None else first_record_with(segment.read_batch(batch), timestamp)

    @staticmethod
    def _max_in(segment: LogSegment, start: int) -> tuple[int, int] | None:
        found = None
        for batch in segment.batches(segment.offset_index.lookup(start)[1]):
            if batch.last_offset >= start and (found is None or batch.max_timestamp > found[0]):
                found = (batch.max_timestamp, batch.base_offset)
        return found

    # -- moving the log start -------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: the log start moves to ``offset`` (perhaps inside a segment);
        the segments wholly below it are deleted (Kafka's
        ``deleteLogStartOffsetBreachedSegments``)."""
        with self._lock:
            if offset > self._log_start:
                self._log_start = min(offset, self.local.next_offset)
                self.leader_epoch_cache.truncate_from_start(self._log_start)
                log.info("%sIncremented log start offset to %d due to client delete records "
                         "request", self.log_ident, self._log_start)
                segments = self.local.segments
                doomed = [s for s, after in zip(segments, segments[1:])
                          if after.base_offset <= self._log_start]
                self._delete_segments(doomed, "log start offset breach")
            return self._log_start

    def delete_retained(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Whole segments past retention.ms (by their largest timestamp), then the
        oldest while the rest exceeds retention.bytes (Kafka's
        ``deleteRetentionMsBreachedSegments`` / ``deleteRetentionSizeBreachedSegments``);
        the active segment too, after rolling a new one.  Returns how many."""
        with self._lock:
            deleted = 0
            if retention_ms >= 0:
                deleted += self._delete_old_segments(
                    lambda s, _: now_ms - s.largest_timestamp() > retention_ms,
                    f"retention time {retention_ms}ms breach")
            if retention_bytes >= 0:
                excess = [self.local.size_in_bytes() - retention_bytes]

                def over_size(segment, _):
                    if excess[0] - segment.size >= 0:
                        excess[0] -= segment.size
                        return True
                    return False

                deleted += self._delete_old_segments(
                    over_size, f"retention size in bytes {retention_bytes} breach")
            return deleted

    def _delete_old_segments(self, predicate, reason: str) -> int:
        segments = self.local.segments
        doomed = []
        for i, segment in enumerate(segments):
            last_and_empty = i == len(segments) - 1 and segment.size == 0
            if last_and_empty or not predicate(segment, None):
                break
            doomed.append(segment)
        if not doomed:
            return 0
        if len(doomed) == len(segments):
            self.roll()   # Kafka keeps an active segment: a new, empty one
        self._delete_segments(doomed, reason)
        self._log_start = max(self._log_start, self.local.segments[0].base_offset)
        self.leader_epoch_cache.truncate_from_start(self._log_start)
        return len(doomed)

    def _delete_segments(self, doomed, reason: str) -> None:
        if not doomed:
            return
        log.info("%sDeleting segments due to %s: %s", self.log_ident, reason,
                 ",".join(repr(s) for s in doomed))
        self.deleted_bytes += sum(s.size for s in doomed)
        self.local.remove_and_delete_segments(doomed)
        delete_snapshots_before(self.directory, self.local.segments[0].base_offset)

    # -- leader epochs: leader-epoch-checkpoint -------------------------------------------

    def _load_leader_epochs(self) -> LeaderEpochCache:
        """The cache as the checkpoint left it, cut to what the log holds now
        (recovery may have truncated it; Kafka's ``LeaderEpochFileCache`` is
        truncated the same way at load), and saved on every later change."""
        path = os.path.join(self.directory, LEADER_EPOCH_CHECKPOINT)
        entries: list[tuple[int, int]] = []
        try:
            with open(path, encoding="ascii") as fh:
                entries = parse_checkpoint(fh.read())
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            log.warning("%sIgnoring an unreadable %s: %s", self.log_ident,
                        LEADER_EPOCH_CHECKPOINT, exc)
        cache = LeaderEpochCache(entries)
        cache.truncate_from_end(self.local.next_offset)
        cache.truncate_from_start(self._log_start)
        cache.on_change = self._write_leader_epochs
        if entries != cache.entries():
            self._write_leader_epochs(cache)
        return cache

    def _write_leader_epochs(self, cache: LeaderEpochCache | None = None) -> None:
        if self._closed:
            return
        if self._defer_epochs:
            self._epochs_dirty = True
            return
        cache = cache or self.leader_epoch_cache
        write_atomically(os.path.join(self.directory, LEADER_EPOCH_CHECKPOINT),
                         checkpoint_text(cache.entries()).encode("ascii"))

    @property
    def epochs_pending(self) -> bool:
        """A replay changed the leader epochs and the checkpoint is not written yet."""
        return self._epochs_dirty

    def write_deferred_epochs(self) -> None:
        """The end of a replay: the checkpoint written once, if the cache changed."""
        with self._lock:   # an append may assign an epoch meanwhile
            self._defer_epochs = False
            if self._epochs_dirty:
                self._epochs_dirty = False
                self._write_leader_epochs()

    # -- rolling, flushing, producer state ------------------------------------------------

    def roll(self) -> LogSegment:
        """A new active segment; the old one is flushed in the background and a
        producer snapshot written at the new base offset (Kafka's ``UnifiedLog.roll``)."""
        with self._lock:
            old = self.local.active_segment
            segment = self.local.roll()
            if segment is not old:
                self._publish_end()
                snapshot = self.take_snapshot(sync=False)
                up_to = segment.base_offset

                def flush_rolled() -> None:
                    self.flush_up_to(up_to, background=True)
                    if snapshot is not None:
                        sync_file(snapshot)

                self.scheduler.schedule_once("flush-log", flush_rolled)
            return segment

    def flush_up_to(self, offset: int, background: bool = False) -> None:
        """fsync up to ``offset``.  A failure raises, except in ``background`` (after
        a roll, ``flush.ms``), where the dir goes offline with one line instead of
        a traceback per scheduled run; an append's flush (``flush.messages``)
        must fail the append."""
        channel = self.failure_channel
        if channel is not None and channel.is_offline(self.log_dir):
            return   # nothing is written to a failed dir any more
        with self._lock:
            if self._closed:
                return
            try:
                self.local.flush(offset)
            except OSError as exc:
                if channel is None or not background:
                    raise
                channel.failure(self.log_dir, "flushing " + self.name, exc)
                return
            self._last_flush_ms = self.clock_ms()

    def flush_recovered_in_background(self) -> None:
        """After a crash: the segments past the recovery point were checked, not
        flushed, and the recovery point stayed (Kafka's LogLoader).  One flush on the
        scheduler moves it, so that the next crash re-scans what came since and not
        the same segments again; the start does not wait on the fsyncs."""
        end = self.log_end_offset
        if end > self.recovery_point:
            self.scheduler.schedule_once(
                "flush-recovered", lambda: self.flush_up_to(end, background=True))

    def flush(self) -> None:
        """fsync everything appended so far; the recovery point moves to the log end."""
        self.flush_up_to(self.log_end_offset)

    def maybe_flush_by_time(self, now_ms: int) -> None:
        """The flusher's check: ``flush.ms`` since the last flush (Kafka's
        ``LogManager.flushDirtyLogs``)."""
        if (now_ms - self._last_flush_ms >= self._config().flush_ms
                and self.log_end_offset > self.recovery_point):
            self.flush_up_to(self.log_end_offset, background=True)

    def take_snapshot(self, sync: bool = True) -> str | None:
        """Write the producer state as of the log end, unless a snapshot there exists
        already or the log is empty (Kafka writes one only past the last)."""
        with self._lock:
            offset = self.local.next_offset
            if offset <= self._snapshot_offset or (
                    offset == self.local.segments[0].base_offset
                    and not self.producer_state.active_producers()):
                return None
            self._snapshot_offset = offset
            return write_snapshot(self.directory, offset, self.producer_state,
                                  self.txns.ongoing(), sync)

    def _append_aborted(self, txn: AbortedTxn) -> None:
        segments = self.local.segments
        segment = segments[self.local.segment_index_for(txn.last_offset, segments)]
        append_aborted(segment.txn_index_path, txn, self.txns.last_stable_offset(
            self.local.next_offset))

    def _rebuild_producer_state(self) -> None:
        """The latest snapshot at or below the log end, then the batches after it
        (Kafka's ``UnifiedLog.rebuildProducerState``); aborted transactions from the
        ``.txnindex`` of the segments before, rebuilt for the segments replayed."""
        began = time.monotonic()
        end = self.local.next_offset
        snapshot = read_latest_snapshot(self.directory, end, self.log_ident)
        self._snapshot_offset = snapshot[0] if snapshot is not None else -1
        replay_from = self.local.segments[0].base_offset
        if snapshot is not None and snapshot[0] >= replay_from:
            replay_from, entries, ongoing = snapshot
            self.producer_state.load(entries)
        else:
            ongoing = {}
        aborted = []
        for segment in self.local.segments:
            aborted.extend(read_aborted(segment.txn_index_path, before=replay_from
                                        if segment.base_offset <= replay_from else 0))
        self.txns.restore(ongoing, aborted)
        if replay_from < end:
            log.info("%sLoading producer state till offset %d", self.log_ident, end)
            self.txns.on_aborted = self._append_aborted
            self._replay(replay_from)
        log.info("%sProducer state recovery took %d ms for snapshot load and replay "
                 "from offset %d", self.log_ident, (time.monotonic() - began) * 1000, replay_from)

    def _replay(self, start: int) -> None:
        segments = self.local.segments
        for segment in segments[self.local.segment_index_for(start, segments):]:
            try:
                for batch in segment.batches(segment.offset_index.lookup(start)[1]):
                    if batch.last_offset < start:
                        continue
                    self._replay_batch(segment.read_batch(batch))
            except CorruptRecordException as exc:
                # The broker still starts: Fetch answers CORRUPT_MESSAGE there, and the
                # producers of the batches past it start from what was read.
                log.error("%sProducer state rebuilt only up to damage in segment %d: %s",
                          self.log_ident, segment.base_offset, exc)

    def _replay_batch(self, data: bytes) -> None:
        header = read_header(data)
        if header.producer_id < 0:
            return
        if header.is_control:
            try:
                kind = control_type(data, header)
            except (RecordError, IndexError):
                return
            if kind in (ABORT, COMMIT):
                self.producer_state.record_marker(header.producer_id, header.producer_epoch)
                self.txns.on_marker(header.producer_id, kind == COMMIT, header.base_offset)
            return
        self.producer_state.record(header.producer_id, header.producer_epoch,
                                   header.base_sequence, header.records_count,
                                   header.base_offset, header.last_offset, header.max_timestamp)
        if header.is_transactional:
            self.txns.on_transactional_append(header.producer_id, header.base_offset)

    # -- for the log cleaner (storage/base.py's CleanableLog) ------------------------------

    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first; the last is the active one (never cleaned)."""
        return self.local.segments

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty segment written as ``<base>.log.cleaned`` (and its indexes), to
        fill with the batches a cleaning keeps and pass to :meth:`replace_segments`."""
        return LogSegment(self.directory, base_offset, self._config(), create=True,
                          suffix=CLEANED_SUFFIX)

    def segment_infos(self) -> list[SegmentInfo]:
        segments, end = self.local.segments, self.log_end_offset
        infos = []
        for n, segment in enumerate(segments):
            try:
                first = segment.log.header_at(0)
            except OSError:     # deleted (retention) since the tuple was taken
                continue
            infos.append(SegmentInfo(
                segment.base_offset,
                segments[n + 1].base_offset if n + 1 < len(segments) else end,
                segment.size, segment.largest_timestamp(),
                first.max_timestamp if first is not None else -1))
        return infos

    def batches_between(self, start: int, end: int):
        """The batches based in [start, end), read a segment at a time."""
        segments = self.local.segments
        for segment in segments[self.local.segment_index_for(start, segments):]:
            if segment.base_offset >= end:
                return
            try:
                for batch in segment.batches(segment.offset_index.lookup(start)[1]):
                    if batch.base_offset >= end:
                        return
                    if batch.base_offset >= start:
                        yield segment.read_batch(batch)
            except OSError as exc:
                if any(s is segment for s in self.local.segments):
                    raise
                # Named by its offset: the segment's file is closed, and its repr
                # would read the file's time.
                raise CleaningAborted(
                    f"segment {segment.base_offset} was deleted while read") from exc

    def replace_cleaned(self, start: int, end: int, cleaned, before_swap=None) -> None:
        """Write ``cleaned`` to a ``.cleaned`` segment based at ``start`` (its
        ``.txnindex`` keeping the aborted transactions whose markers it kept), flush
        it, then swap it in for the segments based in [start, end) (Kafka's
        ``Cleaner.cleanSegments`` and ``replaceSegments``).  If retention or
        DeleteRecords removed one of those meanwhile, the cleaned segment is dropped
        and :class:`CleaningAborted` raised (Kafka aborts that cleaning)."""
        old = [s for s in self.local.segments[:-1] if start <= s.base_offset < end]
        if not old:
            return
        new = self.new_cleaned_segment(start)
        try:
            kept_markers = self._write_cleaned(new, cleaned)
            aborted = [t for s in old for t in read_aborted(s.txn_index_path)
                       if t.last_offset in kept_markers]
            for txn in aborted:
                append_aborted(new.txn_index_path, txn, txn.last_offset)
            new.on_became_inactive()
            new.flush()
            if before_swap is not None:
                before_swap()
            with self._lock:
                current = {id(s) for s in self.local.segments[:-1]}
                if any(id(s) not in current for s in old):
                    raise CleaningAborted(f"segments of [{start}, {end}) were deleted meanwhile")
                log.info("%sSwapping in cleaned segment %r for segment(s) %s", self.log_ident,
                         new, ",".join(repr(s) for s in old))
                self.local.replace_segments([new], old)
                self._publish_end()
                self._delete_replaced_snapshots([new], old)
        except BaseException:
            new.delete_files()
            raise

    @staticmethod
    def _write_cleaned(segment: LogSegment, cleaned) -> set[int]:
        """Append the cleaned batches; return the offsets of the control batches kept."""
        markers = set()
        for batch in cleaned:
            header = read_header(batch)
            segment.append(header.last_offset, header.max_timestamp, header.base_offset, batch)
            if header.is_control:
                markers.add(header.base_offset)
        return markers

    def replace_segments(self, new_segments, old_segments) -> None:
        """Swap ``new_segments`` (from :meth:`new_cleaned_segment`) in for
        ``old_segments``, crash-safely (LocalLog.replace_segments)."""
        with self._lock:
            self.local.replace_segments(new_segments, old_segments)
            self._publish_end()
            self._delete_replaced_snapshots(new_segments, old_segments)

    def _delete_replaced_snapshots(self, new_segments, old_segments) -> None:
        """The producer snapshots at the base offsets of replaced segments (Kafka's
        ``UnifiedLog.replaceSegments``): the cleaner would otherwise leave one per
        segment it ever merged.  The latest snapshot is at the active segment or
        past it, never among them."""
        kept = {s.base_offset for s in new_segments}
        for segment in old_segments:
            if segment.base_offset not in kept:
                try:
                    os.unlink(snapshot_path(self.directory, segment.base_offset))
                except FileNotFoundError:
                    pass

    # -- the log's life -------------------------------------------------------------------

    def close(self) -> None:
        """Flush, write a producer snapshot at the log end, close the files."""
        with self._lock:
            if self._closed:
                return
            self.flush()
            self.take_snapshot()
            self._closed = True
            self.local.close()
        if self._own_scheduler:
            self.scheduler.shutdown()

    def copy_to(self, directory: str) -> None:
        """Copy the log, as a clean shutdown would leave it (flushed, a producer
        snapshot at the log end), into the new folder ``directory``, every file
        fsynced (AlterReplicaLogDirs: the future replica in another log dir).
        Under the log's lock, so no append, roll, retention or cleaned-segment swap
        changes the files meanwhile; a half-written ``.cleaned`` file copied along
        is removed when the copy is opened, as after a crash."""
        with self._lock:
            self.flush()
            self.take_snapshot()
            os.makedirs(directory)
            for name in sorted(os.listdir(self.directory)):
                source = os.path.join(self.directory, name)
                if os.path.isfile(source):
                    _copy_synced(source, os.path.join(directory, name))
            fsync_dir(directory)

    def release(self) -> None:
        """Close every file without writing (its log dir failed): the next start
        recovers from the files as they are."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for segment in self.local.segments:
                segment.release()
        if self._own_scheduler:
            self.scheduler.shutdown()

    def delete(self) -> None:
        """DeleteTopics: the folder is renamed ``<topic>-<partition>.<id>-delete``
        and removed after ``file.delete.delay.ms`` (Kafka's ``asyncDelete``)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            doomed = f"{self.directory}.{uuid.uuid4().hex}-delete"
            os.replace(self.directory, doomed)
            segments = self.local.segments

        def remove() -> None:
            for segment in segments:
                segment.release()
            shutil.rmtree(doomed, ignore_errors=True)

        log.info("%sScheduling log for deletion: %s", self.log_ident, doomed)
        self.scheduler.schedule_once("delete-log", remove, self._config().file_delete_delay_ms)
        if self.on_deleted is not None:
            self.on_deleted()
        if self._own_scheduler:
            self.scheduler.shutdown()


def _copy_synced(source: str, destination: str) -> None:
    """One file copied and fsynced (the copy must outlive a crash before the rename
    that makes it the partition's folder)."""
    shutil.copyfile(source, destination)
    fsync_path(destination)
