"""Row-level functions of the conformance job; plain Python, no Spark.

The Spark job (:mod:`spark_jobs.conformance`) only wires these together, so
each one is tested directly, and an executor runs the same code as a test.

Stages and the rows they make:

1. ``file_units(path, data)``: one input file -> a list of *units*: either
   frames of kafka-net captures (grouped later by connection) or TCP packets
   of pcap/pcapng files (grouped later by flow, across files), plus problems
   for whatever could not be read.
2. ``frames_of_flow(packets)``: all packets of one TCP flow (from every file)
   -> frame rows, via TCP reassembly.
3. ``check_connection(connection, frame_rows)``: one connection's frames ->
   pair rows, violation rows and one connection row (pairing state machine).
"""

from __future__ import annotations

import os
import re

from kafka_net.capture.format import decode_segment
from kafka_net.capture.pairing import REQUEST, Frame, pair_connection
from kafka_net.protocol.api_keys import api_name
from kafka_net.protocol.headers import peek_request_header

_RUN = re.compile(r"kafka-net-(\d+)-p(\d+)-(\d+)\.kncap$")

FRAME_FIELDS = ("source", "file", "connection", "order_key", "direction", "timestamp_ns",
                "frame_size", "truncated", "after_gap", "api_key", "api_version",
                "correlation_id", "client_id", "frame")


def sniff(data: bytes) -> str | None:
    if data[:5] == b"KNCAP":
        return "kncap"
    try:
        from kafka_net.capture.pcap import sniff_format
    except ImportError:  # pragma: no cover - pcap support ships with the package
        return None
    return sniff_format(data)


def file_units(path: str, data: bytes) -> list[tuple]:
    """("frame", row) / ("packet", flow_key, (path, packet)) / ("problem", row) tuples."""
    if path.startswith("file:"):
        # binaryFiles names local files as URIs; report them as the user gave them.
        path = path[len("file:"):]
    kind = sniff(data)
    if kind == "kncap":
        return _kncap_units(path, data)
    if kind in ("pcap", "pcapng"):
        return _pcap_units(path, data)
    what = "an empty file" if not data else "neither a kafka-net capture nor a pcap/pcapng file"
    return [("problem", {"file": path, "problem": what})]


def _kncap_units(path: str, data: bytes) -> list[tuple]:
    result = decode_segment(data)
    units: list[tuple] = [("problem", {"file": path, "problem": p}) for p in result.problems]
    m = _RUN.search(os.path.basename(path))
    run = m.group(1) if m else path
    seq = result.segment.segment_seq if result.segment else 0
    pid = result.segment.processor_id if result.segment else 0
    for index, rec in enumerate(result.records):
        units.append(("frame", {
            "source": "kafka-net", "file": path,
            "connection": f"{run}/{rec.connection_id}",
            # Sorts a connection's records in write order across rotated segments.
            "order_key": (pid, seq, index),
            "direction": rec.direction, "timestamp_ns": rec.timestamp_ns,
            "frame_size": rec.frame_size, "truncated": rec.truncated, "after_gap": False,
            "api_key": rec.api_key if rec.direction == REQUEST else None,
            "api_version": rec.api_version if rec.direction == REQUEST else None,
            "correlation_id": rec.correlation_id, "client_id": rec.client_id,
            "frame": rec.frame,
        }))
    return units


def _pcap_units(path: str, data: bytes) -> list[tuple]:
    from kafka_net.capture.pcap import read_packets
    packets, problems = read_packets(data)
    units: list[tuple] = [("problem", {"file": path, "problem": p}) for p in problems]
    if not packets and not problems:
        units.append(("problem", {"file": path, "problem": "no TCP packets"}))
    for packet in packets:
        a = (str(packet.src_ip), packet.src_port)
        b = (str(packet.dst_ip), packet.dst_port)
        units.append(("packet", (min(a, b), max(a, b)), (path, packet)))
    return units


def frames_of_flow(packets: list, broker_ports: set[int] | None = None) -> list[tuple]:
    """Reassemble one flow's (path, packet) pairs, from any number of files, into
    ("frame", row) units, or a ("problem", row) for a connection that yields no
    Kafka frame (not Kafka, or nothing captured), so it is not silently lost."""
    from kafka_net.capture.tcp import reassemble
    files = ", ".join(sorted({path for path, _ in packets}))
    ordered = sorted((p for _, p in packets), key=lambda p: p.timestamp_ns)
    units: list[tuple] = []
    for conn in reassemble(ordered, broker_ports):
        if not conn.frames:
            why = "; ".join(conn.notes) or "no Kafka frames"
            units.append(("problem", {"file": files, "problem": f"connection {conn.id}: {why}"}))
        for frame in conn.frames:
            units.append(("frame", _pcap_frame_row(conn.id, frame)))
    return units


def _pcap_frame_row(connection: str, frame: Frame) -> dict:
    api_key = api_version = corr = None
    if frame.direction == REQUEST and len(frame.frame) >= 8:
        api_key, api_version, corr = peek_request_header(frame.frame)
    elif len(frame.frame) >= 4:
        corr = int.from_bytes(frame.frame[:4], "big", signed=True)
    return {"source": "pcap", "file": "", "connection": connection,
            "order_key": (0, 0, frame.position), "direction": frame.direction,
            "timestamp_ns": frame.timestamp_ns, "frame_size": frame.frame_size,
            "truncated": frame.truncated, "after_gap": frame.after_gap,
            "api_key": api_key, "api_version": api_version, "correlation_id": corr,
            "client_id": None, "frame": frame.frame}


def check_connection(connection: str, rows: list[dict]) -> dict:
    """Pair one connection's frames; return {"pairs", "violations", "connection"}."""
    rows = sorted(rows, key=lambda r: tuple(r["order_key"]))
    frames = [Frame(i, r["direction"], r["timestamp_ns"], bytes(r["frame"]), r["frame_size"],
                    r["truncated"], r["after_gap"]) for i, r in enumerate(rows)]
    report = pair_connection(frames)
    source = rows[0]["source"] if rows else ""
    pairs = [{
        "connection": connection, "correlation_id": p.correlation_id, "api_key": p.api_key,
        "api_name": api_name(p.api_key), "api_version": p.api_version,
        "client_id": p.client_id or "", "request_position": p.request_position,
        "request_ns": p.request_ns, "response_ns": p.response_ns, "latency_ns": p.latency_ns,
        "error_codes": list(p.error_codes),
    } for p in report.pairs]
    violations = [{
        "connection": connection, "check": v.check, "position": v.position,
        "timestamp_ns": v.timestamp_ns, "correlation_id": v.correlation_id,
        "detail": v.detail,
    } for v in report.violations]
    requests = [{
        "connection": connection, "api_key": r.api_key, "api_name": api_name(r.api_key),
        "api_version": r.api_version, "client_id": r.client_id or "",
        "timestamp_ns": r.timestamp_ns, "acks0": r.acks0,
    } for r in report.requests]
    summary = {
        "connection": connection, "source": source, "frames": len(frames),
        "requests": len(report.requests), "responses": sum(1 for f in frames if f.direction),
        "pairs": len(report.pairs), "violations": len(report.violations),
        "in_flight_at_end": report.in_flight_at_end, "acks0_requests": report.acks0_requests,
        "unverifiable_from": report.unverifiable_from,
    }
    return {"pairs": pairs, "violations": violations, "requests": requests,
            "connection": summary}
