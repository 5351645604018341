"""The storage interface the broker needs from one partition's log.

Offsets are dense: the first append gets offset 0, each record takes the next
one, and no offset is ever handed out twice, however many handler threads
append at once.  Batches are stored as the producer sent them (compression
untouched); only ``base_offset`` and ``partition_leader_epoch`` (both outside
the CRC) are rewritten on append: the leader stamps its epoch in every batch,
and records it in the log's :class:`LeaderEpochCache` (Kafka's
``UnifiedLog.appendAsLeader``), which a durable log saves as Kafka's
``leader-epoch-checkpoint``.

On a single node the high watermark is the log end offset: an append is
"replicated to the whole ISR" the moment it is written, so acks=-1 behaves
as acks=1.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple, Protocol

from kafka_net.network.send import FileRegion
from kafka_net.protocol.records import Buffer
from kafka_net.server.storage.leader_epoch import LeaderEpochCache


class AppendResult(NamedTuple):   # named tuples: one of each per request, built cheaply
    base_offset: int          # offset of the first record appended
    last_offset: int          # offset of the last record appended
    log_append_time_ms: int   # -1 unless the topic uses LogAppendTime
    log_start_offset: int


class FetchResult(NamedTuple):
    # Whole batches, the first one holding fetch_offset: ``bytes`` from the
    # in-memory log, a :class:`~kafka_net.network.send.FileRegion` (a slice of
    # one segment file, Kafka's ``FileRecords.slice``) from the durable log.
    # Both have ``len()``; the Processor sends a region with sendfile.
    records: "bytes | FileRegion"
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    # read_committed only: (producer id, first offset) of the aborted transactions
    # in the range read (kafka_net.server.storage.txn_index); None otherwise.
    aborted_transactions: list | None = None


class CleaningAborted(Exception):
    """A cleaning whose segments were deleted under it (retention, DeleteRecords,
    DeleteTopics): Kafka's ``LogCleaningAbortedException``.  Nothing is swapped
    in; the next round starts again from the same checkpoint."""


class OffsetOutOfRange(Exception):
    """Fetch offset below the log start or above the log end."""


class CorruptRecordException(Exception):
    """Kafka's ``CorruptRecordException``: a batch header in a segment no batch
    can have (a size below the minimum or past the end of the file, another
    magic, offsets going back).  A read meeting one fails (the partition answers
    CORRUPT_MESSAGE to Fetch) rather than skipping to whatever comes next."""


class KafkaStorageException(Exception):
    """Kafka's ``KafkaStorageException``: the log dir holding the partition failed
    (a write or a file creation raised an I/O error), so the partition is offline
    and clients get KAFKA_STORAGE_ERROR."""


class PartitionLog(Protocol):
    leader_epoch_cache: LeaderEpochCache

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def size_in_bytes(self) -> int:
        """Bytes the log holds now (Kafka's ``kafka.log:type=Log,name=Size``)."""

    def append(self, batch: Buffer, record_count: int, max_timestamp: int,
               log_append_time_ms: int = -1, leader_epoch: int = 0) -> AppendResult:
        """Assign offsets to one validated batch and store a copy of it with its
        base offset and partition leader epoch set (the caller's buffer is left as
        it is); assign ``leader_epoch`` from the base offset in the epoch cache, and
        truncate the cache's start whenever the log start moves."""

    def read(self, fetch_offset: int, max_bytes: int, min_one_batch: bool,
             max_offset: int | None = None) -> FetchResult:
        """Batches from the one holding ``fetch_offset``, up to ``max_bytes``; with
        ``min_one_batch`` the first batch is returned even if it alone is larger;
        none starting at or after ``max_offset``."""

    def bytes_from(self, fetch_offset: int) -> int:
        """Bytes a fetch from ``fetch_offset`` would find (0 at the log end)."""

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after the log start whose
        timestamp is >= ``timestamp``."""

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp."""

    def delete_records_before(self, offset: int) -> int:
        """Raise the log start offset to ``offset``; return the new log start."""

    def delete_retained(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Drop whole old batches past retention; return how many were dropped."""

    # -- the log's life (Kafka's UnifiedLog.flush / close / delete) --------------------

    def flush(self) -> None:
        """Make everything appended so far durable (fsync); no-op in memory."""

    def close(self) -> None:
        """Flush and release the log's files (broker shutdown); no-op in memory."""

    def delete(self) -> None:
        """Remove the log and its files (DeleteTopics); no-op in memory."""


class SegmentInfo(NamedTuple):
    """What the log cleaner reads of one segment (Kafka's ``LogSegment``)."""

    base_offset: int
    next_offset: int            # one past its last batch (the next segment's base)
    size: int                   # bytes
    largest_timestamp: int      # the largest max timestamp of its batches
    first_batch_timestamp: int  # the max timestamp of its first batch



class CleanableLog(Protocol):
    """What the log cleaner (:mod:`.cleaner`) needs of a log besides
    :class:`PartitionLog` (Kafka's ``logSegments`` and ``replaceSegments``).
    A log without these methods is never cleaned."""

    def segment_infos(self) -> list[SegmentInfo]:
        """One :class:`SegmentInfo` per segment, the active one last."""

    def batches_between(self, start: int, end: int) -> Iterable[bytes]:
        """The stored batches whose base offset is in [start, end), in order."""

    def replace_cleaned(self, start: int, end: int, cleaned: Iterable[bytes],
                        before_swap: Callable[[], None] | None = None) -> None:
        """Replace the segments based in [start, end) (non-active, grouped by the
        cleaner) by one holding ``cleaned``, a subset of their offsets, atomically;
        ``before_swap`` runs once ``cleaned`` is written, before the swap.  Batches
        deleted from the front meanwhile stay deleted.  The durable log writes a
        ``.cleaned`` segment and swaps it in through ``.swap`` (Kafka's
        ``replaceSegments``), so a crash leaves either the old or the new segment."""
