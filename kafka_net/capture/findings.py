"""What an engineer needs to act on a connection's check results, sans-IO: each
violation with where to find it (capture file, Wireshark frame number or .kncap
offset, timestamp, API, version, correlation ids, the bytes), and per API x
version x client cell the counts and coverage (the report's matrix).

Used by the Spark job's rows (:func:`kafka_net.spark_jobs.transforms.check_connection`)
and by ``kafka-net decode``; plain Python on a :class:`ConnectionReport` and the
frames it was made from.
"""

from __future__ import annotations

import datetime as _dt
import re

from kafka_net.capture.attribution import attribute, known_deviation
from kafka_net.capture.model import REQUEST, ConnectionReport, Frame
from kafka_net.capture.pairing_checks import (
    CHECKED, HEADER_ONLY, UNVERIFIABLE, BodyProblem, check_request_body, check_response_body,
    read_request)
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.api_keys import ApiKey, api_name
from kafka_net.protocol.headers import peek_request_header

HEX_HEAD = 64          # bytes of a frame shown from its start
HEX_AROUND = 16        # bytes shown either side of a fault's offset
_IDS_IN_DETAIL = re.compile(r"correlation id (-?\d+)")
UNKNOWN_CELL = (-1, -1, "")   # violations no request can be tied to


def iso_utc(timestamp_ns: int) -> str:
    """``2026-11-24T08:07:37.123456789Z``: UTC, to the nanosecond."""
    secs, ns = divmod(timestamp_ns, 1_000_000_000)
    day = _dt.datetime.fromtimestamp(secs, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{day}.{ns:09d}Z"


def pdu(frame: Frame) -> bytes:
    """The frame as Wireshark's Kafka PDU shows it: size prefix, then the bytes."""
    return frame.frame_size.to_bytes(4, "big", signed=True) + frame.frame


def hex_excerpt(data: bytes, start: int = 0, length: int = HEX_HEAD) -> str:
    """``0010: 00 01 ...`` lines of 16 bytes, offsets relative to the PDU start."""
    start = max(0, start)
    chunk = data[start:start + length]
    lines = []
    for i in range(0, len(chunk), 16):
        row = chunk[i:i + 16]
        lines.append(f"{start + i:04x}: {row.hex(' ')}")
    return "\n".join(lines)


class RequestIndex:
    """The connection's requests by correlation id, to tie a response to its API."""

    def __init__(self, report: ConnectionReport) -> None:
        self.by_id: dict[int, list] = {}
        self.by_position = {r.position: r for r in report.requests}
        for r in report.requests:
            self.by_id.setdefault(r.correlation_id, []).append(r)

    def for_response(self, corr: int, position: int):
        """The latest request with this id before ``position``, else the first after."""
        candidates = self.by_id.get(corr, ())
        before = [r for r in candidates if r.position < position]
        if before:
            return before[-1]
        return candidates[0] if candidates else None


def cell_of(req) -> tuple[int, int, str]:
    return (req.api_key, req.api_version, req.client_id or "") if req else UNKNOWN_CELL


def locate_violations(frames: list[Frame], report: ConnectionReport, connection: str
                      ) -> list[dict]:
    """One dict per violation with everything needed to find it (see the module doc),
    whose it is (``party``, ``severity``: :mod:`.attribution`), the connection's
    ``client_software`` and the ``known_deviation`` that explains it, if one does."""
    requests = RequestIndex(report)
    software = client_software(frames) if report.violations else ""
    out = []
    for v in report.violations:
        frame = frames[v.position]
        if frame.direction == REQUEST:
            req = requests.by_position.get(v.position)
            if req is None and len(frame.frame) >= 8:
                key, version, _ = peek_request_header(frame.frame)
                req_fields = (key, version, "")
            else:
                req_fields = cell_of(req) if req else UNKNOWN_CELL
            req_frame = frame
        else:
            req = requests.for_response(v.correlation_id, v.position)
            req_fields = cell_of(req)
            req_frame = frames[req.position] if req else None
        ids = [v.correlation_id] + [int(i) for i in _IDS_IN_DETAIL.findall(v.detail)]
        data = pdu(frame)
        direction = "request" if frame.direction == REQUEST else "response"
        party, severity = attribute(v.check, direction)
        row = {
            "connection": connection, "check": v.check, "position": v.position,
            "party": party, "severity": severity, "client_software": software,
            "known_deviation": "", "direction": direction,
            "file": frame.file, "frame_number": frame.frame_number,
            "file_offset": frame.file_offset,
            "timestamp_ns": v.timestamp_ns, "timestamp": iso_utc(v.timestamp_ns),
            "api_key": req_fields[0], "api_name": api_name(req_fields[0])
            if req_fields[0] >= 0 else "", "api_version": req_fields[1],
            "client_id": req_fields[2], "correlation_id": v.correlation_id,
            "correlation_ids": sorted(set(i for i in ids if i >= 0)) or [v.correlation_id],
            "request_position": req_frame.position if req_frame else -1,
            "request_frame_number": req_frame.frame_number if req_frame else 0,
            "detail": v.detail, "frame_size": frame.frame_size,
            "hex_head": hex_excerpt(data),
            "fault_offset": v.offset + 4 if v.offset >= 0 else -1,
            "hex_fault": hex_excerpt(data, v.offset + 4 - HEX_AROUND, 2 * HEX_AROUND)
            if v.offset >= 0 else "",
        }
        fault = frame.frame[v.offset:] if v.offset >= 0 and not frame.truncated else None
        known = known_deviation(row, fault)
        row["known_deviation"] = known.id if known else ""
        out.append(row)
    return out


def matrix_cells(report: ConnectionReport, located: list[dict],
                 software: str = "") -> list[dict]:
    """Counts per (API, version, client id): requests, responses, pairs, violations,
    error codes, and the coverage states of the frames of that cell (requests and
    the responses paired with them)."""
    cells: dict[tuple, dict] = {}

    def cell(key: tuple) -> dict:
        if key not in cells:
            cells[key] = {"api_key": key[0], "api_version": key[1], "client_id": key[2],
                          "client_software": software, "requests": 0, "responses": 0,
                          "pairs": 0, "violations": 0, CHECKED: 0, HEADER_ONLY: 0,
                          UNVERIFIABLE: 0, "error_codes": {}}
        return cells[key]

    position_cell: dict[int, tuple] = {}
    for r in report.requests:
        c = cell(cell_of(r))
        c["requests"] += 1
        c["responses"] += r.responses
        position_cell[r.position] = cell_of(r)
    for p in report.pairs:
        key = (p.api_key, p.api_version, p.client_id or "")
        c = cell(key)
        c["pairs"] += 1
        position_cell[p.response_position] = key
        for code in p.error_codes:
            c["error_codes"][str(code)] = c["error_codes"].get(str(code), 0) + 1
    for pos, st in report.states.items():
        key = position_cell.get(pos)
        if key is not None and st.state in (CHECKED, HEADER_ONLY, UNVERIFIABLE):
            cell(key)[st.state] += 1
    for v in located:
        cell((v["api_key"], v["api_version"], v["client_id"]))["violations"] += 1
    return [cells[k] for k in sorted(cells)]


def client_software(frames: list[Frame]) -> str:
    """``name version`` from the connection's ApiVersions v3+ request (KIP-511), or ""."""
    for f in frames:
        if f.marker is None and f.direction == REQUEST:
            software = software_of(f.frame, f.truncated)
            if software is not None:
                return software
    return ""


def software_of(payload: bytes, truncated: bool = False) -> str | None:
    """``name version`` of one request frame if it is an ApiVersions v3+ request
    whose body decodes (perhaps ""), else None."""
    if len(payload) < 8:
        return None
    key, version, corr = peek_request_header(payload)
    if key != ApiKey.API_VERSIONS or version < 3:
        return None
    try:
        _, offset, why = read_request(payload, key, version, corr, truncated)
        body = check_request_body(payload, offset, key, version)[0] if why is None else None
    except (BodyProblem, InvalidRequestError):   # a violation pairing reports
        body = None
    if body:
        return f"{body['client_software_name']} {body['client_software_version']}".strip()
    return None


def versions_served(frames: list[Frame], report: ConnectionReport) -> dict[str, list[int]]:
    """{api key: [min, max]} from the broker's first ApiVersions answer without error."""
    for p in report.pairs:
        if p.api_key == ApiKey.API_VERSIONS:
            served = served_by(frames[p.response_position].frame, p.api_version)
            if served is not None:
                return served
    return {}


def served_by(payload: bytes, api_version: int) -> dict[str, list[int]] | None:
    """{api key: [min, max]} of one ApiVersions response without error, else None."""
    try:
        body = check_response_body(payload, ApiKey.API_VERSIONS, api_version)[0]
    except (BodyProblem, InvalidRequestError):   # a violation pairing reports
        return None
    if body and body.get("error_code") == 0:
        return {str(k["api_key"]): [k["min_version"], k["max_version"]]
                for k in body["api_keys"]}
    return None


__all__ = ["RequestIndex", "client_software", "hex_excerpt", "iso_utc", "locate_violations",
           "matrix_cells", "pdu", "served_by", "software_of", "versions_served"]
