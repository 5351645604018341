"""Row-level functions of the conformance job; plain Python, no Spark.

The Spark job (:mod:`kafka_net.spark_jobs.conformance`) only wires these together, so
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

import functools
from dataclasses import replace

from kafka_net.capture.findings import (
    client_software, locate_violations, matrix_cells, versions_served)
from kafka_net.capture import reader
from kafka_net.capture.injected import INJECTED, attribute_injected
from kafka_net.capture.pairing import REQUEST, Frame, pair_connection
from kafka_net.protocol.api_keys import api_name as _api_name
from kafka_net.protocol.headers import peek_frame_header

# Once per API key, not per pair and request (an enum lookup and a join each time).
api_name = functools.lru_cache(maxsize=None)(_api_name)


def local_path(path: str) -> str:
    """Spark's file readers name local files as URIs; report them as the user gave them."""
    return path[len("file:"):] if path.startswith("file:") else path


def file_units(path: str, data: bytes, resume: dict | None = None,
               base: int = 0, split: bool = False) -> list[tuple]:
    """("frame", row) / ("packet", flow_key, (path, packet)) / ("problem", row) tuples.

    ``data``: a whole file, or a range of one (:mod:`kafka_net.capture.capture_split`)
    starting at file offset ``base`` where a reader stood in ``resume``'s state
    (a pcap/pcapng ``Resume``, None at the file's start; a .kncap's
    ``RangeStart``, its "kind" "kncap"); ``split``: one of several ranges, which
    then adds a ("range", counts) unit (the job adds them up per file).  The
    capture reader (:func:`kafka_net.capture.reader.read_file`) tells the kind
    and reads it; here its result becomes units."""
    path = local_path(path)
    read = reader.read_file(data, path, resume, base, split)
    units: list[tuple] = [("problem", {"file": path, "problem": p}) for p in read.problems]
    if read.columns is not None:
        return units + _kncap_units(path, read.columns, resume if split else None, base)
    if read.capture is not None:
        return units + _pcap_units(path, read.capture, base, split)
    return units


def _kncap_units(path: str, columns: dict[str, list], resume: dict | None,
                 base: int) -> list[tuple]:
    units: list[tuple] = []
    if resume:
        units.append(("range", kncap_range_counts(path, base, len(columns["frame"]))))
    names = list(columns)
    units += [("frame", dict(zip(names, values))) for values in zip(*columns.values())]
    return units


def kncap_range_counts(path: str, base: int, records: int) -> dict:
    """A .kncap range's counts row: the records it read (no packets: not a pcap)."""
    return {"file": path, "range_start": base, "range_records": records,
            "range_packets": None, "range_non_tcp": None}


def _pcap_units(path: str, read, base: int, split: bool) -> list[tuple]:
    """A pcap read's units after its problems: the range counts, and its packets."""
    units: list[tuple] = []
    if split:
        units.append(("range", {"file": path, "range_start": base, "range_records": read.records,
                                "range_packets": len(read.packets),
                                "range_non_tcp": read.non_tcp}))
    elif not read.packets and not read.problems:
        units.append(("problem", {"file": path, "problem": "no TCP packets"}))
    for packet in read.packets:
        a = (str(packet.src_ip), packet.src_port)
        b = (str(packet.dst_ip), packet.dst_port)
        units.append(("packet", (min(a, b), max(a, b)), (path, packet)))
    return units


def frames_of_flow(packets: list, broker_ports: set[int] | None = None) -> list[tuple]:
    """Reassemble one flow's (path, packet) pairs, from any number of files, into
    ("frame", row) units, or a ("problem", row) for a connection that yields no
    Kafka frame (:func:`kafka_net.capture.reader.packet_connections`, as
    ``kafka-net decode`` reads a file)."""
    paths = sorted({path for path, _ in packets})
    files = ", ".join(paths)
    if len(paths) == 1:
        flow = [p for _, p in packets]
    else:   # packets keep their file, for the report's frame numbers
        flow = [replace(p, file=path) for path, p in packets]
    connections, problems = reader.packet_connections(flow, broker_ports,
                                                      paths[0] if paths else "")
    units: list[tuple] = [("problem", {"file": files, "problem": p}) for p in problems]
    for conn in connections:
        for frame in conn.frames:
            units.append(("frame", _pcap_frame_row(conn.id, frame, paths[0])))
    return units


def _pcap_frame_row(connection: str, frame: Frame, path: str) -> dict:
    api_key = api_version = corr = client_id = None
    if frame.marker is None:
        api_key, api_version, corr, client_id = peek_frame_header(
            frame.frame, frame.direction == REQUEST)
    gap = frame.gap or (None, None)
    return {"source": "pcap", "file": frame.file or path, "connection": connection,
            "order_key": (0, 0, frame.position), "direction": frame.direction,
            "timestamp_ns": frame.timestamp_ns, "frame_size": frame.frame_size,
            "truncated": frame.truncated, "after_gap": frame.after_gap,
            "api_key": api_key, "api_version": api_version, "correlation_id": corr,
            "client_id": client_id, "frame": frame.frame, "marker": frame.marker,
            "gap_start": gap[0], "gap_end": gap[1], "frame_number": frame.frame_number,
            "file_offset": -1}


def check_connection(connection: str, rows: list[dict]) -> dict:
    """Pair one connection's frames; return {"pairs", "violations", "requests",
    "states" (each frame's coverage state, by position), "connection"}.  Marker
    rows (gaps, the client's FIN) take part in pairing but are not frames."""
    rows = sorted(rows, key=lambda r: tuple(r["order_key"]))
    frames = [_frame(i, r) for i, r in enumerate(rows)]
    report = pair_connection(frames)
    source = rows[0]["source"] if rows else ""
    pairs = [{
        "connection": connection, "correlation_id": p.correlation_id, "api_key": p.api_key,
        "api_name": api_name(p.api_key), "api_version": p.api_version,
        "client_id": p.client_id or "", "request_position": p.request_position,
        "request_ns": p.request_ns, "response_ns": p.response_ns, "latency_ns": p.latency_ns,
        "error_codes": list(p.error_codes),
    } for p in report.pairs]
    violations = locate_violations(frames, report, connection)
    requests = [{
        "connection": connection, "api_key": r.api_key, "api_name": api_name(r.api_key),
        "api_version": r.api_version, "client_id": r.client_id or "",
        "timestamp_ns": r.timestamp_ns, "acks0": r.acks0, "responses": r.responses,
    } for r in report.requests]
    frame_states = [{
        "connection": connection, "position": st.position, "state": st.state,
        "reason": st.reason, "gap_start": st.gap[0] if st.gap else None,
        "gap_end": st.gap[1] if st.gap else None,
    } for _, st in sorted(report.states.items())]
    states = report.state_counts()
    summary = {
        "connection": connection, "source": source,
        "frames": sum(1 for f in frames if f.marker is None),
        "requests": len(report.requests), "responses": report.responses,
        "pairs": len(report.pairs), "violations": len(report.violations),
        "in_flight_at_end": report.in_flight_at_end, "acks0_requests": report.acks0_requests,
        "unverifiable_from": report.unverifiable_from,
        "unverifiable_requests": report.unverifiable_requests,
        **{f"frames_{state}": n for state, n in states.items()},
        "header_only_reasons": report.header_only_reasons(),
        "gaps": [list(g) for g in report.gaps],
        "cells": matrix_cells(report, violations, client_software(frames)),
        "versions_served": versions_served(frames, report),
    }
    # Findings an injected fault caused are the fault's, not the broker's; each
    # fault is listed with the client's reaction (kafka_net.capture.injected).
    violations = attribute_injected(frames, violations, connection)
    # The connection's count is of its subject's findings, as the report's verdict
    # is: what a fault caused (and the fault's own row) is the fault's.
    summary["violations"] = sum(1 for v in violations if v.get("party") != INJECTED)
    return {"pairs": pairs, "violations": violations, "requests": requests,
            "states": frame_states, "connection": summary}


def _frame(position: int, row: dict) -> Frame:
    gap = (row["gap_start"], row["gap_end"]) if row.get("gap_start") is not None else None
    return Frame(position, row["direction"], row["timestamp_ns"], bytes(row["frame"]),
                 row["frame_size"], row["truncated"], row["after_gap"], gap, row.get("marker"),
                 row.get("file") or "", row.get("frame_number") or 0,
                 -1 if row.get("file_offset") is None else row["file_offset"])
