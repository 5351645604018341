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
                    direction       int8    0 request (client -> broker), 1 response,
                                            2 a fault the broker injected (FAULT)
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

Crash safety.  The writer (:mod:`.writer`) sizes each new segment up front
and maps it into memory (a shared ``mmap``); a record goes in with one memory
copy at the write position, no system call.  A copied record is in the
kernel's page cache at once, and the kernel writes it back to the file
whether or not the process is still alive, so a *process* crash (an
exception, ``kill -9``, a segfault) loses at most the record being copied.

A segment whose writer is still running, or died, therefore ends in a *zero
tail*: the part never written, at least ``ZERO_TAIL_MIN`` (8) zero bytes,
since the writer maps that much more than it fills.  The reader takes a
record length of 0 at a record boundary, followed by nothing but zeros, as
the clean end of what was written.  A closed segment is cut to the bytes
written and has no zero tail.  A record cut short is a *torn tail*, reported
instead of failing: a length pointing past the end of the file; a bad CRC on
the last record, or on a record followed only by a zero tail (the copy got
as far as the length, not the whole body); or nonzero bytes after a zero
length (a copy may store its first bytes last).  The reader cannot tell a
record whose copy stored nothing but zeros from no record at all: that
record is lost without a report.  Files from before the mmap writer (one
``write`` per record, no zero tail) read exactly as they always did.

A *machine* crash or power loss is another matter: dirty pages the kernel
had not yet written back are lost, as they were with one ``write`` per
record and no ``fsync`` (nothing here calls ``fsync`` or ``msync``).  The
file may then hold zeros, or be shorter, where such pages were, and not
only at its end: the reader reports what it can (a torn tail, or a CRC
mismatch), and a lost range that starts at a record boundary and runs to
the end reads as a clean end.

Framing and damage.  The record lengths alone frame the file (the CRC covers
the body, not the length), as the batch lengths frame a Kafka log segment
for ``kafka-dump-log``.  A record whose CRC does not match, or whose body
does not decode, is reported and skipped, and reading goes on at the next
record its length points to; only a length that cannot frame a record (0,
under :data:`MIN_RECORD_LENGTH`, over :data:`MAX_RECORD_BYTES`, or past the
end of the file) stops the reading.  So where reading stops depends on the
lengths and nothing else, and a reader given any record boundary that the
lengths lead to (:func:`record_offsets`, :func:`decode_range`) reads the
rest exactly as a reader from the start does: a large segment is cut into
byte ranges read in parallel (:mod:`kafka_net.capture.capture_split`).
If a damaged length still looks plausible, the records it leads to are
garbage whose CRCs fail, each reported, until a length stops the reading or
one lands on a real boundary again.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

MAGIC = b"KNCAP"
FORMAT_VERSION = 1
FILE_HEADER = struct.Struct(">5sBiqq")
_RECORD_PREFIX = struct.Struct(">II")
# A record body's layout (see the module docstring), which every reader of it
# takes from these two tables: _decode_body here, and the conformance job's
# column-wise reader (spark_jobs/kncap_arrow.py).  First the fixed part, as
# (name, struct code, big-endian) ...
FIXED_FIELDS = (("timestamp_ns", "q"), ("direction", "b"), ("api_key", "h"),
                ("api_version", "h"), ("correlation_id", "i"), ("flags", "B"),
                ("frame_size", "i"))
# ... then the length-prefixed fields in order, as (name, the length's struct
# code): a signed length below zero is a null (no bytes follow it).
VARIABLE_FIELDS = (("connection_id", "H"), ("peer", "H"), ("client_id", "h"),
                   ("frame", "I"))
_FIXED = struct.Struct(">" + "".join(code for _, code in FIXED_FIELDS))
_U32 = struct.Struct(">I")

REQUEST, RESPONSE = 0, 1
# A fault the broker injected (server/faults): a marker of its connection, not a
# Kafka frame.  The request it acted on gives api_key, api_version and
# correlation_id (-1: none, as the broker going away); client_id is None; the
# frame is UTF-8 JSON {"rule", "action", "error_code", "topic", "partitions", ...}.
FAULT = 2
FLAG_TRUNCATED = 0x01

# A record longer than this is certainly garbage (frames are cut to
# capture.max.frame.bytes, far below it): the reader stops rather than
# trusting the length.
MAX_RECORD_BYTES = 256 * 1024 * 1024
# The shortest record: its CRC and a body of the fixed fields, two empty
# strings, a null client id and an empty frame.  A shorter length is garbage.
MIN_RECORD_LENGTH = 4 + _FIXED.size + 2 + 2 + 2 + 4

# An unclosed segment ends in at least this many zero bytes (one record
# prefix, so its first record length reads as 0): the writer maps that much
# more than it fills.  See "Crash safety" above.
ZERO_TAIL_MIN = _RECORD_PREFIX.size
_ZEROS = bytes(64 * 1024)


@dataclass(frozen=True, slots=True)
class CaptureRecord:
    """One frame as a kafka-net capture holds it, with its connection and timing."""

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
    """A capture segment file's header: which Processor wrote it, its number, when."""

    processor_id: int
    segment_seq: int
    created_ns: int


@dataclass
class ReadResult:
    """What :func:`decode_segment` found in one file."""

    segment: SegmentInfo | None
    records: list[CaptureRecord] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)   # each record's byte offset
    problems: list[str] = field(default_factory=list)
    torn_tail_bytes: int = 0


def encode_file_header(processor_id: int, segment_seq: int, created_ns: int) -> bytes:
    return FILE_HEADER.pack(MAGIC, FORMAT_VERSION, processor_id, segment_seq, created_ns)


def encode_record(rec: CaptureRecord) -> bytes:
    return encode_record_fields(
        rec.timestamp_ns, rec.direction, rec.api_key, rec.api_version, rec.correlation_id,
        rec.frame_size, rec.truncated,
        encode_strings(rec.connection_id, rec.peer, rec.client_id), rec.frame)


def encode_strings(connection_id: str, peer: str, client_id: str | None) -> bytes:
    """The record's three string fields, encoded.  The writer keeps these per
    connection: they rarely change, and encoding them is a good part of a record's cost."""
    return _short_str(connection_id) + _short_str(peer) + _nullable_str(client_id)


def encode_record_fields(timestamp_ns: int, direction: int, api_key: int, api_version: int,
                         correlation_id: int, frame_size: int, truncated: bool,
                         strings: bytes, frame) -> bytes:
    """One record, from its fields; ``strings`` from :func:`encode_strings`, ``frame``
    any bytes-like object (the Processor passes views of its response buffers).

    The writer's fast path: no :class:`CaptureRecord` is built (a frozen
    dataclass costs as much to create as the rest of the encoding)."""
    body = b"".join((
        _FIXED.pack(timestamp_ns, direction, api_key, api_version, correlation_id,
                    FLAG_TRUNCATED if truncated else 0, frame_size),
        strings, _U32.pack(len(frame)), frame))
    return _RECORD_PREFIX.pack(len(body) + 4, zlib.crc32(body)) + body


def decode_segment(data: bytes) -> ReadResult:
    """Parse a whole segment; never raises for bad input, it reports problems.

    A zero tail (a segment still being written, or whose writer died) is the
    clean end of the records, not a problem."""
    view = memoryview(data)
    if len(view) < FILE_HEADER.size or bytes(view[:5]) != MAGIC:
        return ReadResult(None, problems=["not a kafka-net capture file (no KNCAP header)"])
    magic, version, processor_id, seq, created = FILE_HEADER.unpack_from(view, 0)
    result = ReadResult(SegmentInfo(processor_id, seq, created))
    if version != FORMAT_VERSION:
        result.problems.append(f"unsupported capture format version {version}")
        return result
    _read_records(view, FILE_HEADER.size, result, 0, True)
    return result


@dataclass(frozen=True)
class RangeStart:
    """What a reader of a segment's bytes from a record boundary needs from the
    rest of the file: the file header's fields, and the file's size (a range
    that ends before the file does holds neither a torn tail nor a zero tail)."""

    processor_id: int
    segment_seq: int
    created_ns: int
    file_size: int

    def to_json(self) -> dict:
        return {"kind": "kncap", "processor_id": self.processor_id,
                "segment_seq": self.segment_seq, "created_ns": self.created_ns,
                "file_size": self.file_size}

    @classmethod
    def from_json(cls, obj: dict) -> "RangeStart":
        return cls(obj["processor_id"], obj["segment_seq"], obj["created_ns"],
                   obj["file_size"])


def range_start(data) -> RangeStart | None:
    """``data``'s header (bytes or an mmap of the whole file) as a
    :class:`RangeStart`, or None if it is not a segment this reader reads."""
    if len(data) < FILE_HEADER.size or bytes(data[:5]) != MAGIC:
        return None
    _, version, processor_id, seq, created = FILE_HEADER.unpack_from(data, 0)
    if version != FORMAT_VERSION:
        return None
    return RangeStart(processor_id, seq, created, len(data))


def record_offsets(data, pos: int = FILE_HEADER.size):
    """The byte offset of every record a reader reads through from ``pos`` (a
    record boundary) to where it stops, by the record lengths alone: no CRC is
    checked, nothing decoded.  It stops where :func:`decode_segment` does: a
    length that cannot frame a record (0, a zero tail or a torn record; under
    :data:`MIN_RECORD_LENGTH`; over :data:`MAX_RECORD_BYTES`) or one running
    past the end of ``data``.  Every offset given is a boundary where
    :func:`decode_range` may start."""
    size = len(data)
    unpack = _U32.unpack_from
    while size - pos >= _RECORD_PREFIX.size:
        (length,) = unpack(data, pos)
        if length < MIN_RECORD_LENGTH or length > MAX_RECORD_BYTES or size - pos < 4 + length:
            return
        yield pos
        pos += 4 + length


def decode_range(data, base: int, start: RangeStart) -> ReadResult:
    """The records of ``data``, a segment's bytes from offset ``base`` (0, the
    file header, or an offset :func:`record_offsets` gave) to such an offset or
    the end of the file: exactly the records, offsets (in the file) and
    problems that :func:`decode_segment` finds in those bytes of the whole file."""
    view = memoryview(data)
    result = ReadResult(SegmentInfo(start.processor_id, start.segment_seq, start.created_ns))
    _read_records(view, FILE_HEADER.size if base == 0 else 0, result, base,
                  base + len(view) >= start.file_size)
    return result


def _read_records(view: memoryview, pos: int, result: ReadResult, base: int,
                  at_file_end: bool) -> None:
    """Records from ``pos`` of ``view``, the file's bytes from offset ``base``;
    ``at_file_end``: ``view`` runs to the end of the file."""
    while pos < len(view):
        status, pos = _decode_one(view, pos, result, base, at_file_end)
        if status == "stop":
            break


def _decode_one(view: memoryview, pos: int, result: ReadResult, base: int,
                at_file_end: bool) -> tuple[str, int]:
    left = len(view) - pos
    if left < _RECORD_PREFIX.size:
        return _torn(result, base + pos, left, "a record length cut short")
    length, crc = _RECORD_PREFIX.unpack_from(view, pos)
    if length == 0:
        # No record is empty (the CRC alone is 4 bytes): this is where the
        # writer stopped, in a segment it has not closed.
        return _zero_length(view, pos, result, base)
    if length < MIN_RECORD_LENGTH or length > MAX_RECORD_BYTES:
        result.problems.append(f"garbage at byte {base + pos}: record length {length}; "
                               f"rest skipped")
        return "stop", len(view)
    if left < 4 + length:
        return _torn(result, base + pos, left, f"a {length}-byte record cut at {left - 4} bytes")
    end = pos + 4 + length
    body = view[pos + 8:end]
    if zlib.crc32(body) != crc:
        return _bad_crc(view, pos, end, result, base, at_file_end)
    try:
        result.records.append(_decode_body(bytes(body)))
        result.offsets.append(base + pos)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        # Its CRC matched, so its length frames it: the next record is where it says.
        result.problems.append(f"record at byte {base + pos} does not decode: {exc}; "
                               f"{4 + length} bytes skipped")
    return "ok", end


def _zero_length(view: memoryview, pos: int, result: ReadResult,
                 base: int) -> tuple[str, int]:
    """A zero length at ``pos``: the clean end of an unclosed segment, or a torn
    record whose copy had not yet stored its length when the writer died."""
    written = _written_end(view, pos)
    if written == pos:
        return "stop", len(view)
    return _torn(result, base + pos, written - pos,
                 f"a zero record length, then nonzero bytes up to byte {base + written}")


def _bad_crc(view: memoryview, pos: int, end: int, result: ReadResult, base: int,
             at_file_end: bool) -> tuple[str, int]:
    # The record the writer was copying when it stopped is the last one in the
    # file, or the last one before the zero tail; any other is damage, skipped
    # by its length (see "Framing and damage" above).
    if at_file_end and end == len(view):
        return _torn(result, base + pos, end - pos, "a last record with a bad CRC")
    if at_file_end and _is_zero_tail(view, end):
        return _torn(result, base + pos, end - pos,
                     "a record with a bad CRC before the zero tail")
    result.problems.append(f"corrupt record at byte {base + pos} (CRC mismatch); "
                           f"{end - pos} bytes skipped")
    return "ok", end


def _torn(result: ReadResult, at: int, count: int, what: str) -> tuple[str, int]:
    result.torn_tail_bytes = count
    result.problems.append(f"torn tail at byte {at}: {what} ({count} bytes ignored)")
    return "stop", at + count


def _is_zero_tail(view: memoryview, pos: int) -> bool:
    """True if ``view[pos:]`` is an unwritten tail: at least a record prefix of
    zeros and nothing else.  A file written with one ``write`` per record never
    has one: its lengths are never zero, and a tail cut short is under 8 bytes."""
    return len(view) - pos >= ZERO_TAIL_MIN and _written_end(view, pos) == pos


def _written_end(view: memoryview, pos: int) -> int:
    """Just past the last nonzero byte of ``view[pos:]``; ``pos`` if all are zero.

    Scans from the end, a chunk at a time: comparing whole chunks with zeros
    runs at memcmp speed (a 64 MiB zero tail in milliseconds)."""
    end = len(view)
    while end > pos:
        start = max(pos, end - len(_ZEROS))
        chunk = view[start:end].tobytes()
        if chunk != (_ZEROS if len(chunk) == len(_ZEROS) else bytes(len(chunk))):
            return start + len(chunk.rstrip(b"\0"))
        end = start
    return pos


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
