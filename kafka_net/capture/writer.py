"""CaptureWriter: one Processor's append-only capture segments.

Each Processor owns one writer, so no lock is needed or shared.  A segment
file is created at its full size (``capture.segment.bytes``, and 8 bytes more:
see :class:`_MappedSegment`) and mapped into memory (a shared ``mmap``); each
record is copied into the mapping at the write position.  That is no system
call per record: ``os.write`` released the GIL, and a Processor then waited
for another thread to give it back (hundreds of µs per request under load;
see ``bench/capture_profile.py``).
A record that does not fit in the rest of the segment goes to a new one
(made bigger than ``capture.segment.bytes`` for a record that needs it); the
segment left is unmapped and cut to the bytes written, so closed segments
have no zero tail.  Segment names sort in write order::

    kafka-net-<run start ns>-p<processor id>-<segment seq, 6 digits>.kncap

Crash safety (details in :mod:`.format`): what is copied into the mapping is
in the page cache, which the kernel writes back even if the process dies, so
a process crash loses at most the record being copied; the segment is then
left at its full size with a zero tail, which the reader takes as the end.
A machine crash or power loss loses the pages not yet written back, as with
``write`` and no ``fsync`` before.

A failing disk never stops the broker: the first error (no space, no
directory, a mapping refused) is logged and capture is switched off for
that Processor.  Disk space for a whole segment is reserved when it is
created (``posix_fallocate``), because running out of space while copying
into a mapping is not an error Python can catch: the kernel kills the
process with SIGBUS.  Where the file system cannot reserve space the file
is only extended (sparse), and that risk remains on a full disk.  (So does
another program truncating a segment that is still open.)
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import time

from kafka_net.capture.format import (
    FAULT, REQUEST, RESPONSE, ZERO_TAIL_MIN, CaptureRecord, encode_file_header, encode_record,
    encode_record_fields, encode_strings)
from kafka_net.protocol import readable

log = logging.getLogger(__name__)

SUFFIX = ".kncap"

# Encoded (connection id, peer, client id) triples kept per writer.  A
# connection has one or two (its requests' and its responses'); the cache is
# emptied when full, which bounds it without tracking closed connections.
_STRINGS_CACHE_MAX = 1024


class CaptureWriter:
    """Writes one Processor's records; only that Processor's thread may call it."""

    def __init__(self, directory: str, processor_id: int, segment_bytes: int,
                 max_frame_bytes: int, run_id: int | None = None) -> None:
        self.directory = directory
        self.processor_id = processor_id
        self.segment_bytes = segment_bytes
        self.max_frame_bytes = max_frame_bytes
        self.run_id = run_id if run_id is not None else time.time_ns()
        self._segment: _MappedSegment | None = None
        self._seq = -1
        self._strings: dict[tuple, bytes] = {}
        if readable.READABLE:    # KAFKA_NET_READABLE, read once, here
            self._write = self._write_readable
        self.enabled = True
        self.records_written = 0
        os.makedirs(directory, exist_ok=True)
        try:
            self._roll(0)
        except OSError as exc:
            # Even the first segment: a broker that cannot capture still serves.
            self._fail(exc)

    def segment_path(self, seq: int) -> str:
        return os.path.join(self.directory,
                            f"kafka-net-{self.run_id}-p{self.processor_id}-{seq:06d}{SUFFIX}")

    def request(self, connection_id: str, peer: str, frame: bytes, api_key: int,
                api_version: int, correlation_id: int, client_id: str | None) -> None:
        self._write(REQUEST, connection_id, peer, frame, api_key, api_version,
                    correlation_id, client_id)

    def response(self, connection_id: str, peer: str, frame: bytes, api_key: int,
                 api_version: int, correlation_id: int, size: int | None = None) -> None:
        """``size``: the frame's full length when ``frame`` is only its first bytes
        (a response sent from files with sendfile: the Processor reads no more of
        it than :attr:`max_frame_bytes`, what a record keeps anyway)."""
        self._write(RESPONSE, connection_id, peer, frame, api_key, api_version,
                    correlation_id, None, size)

    def fault(self, connection_id: str, peer: str, note: bytes, api_key: int,
              api_version: int, correlation_id: int, timestamp_ns: int) -> None:
        """A FAULT record: ``note`` (JSON) about the request of these ids, fired
        at ``timestamp_ns`` (:mod:`kafka_net.server.faults`)."""
        self._write(FAULT, connection_id, peer, note, api_key, api_version,
                    correlation_id, None, timestamp_ns=timestamp_ns)

    def close(self) -> None:
        """Close the current segment (cut to the bytes written); capture is off
        afterwards.  Never raises, and may be called again."""
        self.enabled = False
        try:
            self._close_segment()
        except OSError as exc:
            log.error("capture: cannot close a segment in %s (%s)", self.directory, exc)

    # -- the write path -----------------------------------------------------------------

    def _write(self, direction, connection_id, peer, frame, api_key, api_version,
               correlation_id, client_id, size=None, timestamp_ns=None) -> None:
        if not self.enabled:
            return
        # Cutting a memoryview copies nothing: the frame is copied once, into the record.
        kept = frame[:self.max_frame_bytes]
        if size is None:
            size = len(frame)
        # The fast path: no CaptureRecord made, the strings' encoding kept per connection.
        self._store(encode_record_fields(
            timestamp_ns or time.time_ns(), direction, api_key, api_version, correlation_id, size,
            len(kept) < size, self._encoded_strings(connection_id, peer, client_id),
            kept))

    def _write_readable(self, direction, connection_id, peer, frame, api_key, api_version,
                        correlation_id, client_id, size=None, timestamp_ns=None) -> None:
        """:meth:`_write`'s reference (KAFKA_NET_READABLE): the same bytes, by way
        of a :class:`~kafka_net.capture.format.CaptureRecord` encoded whole by
        ``format.encode_record``, its strings encoded every time."""
        if not self.enabled:
            return
        kept = bytes(frame[:self.max_frame_bytes])
        size = len(frame) if size is None else size
        self._store(encode_record(CaptureRecord(
            timestamp_ns or time.time_ns(), direction, api_key, api_version, correlation_id,
            size, connection_id, peer, client_id, kept, len(kept) < size)))

    def _encoded_strings(self, connection_id: str, peer: str, client_id: str | None) -> bytes:
        key = (connection_id, peer, client_id)
        encoded = self._strings.get(key)
        if encoded is None:
            if len(self._strings) >= _STRINGS_CACHE_MAX:
                self._strings.clear()
            encoded = self._strings[key] = encode_strings(connection_id, peer, client_id)
        return encoded

    def _store(self, data: bytes) -> None:
        """Append one record's bytes; the first error turns capture off."""
        try:
            segment = self._segment
            if not segment.has_room(len(data)):
                if segment.has_records():
                    self._roll(len(data))
                else:
                    # Only the first segment can be empty and too small (a new one is
                    # made big enough for the record that started it): no empty file
                    # is left behind for a record bigger than a segment.
                    segment.grow(len(data))
            self._segment.append(data)
        except OSError as exc:
            self._fail(exc)
            return
        self.records_written += 1

    def _roll(self, first_record_bytes: int) -> None:
        """Close the current segment and start the next, with room for at least
        ``first_record_bytes`` after its header."""
        self._close_segment()
        self._seq += 1
        header = encode_file_header(self.processor_id, self._seq, time.time_ns())
        capacity = max(self.segment_bytes, len(header) + first_record_bytes)
        self._segment = _MappedSegment(self.segment_path(self._seq), capacity, header)

    def _close_segment(self) -> None:
        segment, self._segment = self._segment, None
        if segment is not None:
            segment.close()

    def _fail(self, exc: OSError) -> None:
        """The first error: one log line, then capture stays off, quietly."""
        log.error("capture: cannot write to %s (%s); capture is off for processor %d",
                  self.directory, exc, self.processor_id)
        self.enabled = False
        try:
            self._close_segment()
        except OSError:
            pass    # the same failing disk, most likely; said once already


class _MappedSegment:
    """One segment file, mapped: records are copied in at ``end``.

    The file is ``capacity + ZERO_TAIL_MIN`` bytes while open.  The extra
    bytes are never written, so the file always ends in at least a record
    prefix of zeros, which the reader takes as the end of an unclosed segment.
    """

    def __init__(self, path: str, capacity: int, header: bytes) -> None:
        self.capacity = capacity
        self.end = 0
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            self._map = _map_file(self._fd, capacity + ZERO_TAIL_MIN)
        except BaseException:
            # A file without even a header would read as "not a capture": remove it.
            os.close(self._fd)
            _remove_quietly(path)
            raise
        self.append(header)
        self._header_end = self.end

    def has_room(self, n: int) -> bool:
        return self.end + n <= self.capacity

    def has_records(self) -> bool:
        return self.end > self._header_end

    def append(self, data: bytes) -> None:
        # One memory copy and no system call: the GIL is not released.
        end = self.end + len(data)
        self._map[self.end:end] = data
        self.end = end

    def grow(self, n: int) -> None:
        """Make room for ``n`` more bytes (mapping the file again at its new size)."""
        capacity = self.end + n
        self._map.close()
        self._map = _map_file(self._fd, capacity + ZERO_TAIL_MIN)
        self.capacity = capacity

    def close(self) -> None:
        """Unmap, cut the file to the bytes written, close it.

        No ``msync``: unmapping keeps the copied pages in the page cache, which
        the kernel writes back as it would have after ``write``; forcing them
        to disk would stall this Processor for as long as the disk takes."""
        try:
            self._map.close()
            os.ftruncate(self._fd, self.end)
        finally:
            os.close(self._fd)


def _map_file(fd: int, size: int) -> mmap.mmap:
    """Size the file to ``size`` bytes, reserving its disk space, and map all of it."""
    _reserve(fd, size)
    return mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)


def _reserve(fd: int, size: int) -> None:
    """Extend the file to ``size`` with its blocks allocated now, so that a full
    disk is an ``OSError`` here (ENOSPC) rather than SIGBUS in a later copy.
    Falls back to a sparse extension where the file system cannot allocate."""
    fallocate = getattr(os, "posix_fallocate", None)     # not on macOS
    if fallocate is not None:
        try:
            fallocate(fd, 0, size)
            return
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
    os.ftruncate(fd, size)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
