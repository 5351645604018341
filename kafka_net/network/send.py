"""What a Processor can send besides bytes: a region of an open log segment file.

Kafka answers a Fetch from the log file straight to the socket: the records
of each partition are a ``FileRecords`` slice (file channel, position, size),
and ``RecordsSend`` / ``MultiRecordsSend`` write the response as its header
bytes followed by those slices, with ``FileChannel.transferTo`` (sendfile)
on a plaintext socket.  A :class:`FileRegion` is that slice as the network
layer sees it: a file descriptor, an offset in it and a length.

The log that made the region keeps the descriptor open until no send can
still be using it (Kafka deletes a segment's files ``file.delete.delay.ms``
after it leaves the log, for the same reason).
"""

from __future__ import annotations

import os


class FileRegion:
    """``size`` bytes of the file open as ``fd``, from ``position`` (a FileRecords slice)."""

    __slots__ = ("fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd, self.position, self.size = fd, position, size

    def __len__(self) -> int:
        return self.size

    def read_bytes(self) -> bytes:
        """The region copied into memory: the path for TLS, captures and tests.

        Short only if the file shrank under it, which a live segment never
        does: callers get exactly what is on disk."""
        return os.pread(self.fd, self.size, self.position)

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, size={self.size})"
