"""LogSegment: one ``.log`` file with its ``.index`` and ``.timeindex``, named by base offset.

A segment holds the batches from its base offset (its file name, 20 digits:
``00000000000000000000.log``) up to the next segment's base offset.  Only
the last, *active* segment is appended to; it rolls (Kafka's
``LogSegment.shouldRoll``) when the next batch would take it past
``segment.bytes``, when ``segment.ms`` passed between its first batch's
timestamp and the new batch's, or when an index is full.

Reads find the batch holding an offset with the sparse offset index and a
short scan of batch headers (``translateOffset``) and answer a slice of the
file (a :class:`~kafka_net.network.send.FileRegion`), whole batches only.

:meth:`LogSegment.recover` is crash recovery for one segment: every batch
is validated (size, magic, CRC, offsets growing), the indexes rebuilt, and
the file cut after the last valid batch.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from typing import Callable

from kafka_net.network.send import FileRegion
from kafka_net.protocol.records import Buffer
from kafka_net.protocol.records.framing import (
    LOG_OVERHEAD, MAGIC_V2, RECORD_BATCH_OVERHEAD, compute_crc, read_base_offset,
    read_batch_size, read_header, read_header_prefix)
from kafka_net.server.storage.file_records import BatchPosition, FileRecords
from kafka_net.server.storage.index import OffsetIndex, TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

_INT_MAX = 2**31 - 1


def filename_prefix(offset: int) -> str:
    """Kafka's ``LogFileUtils.filenamePrefixFromOffset``: 20 digits, zero-padded."""
    return f"{offset:020d}"


def offset_from_filename(name: str) -> int:
    return int(os.path.basename(name).split(".", 1)[0])


@dataclass(frozen=True)
class SegmentConfig:
    """The topic configs a segment acts on (Kafka's ``LogConfig`` fields), with
    Kafka's defaults."""

    segment_bytes: int = 1073741824          # segment.bytes / log.segment.bytes
    segment_ms: int = 604800000              # segment.ms / log.roll.ms (log.roll.hours)
    segment_jitter_ms: int = 0               # segment.jitter.ms: up to this much earlier
    segment_index_bytes: int = 10485760      # segment.index.bytes / log.index.size.max.bytes
    index_interval_bytes: int = 4096         # index.interval.bytes / log.index.interval.bytes
    flush_messages: int = 2**63 - 1          # flush.messages / log.flush.interval.messages
    flush_ms: int = 2**63 - 1                # flush.ms / log.flush.interval.ms
    file_delete_delay_ms: int = 60000        # file.delete.delay.ms / log.segment.delete.delay.ms


class CorruptRecord(Exception):
    """A batch recovery refuses; the segment is cut before it."""


class LogSegment:
    def __init__(self, directory: str, base_offset: int, config: SegmentConfig,
                 *, create: bool = False, suffix: str = "") -> None:
        self.directory = directory
        self.base_offset = base_offset
        prefix = os.path.join(directory, filename_prefix(base_offset))
        self.log = FileRecords(prefix + LOG_SUFFIX + suffix, create=create)
        self.offset_index = OffsetIndex(prefix + INDEX_SUFFIX + suffix, base_offset,
                                        config.segment_index_bytes)
        self.time_index = TimeIndex(prefix + TIME_INDEX_SUFFIX + suffix, base_offset,
                                    config.segment_index_bytes)
        # Written only when an ABORT marker lands here (txn_index_file.py).
        self.txn_index_path = prefix + TXN_INDEX_SUFFIX + suffix
        self.index_interval_bytes = config.index_interval_bytes
        self.bytes_since_last_index_entry = 0
        last_ts, last_ts_offset = self.time_index.last_entry()
        self.max_timestamp_so_far = last_ts          # -1: no timestamp seen
        self.offset_of_max_timestamp = last_ts_offset
        self.rolling_based_timestamp: int | None = None   # first batch's max timestamp
        self.created_ms = int(time.time() * 1000)
        # Kafka draws each segment's roll jitter once, so that many partitions created
        # together do not all roll at the same moment.
        self.roll_jitter_ms = (random.randrange(config.segment_jitter_ms)
                               if config.segment_jitter_ms > 0 else 0)
        self.truncation_reason: str | None = None   # set by recover()

    # -- appending ---------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.log.size_in_bytes()

    def append(self, largest_offset: int, largest_timestamp: int, base_offset: int,
               data: Buffer) -> int:
        """Append one batch already carrying its offsets; index it if
        ``index.interval.bytes`` were written since the last entry."""
        position = self.log.append(data)
        if position == 0:   # the segment's first batch
            self.rolling_based_timestamp = largest_timestamp
        if largest_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = largest_timestamp
            self.offset_of_max_timestamp = base_offset
        since = self.bytes_since_last_index_entry
        if since > self.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
            since = 0
        self.bytes_since_last_index_entry = since + len(data)
        return position

    def should_roll(self, batch_size: int, max_timestamp: int, now_ms: int,
                    config: SegmentConfig, last_offset: int = 0) -> bool:
        """Kafka's ``LogSegment.shouldRoll`` (never for an empty segment); also when
        ``last_offset`` is past what an index's int32 relative offset can hold."""
        size = self.log._size   # read once: this runs before every append
        if size == 0:
            return False
        return (size > config.segment_bytes - batch_size
                or last_offset - self.base_offset > _INT_MAX
                or self._time_waited_for_roll(now_ms, max_timestamp)
                > config.segment_ms - self.roll_jitter_ms
                or self.offset_index.is_full() or self.time_index.is_full())

    def _time_waited_for_roll(self, now_ms: int, max_timestamp: int) -> int:
        if self.rolling_based_timestamp is None:
            first = self.log.header_at(0)
            self.rolling_based_timestamp = first.max_timestamp if first else -1
        if self.rolling_based_timestamp >= 0 and max_timestamp >= 0:
            return max_timestamp - self.rolling_based_timestamp
        return now_ms - self.created_ms

    def on_became_inactive(self) -> None:
        """The segment was rolled: its time index gets its max timestamp for good
        (Kafka's ``onBecomeInactiveSegment``)."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
        self.offset_index.close()
        self.time_index.close()

    # -- reading -----------------------------------------------------------------------

    def translate_offset(self, offset: int, start_position: int = 0,
                         end: int | None = None) -> BatchPosition | None:
        """The first batch whose last offset is >= ``offset`` (Kafka's
        ``translateOffset``), or None if the segment (or ``end``) comes first."""
        _, position = self.offset_index.lookup(offset)
        for batch in self.log.batches_from(max(position, start_position), end):
            if batch.last_offset >= offset:
                return batch
        return None

    def read(self, offset: int, max_size: int, min_one_batch: bool,
             max_offset: int | None = None, max_position: int | None = None
             ) -> FileRegion | None:
        """Whole batches from the one holding ``offset``, at most ``max_size`` bytes
        (one batch anyway with ``min_one_batch``), none starting at or after
        ``max_offset`` nor ending past ``max_position``; None if ``offset`` is past
        this segment."""
        end = self.size if max_position is None else min(self.size, max_position)
        first = self.translate_offset(offset, 0, end)
        if first is None:
            return None
        if max_offset is not None:
            if first.base_offset >= max_offset:
                return self.log.slice(first.position, 0)
            bound = self.translate_offset(max_offset, first.position, end)
            if bound is not None:
                end = bound.position if bound.base_offset >= max_offset else \
                    bound.position + bound.size
        want_end = first.position + max_size
        if want_end < end:
            end = self._batch_boundary_at_or_below(first.position, want_end, end)
        if end <= first.position:
            return self.log.slice(first.position, first.size if min_one_batch else 0)
        return self.log.slice(first.position, end - first.position)

    def _batch_boundary_at_or_below(self, start: int, limit: int, end: int) -> int:
        """The end of the last whole batch that ends at or before ``limit``,
        scanning from the indexed batch nearest below it (``end``: where the
        segment's batches end)."""
        position = max(start, self.offset_index.position_at_or_below(limit))
        for batch in self.log.batches_from(position, end, limit):
            position = batch.position + batch.size
        return position

    def batches(self, start_position: int = 0):
        return self.log.batches_from(start_position)

    def read_batch(self, batch: BatchPosition) -> bytes:
        return self.log.read(batch.position, batch.size)

    def read_next_offset(self) -> int:
        """The offset after the segment's last batch (Kafka's ``readNextOffset``):
        from the last index entry, a short scan to the end."""
        return self.scan_tail()[0]

    def scan_tail(self) -> tuple[int, int]:
        """(next offset, end of the last whole batch), scanning from the last index
        entry; an end short of the file size means a partial batch (or damage)
        there, which the caller recovers."""
        _, position = self.offset_index.lookup(2**63 - 1)
        next_offset, end = self.base_offset, position
        for batch in self.log.batches_from(position, strict=False):
            next_offset, end = batch.last_offset + 1, batch.position + batch.size
        return next_offset, end

    def largest_timestamp(self) -> int:
        """What retention.ms compares: the max timestamp, else the file's mtime."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.log.last_modified_ms()

    # -- recovery ----------------------------------------------------------------------

    def recover(self, on_batch: Callable[[bytes, BatchPosition], None] | None = None,
                before_truncate: Callable[["LogSegment", int, str, bool], None] | None = None
                ) -> int:
        """Validate every batch, rebuild both indexes, cut the file after the last
        valid batch (Kafka's ``LogSegment.recover``).  ``on_batch`` sees each valid
        batch (the producer state rebuild); ``before_truncate`` (segment, valid
        bytes, reason, torn tail) may raise to refuse the cut.  Returns the bytes
        truncated."""
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp_so_far, self.offset_of_max_timestamp = -1, self.base_offset
        self.bytes_since_last_index_entry = 0
        self.rolling_based_timestamp = None
        self.truncation_reason = None
        valid_bytes, next_offset = 0, self.base_offset
        batches = self._batches_with_data()
        while True:
            try:
                batch, data = next(batches, (None, None))
                if batch is None:
                    break
                check_batch(data, batch, next_offset)
            except CorruptRecord as exc:
                self.truncation_reason = str(exc)
                break
            if batch.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = batch.max_timestamp
                self.offset_of_max_timestamp = batch.base_offset
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self.offset_index.append(batch.last_offset, batch.position)
                self.time_index.maybe_append(self.max_timestamp_so_far,
                                             self.offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += batch.size
            if on_batch is not None:
                on_batch(data, batch)
            valid_bytes = batch.position + batch.size
            next_offset = batch.last_offset + 1
        torn = self.truncation_reason is None
        if torn and valid_bytes < self.size:
            self.truncation_reason = (f"a torn batch of {self.size - valid_bytes} bytes "
                                      f"at position {valid_bytes}")
        if before_truncate is not None and valid_bytes < self.size:
            before_truncate(self, valid_bytes, self.truncation_reason, torn)
        truncated = self.log.truncate_to(valid_bytes)
        self.on_became_inactive()
        return truncated

    def _batches_with_data(self, chunk: int = 1 << 20):
        """(header, bytes) of each batch that fits in the file, read in large chunks."""
        size, position = self.size, 0
        buffer, buffer_start = b"", 0
        while position + LOG_OVERHEAD <= size:
            if position + LOG_OVERHEAD > buffer_start + len(buffer):
                buffer, buffer_start = self.log.read(position, chunk), position
            offset = position - buffer_start
            base = read_base_offset(buffer, offset)
            batch_size = read_batch_size(buffer, offset)
            if batch_size < RECORD_BATCH_OVERHEAD:
                raise CorruptRecord(f"batch size {batch_size - LOG_OVERHEAD} below the "
                                    f"minimum at position {position}")
            if position + batch_size > size:
                return   # a torn last batch (or a nonsense size): recover() says which
            if offset + batch_size > len(buffer):
                buffer = self.log.read(position, max(chunk, batch_size))
                buffer_start, offset = position, 0
            data = buffer[offset:offset + batch_size]
            yield _batch_position(position, base, data), data
            position += batch_size

    # -- the files ---------------------------------------------------------------------

    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        self.on_became_inactive()
        self.log.close()
        self.offset_index.close()
        self.time_index.close()

    def release(self) -> None:
        """Close every descriptor, touching no file (a deleted log's folder)."""
        self.log.close()
        self.offset_index.release()
        self.time_index.release()

    def files(self) -> list[str]:
        paths = [self.log.path, self.offset_index.path, self.time_index.path]
        return paths + ([self.txn_index_path] if os.path.exists(self.txn_index_path) else [])

    def change_suffix(self, old: str, new: str) -> None:
        """Rename every file of the segment (``.deleted``, ``.cleaned``, ``.swap``),
        keeping them open."""
        for thing in (self.log, self.offset_index, self.time_index):
            path = thing.path[:-len(old)] if old else thing.path
            if os.path.exists(thing.path):
                thing.rename_to(path + new)
        txn = self.txn_index_path[:-len(old)] if old else self.txn_index_path
        if os.path.exists(self.txn_index_path):
            os.replace(self.txn_index_path, txn + new)
        self.txn_index_path = txn + new

    def delete_files(self) -> None:
        self.log.close()
        for index in (self.offset_index, self.time_index):
            index.delete()
        for path in (self.log.path, self.txn_index_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        try:
            modified = self.log.last_modified_ms()
        except OSError:     # closed, maybe by another thread since: a repr never fails
            modified = -1
        return (f"LogSegment(baseOffset={self.base_offset}, size={self.size}, "
                f"lastModifiedTime={modified}, "
                f"largestRecordTimestamp={self.max_timestamp_so_far})")


def _batch_position(position: int, base: int, data: bytes) -> BatchPosition:
    _, size, last_offset, max_ts, _ = read_header_prefix(data)
    return BatchPosition(position, base, size, last_offset, max_ts)


def check_batch(data: bytes, batch: BatchPosition, expected_min_offset: int) -> None:
    """Kafka's checks on a batch read back in recovery: magic, CRC, offsets growing."""
    header = read_header(data)
    if header.magic != MAGIC_V2:
        raise CorruptRecord(
            f"invalid magic {header.magic} in the batch at position {batch.position}")
    stored, computed = header.crc, compute_crc(data)
    if stored != computed:
        raise CorruptRecord(
            f"Record is corrupt (stored crc = {stored}, computed crc = {computed}) in the "
            f"batch at position {batch.position}")
    if batch.base_offset < expected_min_offset or batch.last_offset < batch.base_offset:
        raise CorruptRecord(
            f"out of order offsets: batch [{batch.base_offset}, {batch.last_offset}] at "
            f"position {batch.position} after offset {expected_min_offset - 1}")
