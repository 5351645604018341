"""One reader for any capture file, sans-IO: sniff the kind (kafka-net's
``.kncap``, pcap, pcapng) and return its connections as frame models
(:class:`~kafka_net.capture.model.Frame`), each frame knowing where it is in
the file (Wireshark's frame number, or the .kncap record's byte offset).

``kafka-net decode`` reads files through it; the conformance job sniffs with
the same :func:`sniff` and builds its rows from the same frame model (pcap
frames through :func:`kafka_net.capture.tcp.reassemble` as here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_net.capture.format import FAULT as FAULT_RECORD
from kafka_net.capture.format import decode_segment
from kafka_net.capture.model import FAULT, Frame
from kafka_net.capture.packet import Packet
from kafka_net.capture.pcap import read_packets, sniff_format


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


NOT_A_CAPTURE = "neither a kafka-net capture nor a pcap/pcapng file"
# sniff() decides by this many first bytes: a caller may read only these.
SNIFF_BYTES = 12


def sniff(data: bytes) -> str | None:
    """``"kncap"``, ``"pcap"``, ``"pcapng"`` or None, by the first bytes."""
    return sniff_format(data)


def read_capture_file(data: bytes, path: str = "",
                      broker_ports: set[int] | None = None) -> CaptureFile:
    """Every connection of one file; problems are reported, never raised."""
    kind = sniff(data)
    if kind == "kncap":
        return _kncap(data, path)
    if kind in ("pcap", "pcapng"):
        return _pcap(kind, data, path, broker_ports)
    what = "an empty file" if not data else NOT_A_CAPTURE
    return CaptureFile(None, problems=[what])


def _kncap(data: bytes, path: str) -> CaptureFile:
    result = decode_segment(data)
    out = CaptureFile("kncap", problems=list(result.problems))
    by_conn: dict[str, list[Frame]] = {}
    for rec, offset in zip(result.records, result.offsets):
        frames = by_conn.setdefault(rec.connection_id, [])
        frames.append(Frame(len(frames), rec.direction, rec.timestamp_ns, rec.frame,
                            rec.frame_size, rec.truncated, file=path, file_offset=offset,
                            marker=FAULT if rec.direction == FAULT_RECORD else None))
    out.connections = [CapturedConnection(cid, frames) for cid, frames in by_conn.items()]
    return out


def _pcap(kind: str, data: bytes, path: str, broker_ports: set[int] | None) -> CaptureFile:
    packets, problems = read_packets(data)
    out = CaptureFile(kind, problems=list(problems))
    connections, more = packet_connections(packets, broker_ports, path)
    out.connections, out.problems = connections, out.problems + more
    return out


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


__all__ = ["CaptureFile", "CapturedConnection", "packet_connections", "read_capture_file",
           "sniff"]
