"""The one reader of capture files, sans-IO: the only place that tells a
file's kind (kafka-net's ``.kncap``, pcap, pcapng, or not a capture) and the
only place that turns .kncap records into frame rows.

Every consumer starts here: ``kafka-net decode`` (:func:`read_capture_file`,
connections in the frame model, :class:`~kafka_net.capture.model.Frame`), and
the conformance job, in process and on Spark (:func:`read_file`, the frame
rows as columns of a .kncap file or a byte range of one, or a pcap's TCP
packets; :func:`sniff` and :func:`not_a_capture` for routing and refusing
files by their first bytes).  The job's column-wise .kncap path
(``spark_jobs/kncap_arrow.py``) reads the record layout from
:mod:`.format` and falls back to :func:`kncap_columns` for anything unusual.
Each frame knows where it is in its file (Wireshark's frame number, or the
.kncap record's byte offset)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from kafka_net.capture import format as kncap
from kafka_net.capture.model import FAULT, Frame
from kafka_net.capture.packet import Packet
from kafka_net.capture.pcap import CaptureRead, Resume, read_capture, sniff_format

KNCAP, PCAP, PCAPNG = "kncap", "pcap", "pcapng"
NOT_A_CAPTURE = "neither a kafka-net capture nor a pcap/pcapng file"
EMPTY_FILE = "an empty file"
# sniff() decides by this many first bytes: a caller may read only these.
SNIFF_BYTES = 12

# kafka-net's segment names: run id, Processor, segment number.
RUN_NAME = re.compile(r"kafka-net-(\d+)-p(\d+)-(\d+)\.kncap$")

# The frame rows' columns (spark_jobs/schemas.py FRAME_SCHEMA), in order.
FRAME_FIELDS = ("source", "file", "connection", "order_key", "direction", "timestamp_ns",
                "frame_size", "truncated", "after_gap", "api_key", "api_version",
                "correlation_id", "client_id", "frame", "marker", "gap_start", "gap_end",
                "frame_number", "file_offset")


@dataclass
class CapturedConnection:
    """One connection's frames as a capture file holds them."""

    id: str                       # pcap: "client-broker" addresses; kncap: Kafka's id
    frames: list[Frame]           # in order, markers (gaps, the client's FIN) included
    notes: list[str] = field(default_factory=list)   # why parts cannot be checked


@dataclass
class CaptureFile:
    """A capture file read: its kind, its connections, what could not be read."""

    kind: str | None              # "kncap", "pcap", "pcapng"; None: not a capture
    connections: list[CapturedConnection] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class FileRead:
    """One file, or one byte range of one, read by its kind: a .kncap's frame
    rows (``columns``, {FRAME_FIELDS name: values}) or a pcap's packets
    (``capture``), and the problems met, in the reader's words."""

    kind: str | None
    problems: list[str] = field(default_factory=list)
    columns: dict[str, list] | None = None
    capture: CaptureRead | None = None


def sniff(data) -> str | None:
    """``"kncap"``, ``"pcap"``, ``"pcapng"`` or None, by the first
    :data:`SNIFF_BYTES` bytes (more may be given)."""
    head = bytes(data[:SNIFF_BYTES])
    if head.startswith(kncap.MAGIC):
        return KNCAP
    return sniff_format(head)


def not_a_capture(head, size: int) -> str | None:
    """Why a file of ``size`` bytes starting with ``head`` is refused unread
    (:data:`EMPTY_FILE`, :data:`NOT_A_CAPTURE`), or None: it is a capture."""
    if size == 0:
        return EMPTY_FILE
    return None if sniff(head) else NOT_A_CAPTURE


def is_kncap_range(resume: dict | None) -> bool:
    """Whether a range's resume JSON is a .kncap segment's (format.RangeStart)."""
    return bool(resume) and resume.get("kind") == KNCAP


def kind_of(data, resume: dict | None = None, split: bool = False) -> str | None:
    """The kind :func:`read_file` reads ``data`` as: a range of a split file by
    its resume state (a pcap range's own bytes need not begin with a header),
    anything else by its first bytes."""
    if split:
        return KNCAP if is_kncap_range(resume) else PCAP
    return sniff(data)


def read_file(data, path: str = "", resume: dict | None = None, base: int = 0,
              split: bool = False) -> FileRead:
    """``data``: a whole file, or (``split``) one byte range of one
    (:mod:`kafka_net.capture.capture_split`) starting at file offset ``base``
    where a reader stood in ``resume``'s state (a .kncap's ``RangeStart`` as
    JSON; a pcap's ``Resume``, None at the file's start).  Never raises."""
    kind = kind_of(data, resume, split)
    if not split:
        resume, base = None, 0
    if kind == KNCAP:
        columns, problems = kncap_columns(path, data, resume, base)
        return FileRead(KNCAP, problems, columns=columns)
    if kind is None:
        return FileRead(None, [not_a_capture(data, len(data))])
    read = read_capture(data, resume and Resume.from_json(resume), base)
    return FileRead(read.format or kind, list(read.problems), capture=read)


def read_capture_file(data: bytes, path: str = "",
                      broker_ports: set[int] | None = None) -> CaptureFile:
    """Every connection of one file; problems are reported, never raised."""
    read = read_file(data, path)
    if read.columns is not None:
        return CaptureFile(KNCAP, _kncap_connections(path, read.columns), read.problems)
    if read.capture is None:
        return CaptureFile(None, problems=read.problems)
    connections, more = packet_connections(read.capture.packets, broker_ports, path)
    return CaptureFile(read.kind, connections, read.problems + more)


def kncap_run(path: str) -> str:
    """The run id a segment's file name gives; the path itself for other names."""
    m = RUN_NAME.search(os.path.basename(path))
    return m.group(1) if m else path


def kncap_columns(path: str, data, resume: dict | None = None,
                  base: int = 0) -> tuple[dict[str, list], list[str]]:
    """A kafka-net capture's frame rows as columns ({FRAME_FIELDS name: values}),
    and its problems: of the whole file, or of the range of it at offset
    ``base`` that ``resume`` (a ``RangeStart`` as JSON) describes, which are
    the whole file's rows for those bytes.  Column by column: the Spark job's
    Arrow stage makes its batch straight from these lists, with no dict per frame."""
    if resume:
        result = kncap.decode_range(data, base, kncap.RangeStart.from_json(resume))
    else:
        result = kncap.decode_segment(data)
    run = kncap_run(path)
    seq = result.segment.segment_seq if result.segment else 0
    pid = result.segment.processor_id if result.segment else 0
    recs = result.records
    n = len(recs)
    is_request = [rec.direction == kncap.REQUEST for rec in recs]
    columns = {
        "source": ["kafka-net"] * n, "file": [path] * n,
        "connection": [f"{run}/{rec.connection_id}" for rec in recs],
        # Sorts a connection's records in write order across rotated segments,
        # and across the byte ranges of one segment: the record's byte offset,
        # which every range knows (a range cannot know how many records came
        # before it: the planner reads lengths only).
        "order_key": [(pid, seq, offset) for offset in result.offsets],
        "direction": [rec.direction for rec in recs],
        "timestamp_ns": [rec.timestamp_ns for rec in recs],
        "frame_size": [rec.frame_size for rec in recs],
        "truncated": [rec.truncated for rec in recs], "after_gap": [False] * n,
        "api_key": [rec.api_key if req else None for rec, req in zip(recs, is_request)],
        "api_version": [rec.api_version if req else None
                        for rec, req in zip(recs, is_request)],
        "correlation_id": [rec.correlation_id for rec in recs],
        "client_id": [rec.client_id for rec in recs],
        "frame": [rec.frame for rec in recs],
        # A FAULT record (an injected fault) is a marker of its connection.
        "marker": [FAULT if rec.direction == kncap.FAULT else None for rec in recs],
        "gap_start": [None] * n, "gap_end": [None] * n,
        "frame_number": [0] * n, "file_offset": list(result.offsets),
    }
    return columns, list(result.problems)


def _kncap_connections(path: str, columns: dict[str, list]) -> list[CapturedConnection]:
    """The frame rows of one segment, by connection (Kafka's connection id,
    without the run the rows' connection names begin with), in file order."""
    cut = len(kncap_run(path)) + 1
    by_conn: dict[str, list[Frame]] = {}
    for conn, direction, ts, frame, size, truncated, offset, marker in zip(
            columns["connection"], columns["direction"], columns["timestamp_ns"],
            columns["frame"], columns["frame_size"], columns["truncated"],
            columns["file_offset"], columns["marker"]):
        frames = by_conn.setdefault(conn[cut:], [])
        frames.append(Frame(len(frames), direction, ts, frame, size, truncated,
                            file=path, file_offset=offset, marker=marker))
    return [CapturedConnection(cid, frames) for cid, frames in by_conn.items()]


def packet_connections(packets: list[Packet], broker_ports: set[int] | None = None,
                       path: str = "") -> tuple[list[CapturedConnection], list[str]]:
    """TCP packets (one file's, or one flow's from any number of files: a packet
    whose ``file`` is set keeps it) -> the connections holding Kafka frames, in
    the frame model, and a problem for each connection with bytes but no frame
    (not Kafka, or nothing captured: never silently lost; a handshake alone is
    neither).  The conformance job's flow stage and this reader share it."""
    from kafka_net.capture.tcp import reassemble
    out, problems = [], []
    # reassemble sorts by time (stably, as here); every frame names its file
    for conn in reassemble(packets, broker_ports, path):
        if not any(f.marker is None for f in conn.frames):
            if conn.bytes or conn.gaps:
                problems.append(f"connection {conn.id}: "
                                + ("; ".join(conn.notes) or "no Kafka frames"))
            continue
        out.append(CapturedConnection(conn.id, conn.frames, list(conn.notes)))
    return out, problems


__all__ = ["CaptureFile", "CapturedConnection", "EMPTY_FILE", "FRAME_FIELDS", "FileRead",
           "KNCAP", "NOT_A_CAPTURE", "PCAP", "PCAPNG", "RUN_NAME", "SNIFF_BYTES",
           "is_kncap_range", "kind_of", "kncap_columns", "kncap_run", "not_a_capture",
           "packet_connections", "read_capture_file", "read_file", "sniff"]
