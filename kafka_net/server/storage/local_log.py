"""LocalLog: one partition's segments in its ``<topic>-<partition>`` folder.

Kafka's ``LocalLog``: the ordered segments, the next offset, the recovery
point (everything below it was flushed), rolling a new active segment,
deleting segments (renamed ``.deleted``, their files removed
``file.delete.delay.ms`` later, so a Fetch already answered from them can
still be sent), and :meth:`replace_segments` for the log cleaner.

Loading is Kafka's ``LogLoader``: leftover ``.deleted`` and ``.cleaned``
files removed, ``.swap`` files completed, each segment opened, and
- after a clean shutdown: nothing scanned (the next offset comes from the
  last index entry and a short scan of the active segment's tail);
- after a crash: every segment from the one holding the recovery point is
  recovered (:meth:`LogSegment.recover`); at the first damaged batch the
  segment is cut there and every later segment deleted.
A missing or corrupt index is rebuilt from its ``.log`` either way.

Segments are published as a tuple replaced on each change, so readers take
the current one without the log's lock; appends and changes hold it.
"""

from __future__ import annotations

import bisect
import logging
import os
from typing import Callable

from kafka_net.server.storage.index import CorruptIndexError
from kafka_net.server.storage.scheduler import LogScheduler
from kafka_net.server.storage.segment import (
    CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX, LogSegment, SegmentConfig, offset_from_filename)

log = logging.getLogger("kafka_net.server.storage.log")


# The files of a segment (not producer snapshots, which carry offsets in their names too).
_SEGMENT_FILE_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


def _offset_of(name: str) -> int | None:
    """The offset a segment file's name starts with, or None."""
    head = name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def parse_topic_partition_name(name: str) -> tuple[str, int] | None:
    """``orders-3`` -> ("orders", 3); None for anything else (Kafka's
    ``UnifiedLog.parseTopicPartitionName``)."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)


class LocalLog:
    def __init__(self, directory: str, config: Callable[[], SegmentConfig],
                 scheduler: LogScheduler, *, recovery_point: int = 0,
                 log_start_offset: int | None = 0, had_clean_shutdown: bool = True,
                 on_recovered_batch=None, refuse_truncation=None,
                 cleaner_checkpoint: int = 0) -> None:
        self.directory = directory
        self.config = config
        self.scheduler = scheduler
        self.log_ident = f"[LocalLog partition={os.path.basename(directory)}, " \
                         f"dir={os.path.dirname(directory)}] "
        os.makedirs(directory, exist_ok=True)
        self.segments: tuple[LogSegment, ...] = ()
        self._bases: list[int] = []
        self.recovery_point = recovery_point
        self.truncations: list[str] = []   # what recovery cut, for the caller's log line
        # (segment, valid bytes, reason, later segments) -> raises to refuse cutting a
        # damaged batch (the metadata log); a torn last batch is cut anyway.
        self.refuse_truncation = refuse_truncation
        self._named_lost: set[int] = set()   # base offsets whose loss was already named
        # None: not checkpointed (or the checkpoint was garbled), so unknown.
        self._load(log_start_offset or 0, had_clean_shutdown, on_recovered_batch)
        self._name_missing_segments(log_start_offset, had_clean_shutdown, recovery_point,
                                    cleaner_checkpoint)

    # -- loading (Kafka's LogLoader) ------------------------------------------------------

    def _load(self, log_start_offset: int, clean: bool, on_batch) -> None:
        self._remove_temp_files()
        segments = []
        for name in sorted(os.listdir(self.directory)):
            if name.endswith(LOG_SUFFIX):
                segments.append(self._open_segment(offset_from_filename(name)))
        self._set_segments(segments)
        self._remove_orphan_indexes()
        if not clean and segments:
            self._recover_unflushed(on_batch)
        if not self.segments:
            self._set_segments([LogSegment(self.directory, log_start_offset, self.config(),
                                           create=True)])
        self.next_offset, end = self.active_segment.scan_tail()
        if end < self.active_segment.size:
            # Bytes after the last whole batch, though the shutdown was clean: the
            # file was damaged since.  Appending after them would bury them in the log.
            log.warning("%sThe active segment %d ends with %d bytes that are not a whole "
                        "batch; recovering it", self.log_ident, self.active_segment.base_offset,
                        self.active_segment.size - end)
            self._recover_segment(self.active_segment, on_batch)
            self.next_offset = self.active_segment.read_next_offset()
        # Kafka's LogLoader: after a crash too, the recovery point moves only when a
        # flush puts what it passes on disk; never past the log end.
        self.recovery_point = min(self.recovery_point, self.next_offset)

    def _remove_orphan_indexes(self) -> None:
        """Index files whose ``.log`` is gone (Kafka's LogLoader deletes them with a
        warning).  Here the loss is named too: the segment's records are gone, and
        which offsets they were is known from the file name and the next segment."""
        bases = set(self._bases)
        orphans = sorted({offset for name in os.listdir(self.directory)
                          if name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX))
                          and (offset := _offset_of(name)) is not None
                          and offset not in bases})
        for base in orphans:
            later = [b for b in self._bases if b > base]
            lost = f"offsets {base} to {later[0] - 1}" if later else f"offsets from {base}"
            log.error("%sThe log file of segment %d is missing (its index files are here): "
                      "%s of %s are lost. Removing the orphaned index files.",
                      self.log_ident, base, lost, os.path.basename(self.directory))
            self.truncations.append(f"segment {base} missing: {lost} lost")
            self._named_lost.add(base)
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                path = os.path.join(self.directory, f"{base:020d}{suffix}")
                if os.path.exists(path):
                    os.unlink(path)

    def _name_missing_segments(self, log_start_offset: int | None, clean: bool,
                               checkpointed_recovery_point: int,
                               cleaner_checkpoint: int) -> None:
        """Segments gone with every file.  Kafka's LogLoader cannot see them (no
        file is left to find) and starts with a hole; here each hole is named."""
        holes = self._holes(log_start_offset, clean, checkpointed_recovery_point,
                            cleaner_checkpoint)
        for first, after, answer in holes:
            if any(first <= base < after for base in self._named_lost):
                continue   # named with its orphaned index files
            log.error("%sNo segment holds offsets %d to %d of %s: the segment files that held "
                      "them are missing, and their records are lost. %s", self.log_ident,
                      first, after - 1, os.path.basename(self.directory), answer)
            self.truncations.append(f"offsets {first} to {after - 1} missing")

    def _holes(self, log_start_offset: int | None, clean: bool,
               checkpointed_recovery_point: int, cleaner_checkpoint: int) -> list:
        """(first offset, offset after, what a Fetch there gets) of each hole.  The
        segments of a log follow each other without a gap except where the cleaner
        removed records (below its checkpoint); after a clean stop the log started
        at the checkpointed log start offset and ended at the recovery point."""
        segments = self.segments
        holes = []
        if clean and log_start_offset is not None and log_start_offset < segments[0].base_offset:
            holes.append((log_start_offset, segments[0].base_offset,
                          "The log now starts there; a Fetch below it is answered "
                          "OFFSET_OUT_OF_RANGE."))
        for previous, following in zip(segments, segments[1:]):
            if following.base_offset <= cleaner_checkpoint:
                continue   # the cleaner leaves gaps in what it cleaned
            end = previous.read_next_offset()
            if end < following.base_offset:
                # Kafka answers a Fetch in a gap (a compacted log's) with the next
                # batch there is, so the consumer jumps it: the log line is what tells.
                holes.append((end, following.base_offset,
                              f"A Fetch there is answered from offset {following.base_offset}."))
        if clean and not self.truncations and self.next_offset < checkpointed_recovery_point:
            holes.append((self.next_offset, checkpointed_recovery_point,
                          "The log now ends there; new records take those offsets again."))
        return holes

    def _remove_temp_files(self) -> None:
        """Kafka's ``LogLoader``: ``.deleted`` files removed; ``.swap`` files (cleaned
        segments whose swap was cut short) completed, the old segments in the
        offsets they cover deleted first; ``.cleaned`` files (a cleaning cut short
        before its swap) removed, with any ``.swap`` at or above the lowest of them
        (KAFKA-6264: part of an incomplete split)."""
        names = os.listdir(self.directory)
        cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX)]
        min_cleaned = min((_offset_of(n) for n in cleaned), default=None)
        for name in names:
            doomed = name.endswith(DELETED_SUFFIX) or name.endswith(CLEANED_SUFFIX) or (
                name.endswith(SWAP_SUFFIX) and min_cleaned is not None
                and _offset_of(name) is not None and _offset_of(name) >= min_cleaned)
            if doomed:
                os.unlink(os.path.join(self.directory, name))
        swaps = sorted(n for n in os.listdir(self.directory) if n.endswith(SWAP_SUFFIX))
        covered = self._swapped_range([n for n in swaps if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)])
        if covered is not None:
            low, high = covered
            for name in sorted(os.listdir(self.directory)):
                offset = _offset_of(name)
                if name.endswith(_SEGMENT_FILE_SUFFIXES) and offset is not None \
                        and low <= offset < high:
                    log.info("%sDeleting segment files %s that is compacted but has not been "
                             "deleted yet.", self.log_ident, name)
                    os.unlink(os.path.join(self.directory, name))
        for name in swaps:
            # A swap file is a complete cleaned segment whose rename was cut short:
            # finish it (Kafka's LogLoader completes swaps the same way).
            final = os.path.join(self.directory, name[:-len(SWAP_SUFFIX)])
            log.info("%sRecovering file %s by renaming from %s files.",
                     self.log_ident, os.path.basename(final), SWAP_SUFFIX)
            os.replace(os.path.join(self.directory, name), final)

    def _swapped_range(self, swap_logs: list[str]) -> tuple[int, int] | None:
        """[lowest base offset, highest next offset) of the ``.log.swap`` files."""
        if not swap_logs:
            return None
        low, high = None, None
        for name in swap_logs:
            base = offset_from_filename(name)
            log.info("%sFound log file %s from interrupted swap operation, which is "
                     "recoverable from %s files by renaming.", self.log_ident, name, SWAP_SUFFIX)
            segment = LogSegment(self.directory, base, self.config(), suffix=SWAP_SUFFIX)
            try:
                next_offset = segment.read_next_offset()
            finally:
                segment.release()
            low = base if low is None else min(low, base)
            high = next_offset if high is None else max(high, next_offset)
        return low, high

    def _open_segment(self, base_offset: int) -> LogSegment:
        prefix = os.path.join(self.directory, f"{base_offset:020d}")
        segment = LogSegment(self.directory, base_offset, self.config())
        # An index file is created with its first entry (index.py), so an empty
        # segment (a partition never written to) rightly has none.
        missing = [s for s in (INDEX_SUFFIX, TIME_INDEX_SUFFIX)
                   if not os.path.exists(prefix + s)] if segment.size else []
        reason = None
        if missing:
            reason = f"missing index file(s) {', '.join(missing)}"
        else:
            try:
                segment.offset_index.sanity_check()
                segment.time_index.sanity_check()
            except CorruptIndexError as exc:
                reason = str(exc)
        if reason is not None:
            log.warning("%sFound a corrupted index file corresponding to log file %s due to "
                        "%s, recovering segment and rebuilding index files...",
                        self.log_ident, segment.log.path, reason)
            self._recover_segment(segment, None)
        return segment

    def _recover_unflushed(self, on_batch) -> None:
        index = max(0, bisect.bisect_right(self._bases, self.recovery_point) - 1)
        unflushed = list(self.segments[index:])
        for number, segment in enumerate(unflushed):
            log.info("%sRecovering unflushed segment %d. %d/%d recovered for %s.",
                     self.log_ident, segment.base_offset, number, len(unflushed),
                     os.path.basename(self.directory))
            # Checked, not necessarily on disk: the recovery point stays where it
            # was until a flush (UnifiedLog.flush_recovered_in_background).
            truncated = self._recover_segment(segment, on_batch)
            if truncated > 0:
                rest = unflushed[number + 1:]
                log.warning("%sCorruption found in segment %d, truncating to offset %d",
                            self.log_ident, segment.base_offset, segment.read_next_offset())
                for later in rest:
                    later.delete_files()
                self._set_segments(self.segments[:index + number + 1])
                return

    def _before_truncate(self, segment: LogSegment, valid_bytes: int, reason: str,
                         torn: bool) -> None:
        later = [s for s in self.segments if s.base_offset > segment.base_offset]
        if self.refuse_truncation is None or (torn and not later):
            return
        self.refuse_truncation(segment, valid_bytes, reason, later)

    def _recover_segment(self, segment: LogSegment, on_batch) -> int:
        truncated = segment.recover(on_batch, self._before_truncate)
        if truncated > 0:
            message = (f"Found invalid messages in log segment {segment.log.path} at byte "
                       f"offset {segment.size}: {segment.truncation_reason}. "
                       f"{truncated} bytes truncated.")
            log.warning("%s%s", self.log_ident, message)
            self.truncations.append(message)
        return truncated

    # -- the segments ---------------------------------------------------------------------

    def _set_segments(self, segments) -> None:
        self.segments = tuple(sorted(segments, key=lambda s: s.base_offset))
        self._bases = [s.base_offset for s in self.segments]

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    def segment_index_for(self, offset: int, segments=None) -> int:
        """Index of the segment that would hold ``offset`` (the floor by base offset)."""
        bases = self._bases if segments is None else [s.base_offset for s in segments]
        return max(0, bisect.bisect_right(bases, offset) - 1)

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def roll(self) -> LogSegment:
        """A new active segment at the next offset (Kafka's ``LocalLog.roll``); the
        caller holds the log's lock."""
        old = self.active_segment
        if old.size == 0:
            return old   # nothing to roll away from
        old.on_became_inactive()
        segment = LogSegment(self.directory, self.next_offset, self.config(), create=True)
        self._set_segments([*self.segments, segment])
        log.info("%sRolled new log segment at offset %d.", self.log_ident, self.next_offset)
        return segment

    def remove_and_delete_segments(self, doomed, asynchronous: bool = True) -> None:
        """Take ``doomed`` out of the log and rename their files ``.deleted``; the
        files go ``file.delete.delay.ms`` later (Kafka's ``deleteSegmentFiles``)."""
        if not doomed:
            return
        gone = {id(s) for s in doomed}
        self._set_segments([s for s in self.segments if id(s) not in gone])
        for segment in doomed:
            segment.change_suffix("", DELETED_SUFFIX)
        delay = self.config().file_delete_delay_ms if asynchronous else 0

        def delete_files() -> None:
            for segment in doomed:
                log.info("%sDeleting segment files %r", self.log_ident, segment)
                segment.delete_files()

        if delay > 0:
            self.scheduler.schedule_once("delete-file", delete_files, delay)
        else:
            delete_files()

    def replace_segments(self, new_segments, old_segments) -> None:
        """Swap cleaned segments in for ``old_segments`` (Kafka's
        ``LocalLog.replaceSegments``): each new segment, written with the
        ``.cleaned`` suffix, is renamed ``.swap``; the old ones become ``.deleted``;
        then the ``.swap`` suffix is dropped.  A crash between leaves files
        :meth:`_load` completes (``.swap``) or removes (``.cleaned``, ``.deleted``).
        The caller holds the log's lock."""
        new_segments = sorted(new_segments, key=lambda s: s.base_offset)
        for segment in new_segments:
            segment.flush()
            segment.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
        replaced = {id(s) for s in old_segments}
        kept = [s for s in self.segments if id(s) not in replaced]
        self._set_segments(kept + list(new_segments))
        for segment in old_segments:
            segment.change_suffix("", DELETED_SUFFIX)
        for segment in new_segments:
            segment.change_suffix(SWAP_SUFFIX, "")
        old = list(old_segments)
        self.scheduler.schedule_once(
            "delete-file", lambda: [s.delete_files() for s in old],
            self.config().file_delete_delay_ms)

    # -- flushing -------------------------------------------------------------------------

    def flush(self, up_to: int) -> None:
        """fsync the segments holding offsets in [recovery point, up_to) and move the
        recovery point there (Kafka's ``LocalLog.flush``)."""
        if up_to <= self.recovery_point:
            return
        segments = self.segments
        first = self.segment_index_for(self.recovery_point, segments)
        for segment in segments[first:]:
            if segment.base_offset >= up_to:
                break
            segment.flush()
        self.recovery_point = max(self.recovery_point, up_to)

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    def all_files(self) -> list[str]:
        return [path for s in self.segments for path in s.files()]
