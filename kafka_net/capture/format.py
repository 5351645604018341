"""The kafka-net wire-capture format, sans-IO: records to bytes and back.

Each Processor appends to its own capture files (no lock is shared between
processors); the Spark jobs and tests read them with the same code.

A capture file (a *segment*) is a file header followed by records::

    file header   b"KNCAP" (5)  format_version uint8  processor_id int32
                  segment_seq int64  created_ns int64                 = 26 bytes
    record        length uint32   bytes after this field, crc included
                  crc    uint32   zlib CRC-32 of the body
                  body:
                    timestamp_ns    int64   wall clock (time.time_ns) when the frame
                                            was read (request) or fully written (response)
                    direction       int8    0 request (client -> broker), 1 response
                    api_key         int16   -1 if unknown (frame too short to say)
                    api_version     int16   -1 if unknown
                    correlation_id  int32   -1 if unknown
                    flags           uint8   bit 0: frame truncated in the capture
                    frame_size      int32   the frame's size (its size prefix)
                    connection_id   uint16 length + UTF-8
                    peer            uint16 length + UTF-8 ("host:port" of the client)
                    client_id       int16 length + UTF-8, -1 = none (requests only)
                    frame           uint32 length + bytes (the frame without its
                                    size prefix, cut to capture.max.frame.bytes)

For responses the API key and version are those of the request answered
(the broker knows them; a response frame alone does not say).

Crash safety: a record is handed to the OS in one ``write`` call, so a crash
loses at most the record being written.  The reader then finds a *torn tail*
(a length pointing past the end of the file, or a bad CRC on the last
record) and reports it instead of failing.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

MAGIC = b"KNCAP"
FORMAT_VERSION = 1
FILE_HEADER = struct.Struct(">5sBiqq")
_RECORD_PREFIX = struct.Struct(">II")
_FIXED = struct.Struct(">qbhhiBi")

REQUEST, RESPONSE = 0, 1
FLAG_TRUNCATED = 0x01

# A record longer than this is certainly garbage (frames are cut to
# capture.max.frame.bytes, far below it): the reader stops rather than
# trusting the length.
MAX_RECORD_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class CaptureRecord:
    timestamp_ns: int
    direction: int
    api_key: int
    api_version: int
    correlation_id: int
    frame_size: int
    connection_id: str
    peer: str
    client_id: str | None
    frame: bytes
    truncated: bool = False


@dataclass
class SegmentInfo:
    processor_id: int
    segment_seq: int
    created_ns: int


@dataclass
class ReadResult:
    """What :func:`decode_segment` found in one file."""

    segment: SegmentInfo | None
    records: list[CaptureRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    torn_tail_bytes: int = 0


def encode_file_header(processor_id: int, segment_seq: int, created_ns: int) -> bytes:
    return FILE_HEADER.pack(MAGIC, FORMAT_VERSION, processor_id, segment_seq, created_ns)


def encode_record(rec: CaptureRecord) -> bytes:
    flags = FLAG_TRUNCATED if rec.truncated else 0
    parts = [
        _FIXED.pack(rec.timestamp_ns, rec.direction, rec.api_key, rec.api_version,
                    rec.correlation_id, flags, rec.frame_size),
        _short_str(rec.connection_id), _short_str(rec.peer), _nullable_str(rec.client_id),
        struct.pack(">I", len(rec.frame)), rec.frame,
    ]
    body = b"".join(parts)
    return _RECORD_PREFIX.pack(len(body) + 4, zlib.crc32(body)) + body


def decode_segment(data: bytes) -> ReadResult:
    """Parse a whole segment; never raises for bad input, it reports problems."""
    view = memoryview(data)
    if len(view) < FILE_HEADER.size or bytes(view[:5]) != MAGIC:
        return ReadResult(None, problems=["not a kafka-net capture file (no KNCAP header)"])
    magic, version, processor_id, seq, created = FILE_HEADER.unpack_from(view, 0)
    result = ReadResult(SegmentInfo(processor_id, seq, created))
    if version != FORMAT_VERSION:
        result.problems.append(f"unsupported capture format version {version}")
        return result
    pos = FILE_HEADER.size
    while pos < len(view):
        status, pos = _decode_one(view, pos, result)
        if status != "ok":
            break
    return result


def _decode_one(view: memoryview, pos: int, result: ReadResult) -> tuple[str, int]:
    left = len(view) - pos
    if left < _RECORD_PREFIX.size:
        return _torn(result, left, pos, "a record length cut short")
    length, crc = _RECORD_PREFIX.unpack_from(view, pos)
    if length < 4 or length > MAX_RECORD_BYTES:
        result.problems.append(f"garbage at byte {pos}: record length {length}; rest skipped")
        return "stop", len(view)
    if left < 4 + length:
        return _torn(result, left, pos, f"a {length}-byte record cut at {left - 4} bytes")
    body = view[pos + 8:pos + 4 + length]
    if zlib.crc32(body) != crc:
        if pos + 4 + length == len(view):
            return _torn(result, left, pos, "a last record with a bad CRC")
        result.problems.append(f"corrupt record at byte {pos} (CRC mismatch); rest skipped")
        return "stop", len(view)
    try:
        result.records.append(_decode_body(bytes(body)))
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        result.problems.append(f"record at byte {pos} does not decode: {exc}; rest skipped")
        return "stop", len(view)
    return "ok", pos + 4 + length


def _torn(result: ReadResult, left: int, pos: int, what: str) -> tuple[str, int]:
    result.torn_tail_bytes = left
    result.problems.append(f"torn tail at byte {pos}: {what} ({left} bytes ignored)")
    return "stop", pos + left


def _decode_body(body: bytes) -> CaptureRecord:
    ts, direction, key, version, corr, flags, size = _FIXED.unpack_from(body, 0)
    pos = _FIXED.size
    conn, pos = _read_short_str(body, pos)
    peer, pos = _read_short_str(body, pos)
    client_id, pos = _read_nullable_str(body, pos)
    (n,) = struct.unpack_from(">I", body, pos)
    pos += 4
    frame = body[pos:pos + n]
    if len(frame) != n or pos + n != len(body):
        raise ValueError("frame length does not match the record")
    return CaptureRecord(ts, direction, key, version, corr, size, conn, peer, client_id,
                         frame, bool(flags & FLAG_TRUNCATED))


def _cut(s: str, limit: int) -> bytes:
    """UTF-8 of ``s`` in at most ``limit`` bytes, never cut inside a character
    (a record whose string would not decode would hide the rest of its file)."""
    data = s.encode("utf-8")
    if len(data) <= limit:
        return data
    return data[:limit].decode("utf-8", "ignore").encode("utf-8")


def _short_str(s: str) -> bytes:
    data = _cut(s, 0xFFFF)
    return struct.pack(">H", len(data)) + data


def _nullable_str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    data = _cut(s, 0x7FFF)
    return struct.pack(">h", len(data)) + data


def _read_short_str(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", buf, pos)
    pos += 2
    if pos + n > len(buf):
        raise ValueError("string runs past the record")
    return buf[pos:pos + n].decode("utf-8"), pos + n


def _read_nullable_str(buf: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise ValueError("string runs past the record")
    return buf[pos:pos + n].decode("utf-8"), pos + n
