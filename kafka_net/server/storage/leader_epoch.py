"""LeaderEpochCache: which leader epoch wrote which offsets of one partition's log.

Kafka's ``LeaderEpochFileCache``: an ordered list of (epoch, start offset)
entries, one per leader epoch that appended to the log.  The leader assigns
an entry when it becomes leader (``Partition.makeLeader`` ->
``UnifiedLog.maybeAssignEpochStartOffset``) and again with every appended
batch (a no-op while the epoch is unchanged); it answers
OffsetForLeaderEpoch (:meth:`end_offset_for`) and the epoch of an offset
(ListOffsets).  Entries below a moved log start are truncated
(:meth:`truncate_from_start`, DeleteRecords and retention).

Kafka keeps the entries in ``leader-epoch-checkpoint`` beside the segments;
:meth:`entries` and the ``entries`` argument of the constructor are what a
durable log saves and loads, in that file's format (:func:`checkpoint_text`,
:func:`parse_checkpoint`; the in-memory log keeps them only in memory).
"""

from __future__ import annotations

import bisect
import threading

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"   # the file's name in a partition folder
CHECKPOINT_VERSION = 0
UNDEFINED_EPOCH = -1          # Kafka's EpochEndOffset.UNDEFINED_EPOCH
UNDEFINED_EPOCH_OFFSET = -1   # EpochEndOffset.UNDEFINED_EPOCH_OFFSET


class LeaderEpochCache:
    def __init__(self, entries: list[tuple[int, int]] | None = None) -> None:
        self._lock = threading.Lock()
        self._epochs: list[int] = []    # ascending
        self._starts: list[int] = []    # start offset of each epoch, non-decreasing
        # Called (no lock held) after every change: a durable log writes its
        # leader-epoch-checkpoint then, as Kafka's LeaderEpochFileCache does.
        self.on_change = None
        for epoch, start in entries or ():
            self.assign(epoch, start)

    def entries(self) -> list[tuple[int, int]]:
        """(epoch, start offset) pairs, oldest first: the checkpoint's content."""
        with self._lock:
            return list(zip(self._epochs, self._starts))

    @property
    def latest_epoch(self) -> int:
        epochs = self._epochs
        return epochs[-1] if epochs else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        As Kafka: nothing changes while the latest entry is this epoch at or below
        that offset; otherwise entries at or after the new one (a higher epoch, or
        a start at or past ``start_offset``) are dropped first, so the cache stays
        monotonic in both epoch and offset."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        epochs = self._epochs
        if epochs and epochs[-1] == epoch and self._starts[-1] <= start_offset:
            return False   # the common case: one more batch of the current epoch
        with self._lock:
            while self._epochs and (self._epochs[-1] >= epoch
                                    or self._starts[-1] >= start_offset):
                self._epochs.pop()
                self._starts.pop()
            self._epochs.append(epoch)
            self._starts.append(start_offset)
        self._changed()
        return True

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch (``LeaderEpochFileCache.endOffsetFor``):

        * undefined epoch, or one above every known epoch: (-1, -1);
        * the latest epoch: it and the log end offset;
        * otherwise the largest known epoch <= the requested one, ending where the
          next known epoch starts (the requested epoch itself when it is older than
          every entry: its end is the first entry's start).
        """
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if self._epochs and self._epochs[-1] == requested_epoch:
                return requested_epoch, log_end_offset
            higher = bisect.bisect_right(self._epochs, requested_epoch)
            if higher >= len(self._epochs):
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if higher == 0:
                return requested_epoch, self._starts[0]
            return self._epochs[higher - 1], self._starts[higher]

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch that wrote ``offset`` (the last entry starting at or before it);
        -1 if none."""
        with self._lock:
            index = bisect.bisect_right(self._starts, offset) - 1
            return self._epochs[index] if index >= 0 else UNDEFINED_EPOCH

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start moved to ``start_offset``: entries starting at or before it
        go, and the last of them is kept, moved to start there (Kafka's
        ``truncateFromStart``)."""
        with self._lock:
            count = bisect.bisect_right(self._starts, start_offset)
            if count == 0:
                return
            kept = self._epochs[count - 1]
            if count == 1 and self._starts[0] == start_offset:
                return
            del self._epochs[:count]
            del self._starts[:count]
            self._epochs.insert(0, kept)
            self._starts.insert(0, start_offset)
        self._changed()

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was cut back to ``end_offset``: entries starting at or after it go."""
        with self._lock:
            keep = bisect.bisect_left(self._starts, end_offset)
            if keep == len(self._starts):
                return
            del self._epochs[keep:]
            del self._starts[keep:]
        self._changed()


def checkpoint_text(entries: list[tuple[int, int]]) -> str:
    """Kafka's ``LeaderEpochCheckpointFile`` content: the version line (0), the
    entry count, then one ``epoch start_offset`` line per entry."""
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{epoch} {start}" for epoch, start in entries]
    return "\n".join(lines) + "\n"


def parse_checkpoint(text: str) -> list[tuple[int, int]]:
    """The entries of a ``leader-epoch-checkpoint``; ValueError for a malformed one
    (Kafka fails the log's loading with a KafkaStorageException)."""
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != str(CHECKPOINT_VERSION):
        raise ValueError(f"unrecognized leader epoch checkpoint version: {lines[:1]}")
    count = int(lines[1])
    entries = []
    for line in lines[2:2 + count]:
        epoch, start = line.split()
        entries.append((int(epoch), int(start)))
    if len(entries) != count:
        raise ValueError(f"expected {count} entries in the leader epoch checkpoint, "
                         f"found {len(entries)}")
    return entries
