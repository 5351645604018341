"""FileRecords: one segment's ``.log`` file, record batches back to back as on the wire.

Kafka's ``FileRecords`` wraps a ``FileChannel``: appends go to the end,
reads are slices (``FileRecords.slice`` -> a :class:`FileRegion` the
network layer sends with sendfile), and recovery walks the batches from a
position (``FileRecords.batchesFrom``).  The file descriptor stays open for
the life of the segment, and after it: a deleted segment is renamed
``.deleted`` and its descriptor closed only ``file.delete.delay.ms`` later,
so a region already handed to a Processor stays readable.

Appends are serialized by the log's lock; reads only ``pread`` below the
size published after a complete append, so a reader never sees a partial
batch.
"""

from __future__ import annotations

import os
from typing import Iterator, NamedTuple

from kafka_net.network.send import FileRegion
from kafka_net.protocol.records import Buffer
from kafka_net.protocol.records.framing import (
    HEADER_PREFIX_SIZE, LOG_OVERHEAD, MAGIC_V2, RECORD_BATCH_OVERHEAD, read_header_prefix)
from kafka_net.server.storage.base import CorruptRecordException


class BatchPosition(NamedTuple):
    """Where one batch lies in the file, with what recovery and lookups need."""

    position: int
    base_offset: int
    size: int               # the whole batch, LOG_OVERHEAD included
    last_offset: int
    max_timestamp: int


def _header_problem(batch: BatchPosition, magic: int, end: int, next_offset: int) -> str | None:
    """Why a header read at a batch boundary cannot be a batch's, or None."""
    if batch.size < RECORD_BATCH_OVERHEAD:
        return f"batch size {batch.size - LOG_OVERHEAD} is below the minimum"
    if batch.position + batch.size > end:
        return (f"a batch of {batch.size} bytes would run past the end of the data "
                f"({end} bytes)")
    if magic != MAGIC_V2:
        return f"invalid magic {magic}"
    if batch.base_offset < max(next_offset, 0) or batch.last_offset < batch.base_offset:
        return (f"offsets [{batch.base_offset}, {batch.last_offset}] out of order "
                f"after offset {next_offset - 1}")
    return None


class FileRecords:
    def __init__(self, path: str, *, create: bool = False) -> None:
        self.path = path
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        self.fd = os.open(path, flags, 0o644)
        self._size = os.fstat(self.fd).st_size
        self._flushed_size = self._size   # what the last fsync covered (as far as we know)

    def size_in_bytes(self) -> int:
        return self._size

    def append(self, data: Buffer) -> int:
        """Write ``data`` at the end; returns the position it was written at."""
        position = self._size
        size = len(data)
        # One pwrite almost always takes it all (a regular file on Linux writes short
        # only when the disk is full or a signal lands): no view, no loop, per batch.
        written = os.pwrite(self.fd, data, position)
        if written < size:
            view = memoryview(data)
            while written < size:
                written += os.pwrite(self.fd, view[written:], position + written)
        self._size = position + size   # published last: readers stop below it
        return position

    def slice(self, position: int, size: int) -> FileRegion:
        size = max(0, min(size, self._size - position))
        return FileRegion(self.fd, position, size)

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    def header_at(self, position: int, end: int | None = None) -> BatchPosition | None:
        """The batch starting at ``position``, or None at or past ``end`` (the file
        size) or where fewer than a header's bytes are left."""
        end = self._size if end is None else end
        if position + HEADER_PREFIX_SIZE > end:
            return None
        raw = os.pread(self.fd, HEADER_PREFIX_SIZE, position)
        if len(raw) < HEADER_PREFIX_SIZE:
            return None
        base, size, last_offset, max_ts, _ = read_header_prefix(raw)
        return BatchPosition(position, base, size, last_offset, max_ts)

    def batches_from(self, position: int, end: int | None = None, limit: int | None = None,
                     strict: bool = True) -> Iterator[BatchPosition]:
        """The batches from ``position`` (a batch boundary), headers only.

        ``end`` is a batch boundary too (the file size, or the size published
        after a complete append): a header no batch has before it -- a size
        below the minimum or running past ``end``, another magic, offsets going
        back -- raises :class:`CorruptRecordException` (Kafka's
        ``FileLogInputStream``), unless ``strict`` is False (the tail a caller
        is about to recover), where the walk just stops there.  ``limit`` is
        any byte bound (what a fetch may take): the walk stops before the first
        batch ending past it."""
        end = self._size if end is None else end
        limit = end if limit is None else min(limit, end)
        next_offset = -1
        while position < limit:
            if position + HEADER_PREFIX_SIZE > limit:
                if position + HEADER_PREFIX_SIZE <= end:
                    return   # a whole batch is longer than a header: it ends past limit
                if strict:
                    raise CorruptRecordException(
                        f"{end - position} bytes at position {position} of {self.path} "
                        f"are too few for a batch header")
                return
            raw = os.pread(self.fd, HEADER_PREFIX_SIZE, position)
            base, size, last_offset, max_ts, magic = read_header_prefix(raw)
            batch = BatchPosition(position, base, size, last_offset, max_ts)
            problem = _header_problem(batch, magic, end, next_offset)
            if problem is not None:
                if strict:
                    raise CorruptRecordException(
                        f"Corrupt batch header at position {position} of {self.path}: "
                        f"{problem}")
                return
            if position + batch.size > limit:
                return
            yield batch
            next_offset = batch.last_offset + 1
            position += batch.size

    def flush(self) -> None:
        if self._size != self._flushed_size:
            os.fsync(self.fd)
            self._flushed_size = self._size

    def truncate_to(self, size: int) -> int:
        """Cut the file to ``size`` bytes; returns how many bytes were removed."""
        removed = self._size - size
        if removed > 0:
            os.ftruncate(self.fd, size)
            self._size = size
            self._flushed_size = -1
        return max(removed, 0)

    def rename_to(self, path: str) -> None:
        os.replace(self.path, path)
        self.path = path

    def last_modified_ms(self) -> int:
        return int(os.fstat(self.fd).st_mtime * 1000)

    def close(self) -> None:
        # The number is dropped before the descriptor is closed: a reader in another
        # thread that looks after this sees -1 (EBADF), never a number the kernel
        # may already have given to a file opened since.
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)
