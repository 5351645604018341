"""Findings a fault caused, and what the client did about it, sans-IO.

A broker with faults on demand (:mod:`kafka_net.server.faults`) writes a FAULT
record into its capture before the answer the fault changed; the readers turn
it into a ``"fault"`` marker of the connection (:data:`.model.FAULT`), whose
frame is the fault's JSON.  :func:`attribute_injected` takes one connection's
items and its findings (rows of :func:`.findings.locate_violations`) and:

* relabels the findings a fault explains: party ``injected`` (not the broker),
  severity ``note``, the detail naming the rule.  A fault explains the
  findings at the request it acted on (same correlation id: a dropped answer
  is ``unanswered_request``, a closed connection ``unanswered_before_close``);
  a broker-unavailable fault, which acted on no request, explains the
  unanswered requests of the connection it closed;
* adds one ``injected_fault`` row per fault, party ``injected``, severity
  ``note``, next to the request it acted on, saying what was injected and the
  client's reaction on this connection (:func:`reaction`).

The report's verdict counts the subject's findings only, so an injected
error is listed, never failed.
"""

from __future__ import annotations

import json

from kafka_net.capture.findings import iso_utc
from kafka_net.capture.model import CLOSE, FAULT, REQUEST, Frame
from kafka_net.protocol.api_keys import ApiKey, api_name
from kafka_net.protocol.headers import peek_request_header

INJECTED = "injected"
NOTE = "note"
CHECK = "injected_fault"
_EXPLAINED = ("unanswered_request", "unanswered_before_close")

# Reactions, as the report says them.
RETRIED = "retried"
REFRESHED_METADATA = "refreshed metadata, then retried"
LOOKED_UP_COORDINATOR = "looked up the coordinator, then retried"
REFRESHED_ONLY = "refreshed metadata, no retry on this connection"
CLOSED = "closed the connection (gave up here, or went on elsewhere)"
CUT = "the fault closed the connection"
GAVE_UP = "gave up (no retry on this connection)"


def fault_notes(frames: list[Frame]) -> list[tuple[Frame, dict]]:
    """Each FAULT marker of the connection with its JSON (a bad one: {})."""
    out = []
    for f in frames:
        if f.marker == FAULT:
            try:
                note = json.loads(f.frame)
            except ValueError:
                note = {}
            out.append((f, note if isinstance(note, dict) else {}))
    return out


def attribute_injected(frames: list[Frame], findings: list[dict],
                       connection: str = "") -> list[dict]:
    """``findings`` with those a fault caused relabelled, and a row per fault."""
    notes = fault_notes(frames)
    if not notes:
        return findings
    requests = _requests(frames)
    out = [_relabelled(row, notes, requests) for row in findings]
    for marker, note in notes:
        out.append(_fault_row(marker, note, frames, requests, connection))
    return out


def _requests(frames: list[Frame]) -> list[tuple[int, int, int]]:
    """(position, api key, correlation id) of each request frame."""
    out = []
    for f in frames:
        if f.marker is None and f.direction == REQUEST and len(f.frame) >= 8:
            key, _, corr = peek_request_header(f.frame)
            out.append((f.position, key, corr))
    return out


def _relabelled(row: dict, notes, requests) -> dict:
    if row.get("check") not in _EXPLAINED:
        return row
    for marker, note in notes:
        corr = marker_correlation_id(marker)
        ours = corr >= 0 and corr == row.get("correlation_id")
        cut_here = corr < 0 and row.get("position", -1) < marker.position
        if ours or cut_here:
            return {**row, "party": INJECTED, "severity": NOTE,
                    "detail": f"{row.get('detail', '')} (caused by injected fault "
                              f"{note.get('rule', '?')}: {note.get('action', '?')})"}
    return row


def _note_int(marker: Frame, key: str) -> int:
    try:
        value = json.loads(marker.frame).get(key, -1)
    except (ValueError, AttributeError):
        return -1
    return value if isinstance(value, int) else -1


def marker_correlation_id(marker: Frame) -> int:
    """The correlation id of the request a FAULT marker acted on (-1: none, as
    the broker going away).  The broker writes it into the note too, since a
    marker keeps no header fields."""
    return _note_int(marker, "correlation_id")


def marker_api_key(marker: Frame) -> int:
    return _note_int(marker, "api_key")


def reaction(frames: list[Frame], marker: Frame, note: dict) -> str:
    """What the client did on this connection after the fault."""
    if note.get("action") in ("close", "unavailable") and \
            (note.get("action") == "unavailable" or note.get("close") != "after"):
        return CUT
    api = marker_api_key(marker)
    lookups = set()
    for f in frames[marker.position + 1:]:
        if f.marker == CLOSE:
            return CLOSED if not lookups else REFRESHED_ONLY
        if f.marker is not None or f.direction != REQUEST or len(f.frame) < 8:
            continue
        key = peek_request_header(f.frame)[0]
        if key == api and (f.position > _answer_position(frames, marker)):
            if ApiKey.FIND_COORDINATOR in lookups:
                return LOOKED_UP_COORDINATOR
            return REFRESHED_METADATA if ApiKey.METADATA in lookups else RETRIED
        if key in (ApiKey.METADATA, ApiKey.FIND_COORDINATOR):
            lookups.add(key)
    return REFRESHED_ONLY if ApiKey.METADATA in lookups else GAVE_UP


def _answer_position(frames: list[Frame], marker: Frame) -> int:
    # The marker comes before the answer it changed; a request before that
    # answer (pipelined) is not a reaction to it.
    for f in frames[marker.position + 1:]:
        if f.marker is None and f.direction != REQUEST:
            return f.position
    return marker.position


def _fault_row(marker: Frame, note: dict, frames, requests, connection: str) -> dict:
    corr = marker_correlation_id(marker)
    api = marker_api_key(marker)
    request = next((r for r in reversed(requests)
                    if r[2] == corr and r[0] < marker.position), None) if corr >= 0 else None
    how = reaction(frames, marker, note)
    what = note.get("error") or note.get("action", "fault")
    where = ""
    if note.get("topic"):
        where = f" on {note['topic']} partitions {note.get('partitions') or 'all'}"
    detail = f"{what} injected by rule {note.get('rule', '?')}{where}; " + \
        (how if how == CUT else f"the client {how}")
    return {
        "connection": connection, "check": CHECK, "position": marker.position,
        "party": INJECTED, "severity": NOTE, "client_software": "",
        "known_deviation": "", "direction": "response", "file": marker.file,
        "frame_number": marker.frame_number, "file_offset": marker.file_offset,
        "timestamp_ns": marker.timestamp_ns, "timestamp": iso_utc(marker.timestamp_ns),
        "api_key": api, "api_name": api_name(api) if api >= 0 else "",
        "api_version": _note_int(marker, "api_version"), "client_id": "",
        "correlation_id": corr,
        "correlation_ids": [corr] if corr >= 0 else [],
        "request_position": request[0] if request else -1, "request_frame_number": 0,
        "detail": detail, "frame_size": marker.frame_size, "hex_head": "",
        "fault_offset": -1, "hex_fault": "",
    }


__all__ = ["CHECK", "INJECTED", "attribute_injected", "fault_notes", "reaction"]
