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

The codec encodes a Fetch response whose records are regions into a
:class:`~kafka_net.protocol.chunked.ChunkedFrame` (Kafka's ``SendBuilder``):
header bytes, a region, more bytes, ...  :class:`MultiRecordsSend` writes
one to a transport layer, chunk by chunk: bytes with ``write`` (``send``),
regions with ``transfer_from`` (``os.sendfile`` on plaintext, a bounded
copy through the TLS engine on SSL).  A write the socket takes only part of
ends the call; the Selector calls again on the next writable event and the
send resumes where it stopped (Kafka's ``RecordsSend.writeTo`` with its
``remaining`` count).  Nothing of a region is ever held in memory on the
plaintext path; on TLS at most one ``APP_WRITE_CHUNK`` at a time.
"""

from __future__ import annotations

import errno
import os

from kafka_net.protocol.chunked import ChunkedFrame, Region


class TruncatedRegionError(OSError):
    """A region's file ended before the region did (Kafka's FileRecords.writeTo:
    "Size of FileRecords ... has been truncated during write").  The send cannot
    go on: the Selector closes the connection as for any failed send."""

    def __init__(self, region: "FileRegion", position: int) -> None:
        super().__init__(errno.EIO, f"Size of FileRecords fd {region.fd} has been truncated "
                                    f"during write: {region!r} ends at byte {position} of it")


class FileRegion(Region):
    """``size`` bytes of the file open as ``fd``, from ``position`` (a FileRecords slice)."""

    __slots__ = ("fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd, self.position, self.size = fd, position, size

    def __len__(self) -> int:
        return self.size

    def read_bytes(self, offset: int = 0, limit: int | None = None) -> bytes:
        """Bytes of the region copied into memory, from ``offset`` in it, at most
        ``limit`` (all by default): for captures and tests.

        Short only if the file shrank under it, which a live segment never
        does: callers get exactly what is on disk."""
        count = self.size - offset if limit is None else min(limit, self.size - offset)
        return os.pread(self.fd, max(count, 0), self.position + offset)

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, size={self.size})"


class MultiRecordsSend:
    """A ChunkedFrame on its way out (Kafka's ``MultiRecordsSend`` over
    ``ByteBufferSend`` and ``RecordsSend``): which chunk is next and how much of
    it is written.  Only the owning Processor thread uses it."""

    __slots__ = ("_chunks", "_index", "_offset", "size")

    def __init__(self, frame: ChunkedFrame) -> None:
        self._chunks = frame.chunks
        self._index = 0
        self._offset = 0     # bytes of the current chunk already written
        self.size = frame.size

    def completed(self) -> bool:
        return self._index >= len(self._chunks)

    def write_to(self, transport) -> int:
        """Write as much as ``transport`` takes now; return the bytes written (0 if
        the socket is full).  Raises OSError for a broken connection and
        TruncatedRegionError for a file shorter than its region."""
        chunks, written = self._chunks, 0
        while self._index < len(chunks):
            chunk, offset = chunks[self._index], self._offset
            try:
                if chunk.__class__ is bytes:
                    n = transport.write(memoryview(chunk)[offset:])
                    left = len(chunk) - offset - n
                else:
                    count = chunk.size - offset
                    n = transport.transfer_from(chunk, chunk.position + offset, count)
                    if n == 0 and count > 0:
                        raise TruncatedRegionError(chunk, offset)
                    left = count - n
            except (BlockingIOError, InterruptedError):
                break   # the socket is full: the next writable event goes on
            written += n
            if left:
                self._offset = offset + n
                break   # a partial write: the socket took what it could
            self._index += 1
            self._offset = 0
        return written


def read_prefix(frame: ChunkedFrame, limit: int) -> bytes:
    """The first ``limit`` bytes of ``frame``, regions read from their files: what
    a capture records of a response sent with sendfile (bounded: a capture keeps
    at most its frame limit of each frame anyway)."""
    out = bytearray()
    for chunk in frame.chunks:
        room = limit - len(out)
        if room <= 0:
            break
        out += chunk[:room] if chunk.__class__ is bytes else chunk.read_bytes(0, room)
    return bytes(out)
