"""The log cleaner: compaction of ``cleanup.policy=compact`` topics (Kafka's
``Cleaner``, ``SkimpyOffsetMap`` and ``CleanedTransactionMetadata``).

One cleaning of one partition (:meth:`Cleaner.clean`):

1. The *dirty section* runs from the cleaner checkpoint (the offset the
   last cleaning ended at; the log start at first) to the *first uncleanable
   offset*, the smallest of: the active segment's base offset (the active
   segment is never cleaned), the last stable offset (nothing of an open
   transaction is cleaned), and the base offset of the first dirty segment
   holding a record younger than ``min.compaction.lag.ms``
   (:func:`cleanable_offsets`).
2. An :class:`OffsetMap` is built over the dirty section: for each key, the
   offset of its last record.  Records of aborted transactions are left out
   of it.  The map is bounded (``log.cleaner.dedupe.buffer.size``); if it
   fills, this round cleans up to where it got and the next round goes on.
3. Every segment from the log start up to where the map ends is rewritten
   (the clean section too: that is how tombstones eventually go), record
   by record (:mod:`kafka_net.protocol.records.compaction`): a record stays
   if it is the latest for its key (or past the map's end); a tombstone
   (null value) stays until its batch's delete horizon, set to the time of
   the first cleaning that kept it plus ``delete.retention.ms``; records of
   aborted transactions go; a transaction marker stays until nothing of its
   transaction is left and, then, its own delete horizon has passed.  The
   batch of a producer's last write is kept, even empty, so its sequence
   and epoch survive; so is the last batch of the round, so the log end
   does not move back.  Offsets never change.
4. The cleaned batches replace the old ones in the log, and the checkpoint
   moves to where the map ended.
"""

from __future__ import annotations

import heapq
import logging
import time
from dataclasses import dataclass, field

from kafka_net.protocol.records import read_header
from kafka_net.protocol.records.compaction import (
    DELETE, DELETE_EMPTY, RETAIN_EMPTY, CleanRecord, batch_records, delete_horizon_ms,
    filter_batch)
from kafka_net.protocol.records.control import ABORT, COMMIT, control_type

log = logging.getLogger("kafka_net.server.storage.log_cleaner")

BYTES_PER_ENTRY = 24          # SkimpyOffsetMap: a 16-byte MD5 of the key and an 8-byte offset
DUP_BUFFER_LOAD_FACTOR = 0.9  # log.cleaner.io.buffer.load.factor's default


class OffsetMap:
    """Key -> the offset of its last record in the dirty section (Kafka's
    ``SkimpyOffsetMap``).  Kafka stores MD5 digests in a fixed buffer; a dict
    of the keys themselves is exact (no digest collisions), and its size is
    bounded the way Kafka's is: ``memory / 24`` slots, filled to 90%."""

    def __init__(self, memory: int) -> None:
        self.slots = max(1, memory // BYTES_PER_ENTRY)
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self._map[key] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        return self._map.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1

    @property
    def size(self) -> int:
        return len(self._map)

    @property
    def utilization(self) -> float:
        return len(self._map) / self.slots

    @property
    def max_desired_size(self) -> int:
        return int(self.slots * DUP_BUFFER_LOAD_FACTOR)


# -- transactions while cleaning --------------------------------------------------------


class CleanedTransactionMetadata:
    """Which batches belong to aborted transactions and which markers may go
    (Kafka's ``CleanedTransactionMetadata``), fed the log's aborted
    transactions and then every batch in offset order."""

    def __init__(self) -> None:
        self._committed: set[int] = set()          # producer ids seen in a committed txn
        self._aborted: dict[int, list] = {}        # producer id -> [txn, last batch offset]
        self._heap: list[tuple[int, int, object]] = []   # (first offset, tie, AbortedTxn)

    def add_aborted_transactions(self, txns) -> None:
        for txn in txns:
            heapq.heappush(self._heap, (txn.first_offset, id(txn), txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._heap and self._heap[0][0] <= offset:
            txn = heapq.heappop(self._heap)[2]
            self._aborted.setdefault(txn.producer_id, [txn, None])

    def on_control_batch_read(self, batch: bytes, header) -> bool:
        """True when the marker may be discarded (its transaction left nothing)."""
        self._consume_aborted_up_to(header.last_offset)
        kind = control_type(batch, header)
        if kind is None:
            return True     # an empty control batch: cleaned before
        if kind == ABORT:
            entry = self._aborted.pop(header.producer_id, None)
            return not (entry is not None and entry[1] is not None)
        if kind == COMMIT:
            if header.producer_id in self._committed:
                self._committed.discard(header.producer_id)
                return False
            return True
        return False

    def on_batch_read(self, header) -> bool:
        """True when the data batch belongs to an aborted transaction."""
        self._consume_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        entry = self._aborted.get(header.producer_id)
        if entry is not None:
            entry[1] = header.last_offset
            return True
        self._committed.add(header.producer_id)
        return False


# -- statistics and the log to clean -----------------------------------------------------


@dataclass
class CleanerStats:
    """What one cleaning read, wrote and took (Kafka's CleanerStats)."""

    start_time: float = field(default_factory=time.monotonic)
    map_complete_time: float = 0.0
    end_time: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    invalid_messages_read: int = 0
    messages_written: int = 0
    buffer_utilization: float = 0.0

    def index_done(self) -> None:
        self.map_complete_time = time.monotonic()

    def all_done(self) -> None:
        self.end_time = time.monotonic()

    @property
    def elapsed_secs(self) -> float:
        return self.end_time - self.start_time

    @property
    def elapsed_index_secs(self) -> float:
        return self.map_complete_time - self.start_time


@dataclass
class LogToClean:
    """A compacted partition and its dirty section (Kafka's ``LogToClean``)."""

    partition: object              # replica_manager.Partition
    config: object                 # its topic's LogConfig
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool = False

    @property
    def name(self) -> str:
        return f"{self.partition.topic}-{self.partition.index}"

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def overlapping(segments, start: int, end: int):
    """The segments holding offsets in [start, end) (Kafka's ``logSegments(from, to)``)."""
    return [s for s in segments if s.next_offset > start and s.base_offset < end]


def cleanable_offsets(segments, log_start: int, log_end: int, last_stable_offset: int,
                      checkpoint: int | None, min_compaction_lag_ms: int, now: int,
                      ) -> tuple[int, int, bool]:
    """(first dirty offset, first uncleanable offset, checkpoint reset) of a log
    (Kafka's ``LogCleanerManager.cleanableOffsets``); ``segments``: the active last."""
    first_dirty, reset = (log_start, True) if checkpoint is None else (checkpoint, False)
    if first_dirty < log_start or first_dirty > log_end:
        first_dirty, reset = log_start, True
    active_base = segments[-1].base_offset if segments else log_end
    candidates = [last_stable_offset, active_base]
    if min_compaction_lag_ms > 0:
        for segment in segments[:-1]:
            if segment.next_offset > first_dirty \
                    and segment.largest_timestamp > now - min_compaction_lag_ms:
                candidates.append(segment.base_offset)
                break
    return first_dirty, max(first_dirty, min(candidates)), reset


def cleanable_bytes(segments, first_dirty: int, uncleanable: int) -> tuple[int, int]:
    """(first uncleanable offset at a segment start, cleanable bytes)
    (Kafka's ``LogCleanerManager.calculateCleanableBytes``)."""
    first_uncleanable = segments[-1].base_offset if segments else uncleanable
    for segment in segments[:-1]:
        if segment.next_offset > uncleanable:
            first_uncleanable = segment.base_offset
            break
    dirty = overlapping(segments, min(first_dirty, first_uncleanable), first_uncleanable)
    return first_uncleanable, sum(s.size for s in dirty)


def max_compaction_delay(segments, first_dirty: int, max_compaction_lag_ms: int,
                         now: int) -> int:
    """How far past max.compaction.lag.ms the oldest dirty record is (0: not)."""
    stamps = [s.first_batch_timestamp for s in segments[:-1]
              if s.next_offset > first_dirty and s.first_batch_timestamp > 0]
    if not stamps:
        return 0
    clean_until = now - max(max_compaction_lag_ms, 0)
    return max(0, clean_until - min(stamps))


# -- the cleaning itself -------------------------------------------------------------


class Cleaner:
    """One cleaner thread's worker (Kafka's ``Cleaner``), with its offset map."""

    def __init__(self, cleaner_id: int, dedupe_memory: int, clock_ms) -> None:
        self.id = cleaner_id
        self.offset_map = OffsetMap(dedupe_memory)
        self.clock_ms = clock_ms

    def _info(self, message: str, *args) -> None:
        log.info("Cleaner %d: " + message, self.id, *args)

    def clean(self, ltc: LogToClean, now: int | None = None) -> tuple[int, CleanerStats]:
        """Clean ``ltc``'s log; return the next dirty offset and the statistics."""
        now = self.clock_ms() if now is None else now
        partition = ltc.partition
        config = ltc.config
        self._info("Beginning cleaning of log %s", ltc.name)
        stats = CleanerStats()
        upper = ltc.first_uncleanable_offset
        self._info("Building offset map for %s...", ltc.name)
        self.build_offset_map(ltc, ltc.first_dirty_offset, upper, stats)
        end_offset = self.offset_map.latest_offset + 1
        stats.index_done()
        if end_offset <= ltc.first_dirty_offset:     # nothing dirty after all
            stats.all_done()
            return ltc.first_dirty_offset, stats
        self._info("Cleaning log %s (cleaning prior to offset %d, discarding tombstones "
                   "past their delete horizon of %d ms)...", ltc.name, end_offset,
                   config.delete_retention_ms)
        segments = [s for s in partition.log.segment_infos()[:-1] if s.base_offset < end_offset]
        if segments:
            self.clean_segments(ltc, segments, now, stats, upper, config.delete_retention_ms)
        stats.buffer_utilization = self.offset_map.utilization
        stats.all_done()
        return end_offset, stats

    def build_offset_map(self, ltc: LogToClean, start: int, end: int,
                         stats: CleanerStats) -> None:
        offset_map = self.offset_map
        offset_map.clear()
        partition = ltc.partition
        dirty = overlapping(partition.log.segment_infos()[:-1], start, end)
        self._info("Building offset map for log %s for %d segments in offset range [%d, %d).",
                   ltc.name, len(dirty), start, end)
        txns = CleanedTransactionMetadata()
        with partition.lock:
            txns.add_aborted_transactions(partition.txns.aborted_between(start, end))
        for n, segment in enumerate(dirty):
            next_start = dirty[n + 1].base_offset if n + 1 < len(dirty) else end
            if self._map_segment(partition, segment, start, next_start, txns, stats):
                break
        self._info("Offset map for log %s complete.", ltc.name)

    def _map_segment(self, partition, segment, start: int, next_start: int,
                     txns: CleanedTransactionMetadata, stats: CleanerStats) -> bool:
        """Add one segment's keys; True when the map is full."""
        offset_map = self.offset_map
        limit = offset_map.max_desired_size
        for batch in partition.log.batches_between(segment.base_offset, next_start):
            header = read_header(batch)
            stats.map_bytes_read += len(batch)
            if header.is_control:
                txns.on_control_batch_read(batch, header)
                stats.map_messages_read += 1
            elif txns.on_batch_read(header):
                stats.map_messages_read += header.records_count
            else:
                for record in batch_records(batch, header):
                    if record.key is not None and record.offset >= start:
                        if offset_map.size >= limit:
                            return True    # full: this round ends here
                        offset_map.put(record.key, record.offset)
                    stats.map_messages_read += 1
            if header.last_offset >= start:
                offset_map.update_latest_offset(header.last_offset)
        offset_map.update_latest_offset(next_start - 1)
        return False

    def clean_segments(self, ltc: LogToClean, segments, now: int, stats: CleanerStats,
                       upper: int, delete_retention_ms: int) -> None:
        """Rewrite ``segments``, group by group, each group swapped into the log as
        one segment (Kafka's ``groupSegmentsBySize`` and ``cleanSegments``)."""
        partition = ltc.partition
        txns = CleanedTransactionMetadata()      # carried from group to group, as Kafka's
        with partition.lock:
            txns.add_aborted_transactions(partition.txns.aborted_between(
                segments[0].base_offset, segments[-1].next_offset))
            last_records = {pid: (entry.batches[-1].last_offset if entry.batches else None,
                                  entry.epoch)
                            for pid, entry in partition.producers.active_producers()}
        for group in group_segments_by_size(segments, ltc.config.segment_bytes):
            start, end = group[0].base_offset, group[-1].next_offset
            markers_removed: set[int] = set()

            def cleaned(start=start, end=end, markers_removed=markers_removed):
                for batch in partition.log.batches_between(start, end):
                    output = self._clean_batch(batch, txns, last_records, upper, now,
                                               delete_retention_ms, stats)
                    if output is not None:
                        yield output
                    elif read_header(batch).is_control:
                        markers_removed.add(read_header(batch).base_offset)

            def before_swap(markers_removed=markers_removed) -> None:
                # An ABORT marker goes only once its transaction left no batch, so its
                # entry may go first: a read_committed reader then meets no aborted
                # data, and never an entry without its marker.
                with partition.lock:
                    partition.txns.remove_aborted(markers_removed)

            self._info("Cleaning %d segment(s) of [%d, %d) in log %s into one", len(group),
                       start, end, ltc.name)
            partition.log.replace_cleaned(start, end, cleaned(), before_swap)
            self._info("Swapped in the cleaned segment for [%d, %d) in log %s",
                       start, end, ltc.name)

    def _clean_batch(self, batch: bytes, txns: CleanedTransactionMetadata, last_records: dict,
                     upper: int, now: int, delete_retention_ms: int,
                     stats: CleanerStats) -> bytes | None:
        """One batch through Kafka's ``cleanInto`` filter."""
        header = read_header(batch)
        if header.is_control:
            can_discard = txns.on_control_batch_read(batch, header)
            horizon = delete_horizon_ms(header)
            discard_records = can_discard and horizon is not None and horizon <= now
        else:
            can_discard = discard_records = txns.on_batch_read(header)
        if header.has_producer_id and _is_last_of_producer(header, last_records):
            retention = RETAIN_EMPTY
        elif header.next_offset == upper:
            retention = RETAIN_EMPTY   # keep the round's last offset in the log
        elif discard_records:
            retention = DELETE
        else:
            retention = DELETE_EMPTY

        def keep(batch_header, record: CleanRecord) -> bool:
            if discard_records:
                return False
            if batch_header.is_control:
                return True
            return self._retain_record(batch_header, record, now, stats)

        result = filter_batch(batch, retention, keep, now_ms=now,
                              delete_retention_ms=delete_retention_ms,
                              contains_marker_for_empty_txn=can_discard and header.is_control,
                              header=header)
        stats.bytes_read += len(batch)
        stats.messages_read += result.messages_read
        stats.messages_written += result.messages_retained
        if result.output is not None:
            stats.bytes_written += len(result.output)
        return result.output

    def _retain_record(self, header, record: CleanRecord, now: int, stats: CleanerStats) -> bool:
        """Kafka's ``Cleaner.shouldRetainRecord``."""
        if record.offset > self.offset_map.latest_offset:
            return True     # past what the map covers: the next round decides
        if record.key is None:
            stats.invalid_messages_read += 1
            return False
        if record.offset < self.offset_map.get(record.key):
            return False    # a later record has this key
        if record.has_value:
            return True
        horizon = delete_horizon_ms(header)
        return horizon is None or now < horizon


def group_segments_by_size(segments, max_size: int) -> list[list]:
    """Consecutive segments whose bytes together fit in ``max_size`` (segment.bytes),
    each group to become one cleaned segment (Kafka's ``groupSegmentsBySize``)."""
    groups: list[list] = []
    size = 0
    for segment in segments:
        if groups and size + segment.size <= max_size:
            groups[-1].append(segment)
            size += segment.size
        else:
            groups.append([segment])
            size = segment.size
    return groups


def _is_last_of_producer(header, last_records: dict) -> bool:
    """The batch holding an active producer's last write (its last sequence), or,
    when its last entry is a marker, a marker of its current epoch."""
    last = last_records.get(header.producer_id)
    if last is None:
        return False
    last_data_offset, epoch = last
    if last_data_offset is not None:
        return header.last_offset == last_data_offset
    return header.is_control and header.producer_epoch == epoch


def format_stats(cleaner_id: int, name: str, start: int, end: int, stats: CleanerStats) -> str:
    """Kafka's ``CleanerThread.recordStats`` summary."""
    def mb(n: float) -> float:
        return n / (1024 * 1024)

    elapsed = max(stats.elapsed_secs, 1e-9)
    index = max(stats.elapsed_index_secs, 0.0)
    clean = max(elapsed - index, 1e-9)
    reduction = 100.0 * (1.0 - stats.bytes_written / stats.bytes_read) if stats.bytes_read else 0.0
    fewer = (100.0 * (1.0 - stats.messages_written / stats.messages_read)
             if stats.messages_read else 0.0)
    return (f"\n\tLog cleaner thread {cleaner_id} cleaned log {name} "
            f"(dirty section = [{start}, {end}])\n"
            f"\t{mb(stats.bytes_read):,.1f} MB of log processed in {elapsed:,.1f} seconds "
            f"({mb(stats.bytes_read) / elapsed:,.1f} MB/sec).\n"
            f"\tIndexed {mb(stats.map_bytes_read):,.1f} MB in {index:.1f} seconds "
            f"({mb(stats.map_bytes_read) / max(index, 1e-9):,.1f} Mb/sec, "
            f"{100 * index / elapsed:.1f}% of total time)\n"
            f"\tBuffer utilization: {100 * stats.buffer_utilization:.1f}%\n"
            f"\tCleaned {mb(stats.bytes_read):,.1f} MB in {clean:.1f} seconds "
            f"({mb(stats.bytes_read) / clean:,.1f} Mb/sec, {100 * clean / elapsed:.1f}% of "
            f"total time)\n"
            f"\tStart size: {mb(stats.bytes_read):,.1f} MB ({stats.messages_read:,d} messages)\n"
            f"\tEnd size: {mb(stats.bytes_written):,.1f} MB ({stats.messages_written:,d} "
            f"messages)\n"
            f"\t{reduction:.1f}% size reduction ({fewer:.1f}% fewer messages)\n")
