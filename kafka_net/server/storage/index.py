"""The sparse indexes of a segment: OffsetIndex (``.index``) and TimeIndex (``.timeindex``).

Kafka's on-disk entry formats, big-endian:

* offset index, 8 bytes: relative offset (int32, offset - segment base
  offset), position of the batch in the ``.log`` file (int32);
* time index, 12 bytes: timestamp (int64), relative offset (int32).

An entry is added once at least ``index.interval.bytes`` (4096) were
appended since the previous one, so the indexes stay small and a lookup
ends with a short scan of batch headers.  An index holds at most
``segment.index.bytes`` (10 MiB) worth of entries; a full index rolls the
segment.

Kafka preallocates the file to that size, memory-maps it and trims it on
close.  Here the entries live in two ``array`` columns (bisect finds an
entry), and reach the file up to ``PENDING_ENTRIES`` at a time, with one
``pwrite``, and always before a flush, a close, a rename or a truncation:
what Kafka's mapped pages give, an entry in memory at once and on disk at
the next flush, without a system call for every few appends.  An entry
still pending at a crash is an entry of a segment past the recovery point,
whose indexes recovery rebuilds anyway (and a sparse index missing its
last entries is still right, only a longer scan).  The file length is
always a whole number of entries; a file whose length is not, or whose
entries do not grow, fails :meth:`sanity_check` and is rebuilt from the
``.log`` (Kafka's ``CorruptIndexException`` path).
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array


class CorruptIndexError(Exception):
    """Kafka's CorruptIndexException: the index must be rebuilt from the log."""


class InvalidOffsetError(Exception):
    """Kafka's InvalidOffsetException: an entry out of order."""


# Entries kept in memory before one write of them all (see the module docstring).
PENDING_ENTRIES = 64


class _Index:
    ENTRY = struct.Struct(">ii")
    kind = "index"

    def __init__(self, path: str, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // self.ENTRY.size)
        self._keys = array("q")      # offsets (offset index) or timestamps (time index)
        self._values = array("q")    # positions (offset index) or offsets (time index)
        # Opened on the first write and closed when the segment stops being active:
        # lookups use the arrays, so a broker with many partitions holds one
        # descriptor per segment (its .log), not three.
        self._fd = -1
        self._dirty = False          # written since the last fsync
        self._pending = bytearray()  # the last entries, not written to the file yet
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            raw = b""
        usable = len(raw) - len(raw) % self.ENTRY.size
        for key, value in self.ENTRY.iter_unpack(raw[:usable]):
            self._keys.append(self._key_from_disk(key, value))
            self._values.append(self._value_from_disk(key, value))
        self._file_bytes = len(raw)

    def _key_from_disk(self, a: int, b: int) -> int:
        raise NotImplementedError

    def _value_from_disk(self, a: int, b: int) -> int:
        raise NotImplementedError

    def _to_disk(self, key: int, value: int) -> bytes:
        raise NotImplementedError

    # -- entries ---------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return len(self._keys)

    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    def _open(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def _append(self, key: int, value: int) -> None:
        if self._fd < 0:
            self._open()   # the file exists from the first entry on, as before
        pending = self._pending
        pending += self._to_disk(key, value)
        self._keys.append(key)
        self._values.append(value)
        self._file_bytes = len(self._keys) * self.ENTRY.size
        self._dirty = True
        if len(pending) >= PENDING_ENTRIES * self.ENTRY.size:
            self._write_pending()

    def _write_pending(self) -> None:
        """Write the pending entries after the file's written ones."""
        pending = self._pending
        if pending:
            os.pwrite(self._open(), pending, self._file_bytes - len(pending))
            pending.clear()

    def _floor(self, key: int) -> int:
        """Index of the last entry whose key is <= ``key`` (-1 if none)."""
        return bisect.bisect_right(self._keys, key) - 1

    def sanity_check(self) -> None:
        if self._file_bytes % self.ENTRY.size:
            raise CorruptIndexError(
                f"Index file {os.path.basename(self.path)} is corrupt, found "
                f"{self._file_bytes} bytes which is neither positive nor a multiple of "
                f"{self.ENTRY.size}.")
        keys = self._keys
        if any(keys[i] >= keys[i + 1] for i in range(len(keys) - 1)):
            raise CorruptIndexError(
                f"Corrupt {self.kind} found, entries of {os.path.basename(self.path)} "
                f"are not increasing")

    def truncate_entries(self, count: int) -> None:
        """Keep the first ``count`` entries."""
        self._write_pending()
        if count < len(self._keys):
            del self._keys[count:], self._values[count:]
        self._file_bytes = len(self._keys) * self.ENTRY.size
        os.ftruncate(self._open(), self._file_bytes)
        self._dirty = True

    def reset(self) -> None:
        self.truncate_entries(0)

    # -- the file ----------------------------------------------------------------------

    def flush(self) -> None:
        if not self._dirty:
            return
        self._write_pending()
        was_open = self._fd >= 0
        os.fsync(self._open())
        self._dirty = False
        if not was_open:
            self.close()

    def rename_to(self, path: str) -> None:
        self.close()
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self.path = path

    def close(self) -> None:
        """Release the descriptor; the file exists afterwards (empty if no entry was
        ever written), so a clean reopen finds every index."""
        self._write_pending()
        if self._fd < 0 and not os.path.exists(self.path):
            self._open()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def release(self) -> None:
        """Close the descriptor, creating nothing (the folder may be gone); pending
        entries go with it (their files are being deleted)."""
        self._pending.clear()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.release()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class OffsetIndex(_Index):
    """Offset -> position of the batch holding it (or of an earlier batch)."""

    ENTRY = struct.Struct(">ii")
    kind = "offset index"

    def _key_from_disk(self, relative_offset: int, position: int) -> int:
        return self.base_offset + relative_offset

    def _value_from_disk(self, relative_offset: int, position: int) -> int:
        return position

    def _to_disk(self, offset: int, position: int) -> bytes:
        return self.ENTRY.pack(offset - self.base_offset, position)

    def append(self, offset: int, position: int) -> None:
        if self._keys and offset <= self._keys[-1]:
            raise InvalidOffsetError(
                f"Attempt to append an offset ({offset}) to position {len(self._keys)} no "
                f"larger than the last offset appended ({self._keys[-1]}) to {self.path}.")
        self._append(offset, position)

    def lookup(self, target: int) -> tuple[int, int]:
        """(offset, position) of the largest entry at or below ``target``, else
        (base offset, 0): where a scan for ``target`` starts."""
        i = self._floor(target)
        return (self.base_offset, 0) if i < 0 else (self._keys[i], self._values[i])

    def position_at_or_below(self, position: int) -> int:
        """The largest indexed batch position <= ``position`` (0 if none)."""
        i = bisect.bisect_right(self._values, position) - 1
        return 0 if i < 0 else self._values[i]

    def truncate_to(self, offset: int) -> None:
        """Drop the entries at or above ``offset`` (Kafka's ``truncateTo``)."""
        self.truncate_entries(bisect.bisect_left(self._keys, offset))

    def last_offset(self) -> int:
        return self._keys[-1] if self._keys else self.base_offset


class TimeIndex(_Index):
    """Timestamp -> offset: each entry's timestamp is larger than every earlier one."""

    ENTRY = struct.Struct(">qi")
    kind = "time index"

    def _key_from_disk(self, timestamp: int, relative_offset: int) -> int:
        return timestamp

    def _value_from_disk(self, timestamp: int, relative_offset: int) -> int:
        return self.base_offset + relative_offset

    def _to_disk(self, timestamp: int, offset: int) -> bytes:
        return self.ENTRY.pack(timestamp, offset - self.base_offset)

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append unless the timestamp is not larger than the last entry's (Kafka's
        ``TimeIndex.maybeAppend``: a time index only grows)."""
        if not self._keys or timestamp > self._keys[-1]:
            if self._values and offset < self._values[-1]:
                raise InvalidOffsetError(
                    f"Attempt to append an offset ({offset}) to the time index no larger "
                    f"than the last offset appended ({self._values[-1]}) to {self.path}.")
            self._append(timestamp, offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry at or below ``timestamp``, else
        (-1, base offset)."""
        i = self._floor(timestamp)
        return (-1, self.base_offset) if i < 0 else (self._keys[i], self._values[i])

    def last_entry(self) -> tuple[int, int]:
        return ((self._keys[-1], self._values[-1]) if self._keys
                else (-1, self.base_offset))

    def truncate_to(self, offset: int) -> None:
        """Drop the entries for offsets at or above ``offset``."""
        count = len(self._values)
        while count and self._values[count - 1] >= offset:
            count -= 1
        self.truncate_entries(count)
