"""One connection checked column by column when it is plain: the fast path beside
:func:`kafka_net.spark_jobs.transforms.check_connection`, the readable reference.

Most connections of a capture are plain: every frame whole, no gap, no injected
fault, and every response answers the oldest request still waiting for one
(Kafka's order).  For those, the pairing walk (:mod:`kafka_net.capture.pairing`)
pairs the k-th response with the k-th request that expects an answer (acks=0
Produces expect none), finds nothing wrong, and builds a Frame, a request, a
pair and a coverage state object per frame on the way.  Here the connection
is columns (direction, timestamps, frame bytes): each body is still checked by
the same walkers (:mod:`kafka_net.capture.pairing_checks`), but the pairing is
one vectorized comparison of correlation ids and positions, and the pairs,
requests and states come out as columns, never as per-frame objects.

Anything that is not plain returns None and the caller runs the reference
instead: a marker other than a client's FIN, a FIN at which the oldest request
waiting is never answered, a frame cut by the capture or after lost bytes, an
unknown API, a header or body that does not check, a response out of order or
without a request, a correlation id used twice, a request at a version the
connection's ApiVersions answer did not advertise.  Those are the only ways the
walk finds something, so every finding is still the walk's, word for word, and a
plain connection's report is the walk's too
(``tests/spark/test_check_columns.py`` compares the two on every connection of
the test captures).

``KAFKA_NET_READABLE=1`` in the environment turns this path off (the job then
checks every connection with the reference), so the test suite can run on the
readable path alone.
"""

from __future__ import annotations

import numpy as np

from kafka_net.capture.findings import served_by, software_of
from kafka_net.capture.model import CLOSE, REQUEST, RESPONSE
from kafka_net.capture.pairing_checks import (
    CHECKED, HEADER_ONLY, STATES, UNVERIFIABLE, BodyProblem, fetched_checks, produce_acks,
    produced_checks, read_request, request_walk, response_walk,
    walk_request_body, walk_response_body)
from kafka_net.capture.version_checks import _advertised
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol import readable
from kafka_net.protocol.headers import HEADER_PEEK, request_header_version
from kafka_net.protocol.messages import MESSAGES
from kafka_net.spark_jobs.transforms import api_name

ENABLED = not readable.READABLE   # KAFKA_NET_READABLE, read once (protocol/readable.py)
if ENABLED:
    # The per-frame loops compiled (a missing build is an ImportError); the Python
    # loops below stay their readable definition (tests/spark/test_check_columns.py
    # holds the two equal).
    from kafka_net.capture import _plain_checks
else:
    _plain_checks = None

_KNOWN_KEYS = frozenset(int(k) for k in ApiKey)
_PRODUCE, _API_VERSIONS = int(ApiKey.PRODUCE), int(ApiKey.API_VERSIONS)
_peek = HEADER_PEEK.unpack_from


class NotPlain(Exception):
    """This connection needs the reference walk (see the module docstring)."""


def check_in_order(connection: str, source: str, direction: np.ndarray,
                   timestamp_ns: np.ndarray, frames: "list | Payloads",
                   markers: list) -> dict | None:
    """A plain connection's checks, in the shape of ``transforms.check_connection``'s
    result but with "pairs", "requests" and "states" as columns ({name: values});
    None if the connection is not plain.  Its frames in order: ``direction`` and
    ``timestamp_ns`` as arrays, ``frames`` the payloads (bytes, or where they lie:
    :class:`Payloads`), ``markers`` None for a frame (whole, not after a gap: the
    caller checks)."""
    try:
        return _check(connection, source, direction, timestamp_ns, frames, markers)
    except NotPlain:
        return None


def _check(connection, source, direction, timestamp_ns, frames, markers) -> dict:
    # Most connections have no marker: list.count finds that at C speed, where a
    # test per frame took 0.11 s of the 920k-frame capture's 1.4 s of checks.
    is_marker = np.zeros(len(markers), bool) if markers.count(None) == len(markers) \
        else np.fromiter((m is not None for m in markers), bool, len(markers))
    req_pos = np.flatnonzero((direction == REQUEST) & ~is_marker)
    resp_pos = np.flatnonzero((direction == RESPONSE) & ~is_marker)
    req = _requests(frames, req_pos)
    expects = ~req["acks0"]
    exp_pos, exp_corr = req_pos[expects], req["correlation_id"][expects]
    resp_corr = _response_ids(frames, resp_pos)
    paired = len(resp_pos)
    # The in-order case: the k-th response answers the k-th request expecting one,
    # which came before it; no id waits twice (the walk would flag it).
    if paired > len(exp_pos) or not (exp_pos[:paired] < resp_pos).all() \
            or not np.array_equal(exp_corr[:paired], resp_corr) \
            or len(np.unique(exp_corr)) != len(exp_corr):
        raise NotPlain
    _markers_pass(markers, is_marker, exp_pos, resp_pos)
    answered = np.flatnonzero(expects)[:paired]       # request index of each pair
    codes, resp_states = _responses(frames, resp_pos, req, answered)
    _versions_advertised(frames, req_pos, resp_pos, req, answered, resp_states)
    responses = np.zeros(len(req_pos), np.int32)
    responses[answered] = 1
    return _result(connection, source, frames, markers, timestamp_ns, req_pos, resp_pos,
                   req, answered, responses, codes, resp_states, len(exp_pos) - paired)


def _requests(frames: "list | Payloads", positions: np.ndarray) -> dict:
    """Each request's header fields, whether it is an acks=0 Produce, and its state
    and reason, as ``pairing._Walk._decode`` finds them for a whole frame (the API
    keys and versions as int32 arrays)."""
    if _plain_checks is not None:
        keys, versions, corrs, clients, acks0, states = _plain_checks.requests(
            frames, positions, _REQUEST_ENTRIES, _request_entry, _request, NotPlain)
        return {"api_key": keys, "api_version": versions, "client_id": clients,
                "correlation_id": corrs, "acks0": acks0, "why": states}
    keys, versions, corrs, clients, acks0, states = [], [], [], [], [], []
    for i in positions.tolist():
        payload = frames[i]
        if len(payload) < 8:
            raise NotPlain
        key, version, corr = _peek(payload, 0)
        if key not in _KNOWN_KEYS:
            raise NotPlain
        client_id, zero, why = _request(payload, key, version, corr)
        keys.append(key)
        versions.append(version)
        corrs.append(corr)
        clients.append(client_id)
        acks0.append(zero)
        states.append(why)
    return {"api_key": np.array(keys, np.int32), "api_version": np.array(versions, np.int32),
            "client_id": clients, "correlation_id": np.array(corrs, np.int64),
            "acks0": np.array(acks0, bool), "why": states}


def _request(payload: bytes, key: int, version: int, corr: int) -> tuple:
    """One request's (client id, whether it is an acks=0 Produce, why its body is
    not checked); NotPlain where the walk would find something."""
    try:
        client_id, offset, why = read_request(payload, key, version, corr, False)
        zero = False
        if why is None:
            body, why = walk_request_body(payload, offset, key, version)
            zero = body is not None and key == _PRODUCE and body.get("acks") == 0
        if why is not None and key == _PRODUCE:
            zero = produce_acks(payload, offset, version) == 0
    except (InvalidRequestError, BodyProblem):
        raise NotPlain from None
    return client_id, zero, why


def _request_entry(key: int, version: int):
    """What the compiled loop needs for requests of this API and version
    (``kafka_net/capture/_plain_checks.pyx``): False for an unknown API (not
    plain), True for the one-at-a-time path (no walk at this version, or a header
    the compiled read does not take), else (header version, walk, records check,
    is Produce)."""
    if key not in _KNOWN_KEYS:
        return False
    message = MESSAGES.get(key)
    walk = request_walk(key, version) if message is not None else None
    header_version = request_header_version(key, version, message.request.flexible) \
        if message is not None else 0
    if walk is None or header_version not in (1, 2):
        return True
    return header_version, walk, produced_checks(), key == _PRODUCE


def _response_entry(key: int, version: int):
    """As :func:`_request_entry`, for the responses to such requests: True, or
    (walk, records check)."""
    walk = response_walk(key, version)
    return True if walk is None else (walk, fetched_checks())


_REQUEST_ENTRIES: dict = {}
_RESPONSE_ENTRIES: dict = {}


def _response_ids(frames: "list | Payloads", positions: np.ndarray) -> np.ndarray:
    if _plain_checks is not None:
        return _plain_checks.response_ids(frames, positions, NotPlain)
    ids = []
    for i in positions.tolist():
        payload = frames[i]
        if len(payload) < 4:
            raise NotPlain
        ids.append(int.from_bytes(payload[:4], "big", signed=True))
    return np.array(ids, np.int64)


def _markers_pass(markers: list, is_marker: np.ndarray, exp_pos: np.ndarray,
                  resp_pos: np.ndarray) -> None:
    """Only a client's FIN passes, and only if the oldest request waiting at it
    (if any) is answered later.  At a FIN the walk marks that one request alone
    as closed (the muted-connection rule: those behind it were never read), and
    the mark matters only if it is still waiting at the end.  A pipelining client
    that closes with answers still on the way (the pcap shows its FIN before
    them) stays here.  Any other marker (gap, sync, injected fault), or a FIN
    whose oldest waiting request is never answered, needs the walk."""
    at = np.flatnonzero(is_marker)
    if not len(at):
        return
    if any(markers[i] != CLOSE for i in at.tolist()):
        raise NotPlain
    answered_before = np.searchsorted(resp_pos, at)   # the head's index, in order
    waiting = np.searchsorted(exp_pos, at) > answered_before
    if (answered_before[waiting] >= len(resp_pos)).any():
        raise NotPlain


def _responses(frames: "list | Payloads", positions: np.ndarray, req: dict, answered: np.ndarray
               ) -> tuple[list, list]:
    """Each response's body checked for its request's API and version: its
    sorted non-zero error codes, and why it is header only (None: checked)."""
    keys, versions = req["api_key"], req["api_version"]
    if _plain_checks is not None:
        return _plain_checks.responses(frames, positions, answered, keys, versions,
                                       _RESPONSE_ENTRIES, _response_entry, _response)
    keys, versions = keys.tolist(), versions.tolist()
    codes, why = [], []
    for i, r in zip(positions.tolist(), answered.tolist()):
        found, reason = _response(frames[i], keys[r], versions[r])
        codes.append(sorted(set(found)) if found else [])
        why.append(reason)
    return codes, why


def _response(payload: bytes, key: int, version: int) -> tuple:
    """One response's (non-zero error codes, why not checked); NotPlain where the
    walk would find something."""
    try:
        return walk_response_body(payload, key, version)
    except (BodyProblem, InvalidRequestError):
        raise NotPlain from None


def _versions_advertised(frames, req_pos, resp_pos, req, answered, resp_states) -> None:
    """A request at a version its connection's ApiVersions answer did not
    advertise is a finding (:mod:`kafka_net.capture.version_checks`): NotPlain."""
    keys, versions = req["api_key"], req["api_version"]
    adverts = []
    for k in np.flatnonzero(keys[answered] == _API_VERSIONS).tolist():
        if resp_states[k] is None:
            payload = frames[int(resp_pos[k])]
            ranges = _advertised(int(versions[answered[k]]), bytes(payload[4:]))
            if ranges is not None:
                adverts.append((int(resp_pos[k]), ranges))
    if not adverts:
        return
    # Each request against the latest answer before it (-1: none): every distinct
    # (answer, key, version) once, found as one number each (a version is int16).
    latest = np.searchsorted([pos for pos, _ in adverts], req_pos) - 1
    distinct = np.unique((latest << 32) | (keys.astype(np.int64) << 16)
                         | (versions.astype(np.int64) & 0xFFFF))
    for code in distinct.tolist():
        last, key, version = code >> 32, (code >> 16) & 0xFFFF, _int16(code & 0xFFFF)
        if last < 0 or key == _API_VERSIONS:
            continue
        served = adverts[last][1].get(key)
        if served is None or not served[0] <= version <= served[1]:
            raise NotPlain


def _int16(bits: int) -> int:
    return bits - 0x10000 if bits & 0x8000 else bits


def _result(connection, source, frames, markers, timestamp_ns, req_pos, resp_pos, req,
            answered, responses, codes, resp_states, in_flight) -> dict:
    """The result's columns: numbers as numpy arrays, strings as Arrow arrays
    (each made once: the pairs table and the shares take them as they are)."""
    import pyarrow as pa
    keys, versions, clients = req["api_key"], req["api_version"], req["client_id"]
    client_or_empty = pa.array([c or "" for c in clients] if None in clients else clients,
                               pa.string())
    distinct = np.unique(keys)
    names = pa.array([api_name(k) for k in distinct.tolist()], pa.string()).take(
        np.searchsorted(distinct, keys))
    req_ns = timestamp_ns[req_pos]
    pair_req_ns = req_ns[answered]
    resp_ns = timestamp_ns[resp_pos]
    pairs = {
        "connection": connection, "correlation_id": req["correlation_id"][answered],
        "api_key": keys[answered], "api_name": names.take(answered),
        "api_version": versions[answered], "client_id": client_or_empty.take(answered),
        "request_position": req_pos[answered], "request_ns": pair_req_ns,
        "response_ns": resp_ns, "latency_ns": resp_ns - pair_req_ns, "error_codes": codes,
    }
    requests = {
        "connection": connection, "api_key": keys, "api_name": names, "api_version": versions,
        "client_id": client_or_empty, "timestamp_ns": req_ns, "acks0": req["acks0"],
        "responses": responses,
    }
    positions = np.concatenate([req_pos, resp_pos])
    order = np.argsort(positions, kind="stable")
    why = req["why"] + resp_states
    if any(why):
        reasons = [why[i] or "" for i in order.tolist()]
        state: list | str = [HEADER_ONLY if r else CHECKED for r in reasons]
    else:       # every frame checked (the common case): one value for all (a str)
        reasons, state = "", CHECKED
    states = {"connection": connection, "position": positions[order],
              "state": state, "reason": reasons}
    summary = _summary(connection, source, frames, markers, req_pos, resp_pos, req,
                       answered, codes, why, order, in_flight, client_or_empty)
    return {"pairs": pairs, "violations": [], "requests": requests, "states": states,
            "connection": summary, "columns": True}


def _summary(connection, source, frames, markers, req_pos, resp_pos, req, answered, codes,
             why, order, in_flight, client_or_empty) -> dict:
    """The connection row of ``transforms.check_connection``, the same fields in the
    same order."""
    counts = dict.fromkeys(STATES, 0)
    reasons: dict[str, int] = {}
    if not any(why):                  # every frame checked (the common case)
        counts[CHECKED] = len(why)
    else:
        for i in order.tolist():      # by position, as the walk records states
            if why[i]:
                counts[HEADER_ONLY] += 1
                reasons[why[i]] = reasons.get(why[i], 0) + 1
            else:
                counts[CHECKED] += 1
    return {
        "connection": connection, "source": source,
        "frames": markers.count(None),
        "requests": len(req_pos), "responses": len(resp_pos), "pairs": len(answered),
        "violations": 0, "in_flight_at_end": in_flight,
        "acks0_requests": int(req["acks0"].sum()), "unverifiable_from": None,
        "unverifiable_requests": 0,
        **{f"frames_{state}": n for state, n in counts.items()},
        "header_only_reasons": reasons, "gaps": [],
        "cells": _cells(frames, req_pos, req, answered, codes, why, client_or_empty),
        "versions_served": _versions_served(frames, resp_pos, req, answered),
    }


def _cells(frames, req_pos, req, answered, codes, why, client_or_empty) -> list[dict]:
    """findings.matrix_cells with no violation: per (API, version, client id)
    the requests, responses, pairs, error codes and coverage states
    (``client_or_empty``: an Arrow string array).  Each request's cell is one
    number (its key, version and client id's index among the connection's),
    counted by numpy: a tuple per request, counted, took 0.16 CPU s of the
    919,785-frame capture."""
    keys, versions = req["api_key"], req["api_version"]
    software = next((s for s in (software_of(frames[int(req_pos[r])])
                                 for r in np.flatnonzero(keys == _API_VERSIONS).tolist())
                     if s is not None), "")
    clients = client_or_empty.dictionary_encode()
    client_index = clients.indices.to_numpy().astype(np.int64)
    cell_of = (keys.astype(np.int64) << 40) | ((versions.astype(np.int64) & 0xFFFF) << 24) \
        | client_index
    of_pair = cell_of[answered]
    requests, pairs = _counted(cell_of), _counted(of_pair)
    names = clients.dictionary.to_pylist()
    key_of = {c: (c >> 40, _int16((c >> 24) & 0xFFFF), names[c & 0xFFFFFF]) for c in requests}
    cells = {key_of[c]: {"api_key": key_of[c][0], "api_version": key_of[c][1],
                         "client_id": key_of[c][2], "client_software": software,
                         "requests": n, "responses": pairs.get(c, 0), "pairs": pairs.get(c, 0),
                         "violations": 0, CHECKED: 0, HEADER_ONLY: 0, UNVERIFIABLE: 0,
                         "error_codes": {}}
             for c, n in requests.items()}
    if any(why):
        for c, state in zip(cell_of.tolist() + of_pair.tolist(), why):   # requests, then responses
            cells[key_of[c]][HEADER_ONLY if state else CHECKED] += 1
    else:
        for cell in cells.values():
            cell[CHECKED] = cell["requests"] + cell["pairs"]
    with_codes = np.fromiter(map(bool, codes), bool, len(codes))
    for k in np.flatnonzero(with_codes).tolist():             # the pairs with error codes
        counted = cells[key_of[int(of_pair[k])]]["error_codes"]
        for code in codes[k]:
            counted[str(code)] = counted.get(str(code), 0) + 1
    return [cells[k] for k in sorted(cells)]


def _counted(values: np.ndarray) -> dict[int, int]:
    distinct, counts = np.unique(values, return_counts=True)
    return dict(zip(distinct.tolist(), counts.tolist()))


def _versions_served(frames, resp_pos, req, answered) -> dict:
    """findings.versions_served: the first ApiVersions answer without error."""
    for k in np.flatnonzero(req["api_key"][answered] == _API_VERSIONS).tolist():
        served = served_by(frames[int(resp_pos[k])], int(req["api_version"][answered[k]]))
        if served is not None:
            return served
    return {}


__all__ = ["ENABLED", "Payloads", "check_in_order"]


# -- a connection's frames table in, the checked rows out (Arrow) ---------------------------

def check_table(table, reference, frames: "list | Payloads | None" = None) -> dict:
    """One connection's frame rows (an Arrow table of the frame columns) checked:
    by :func:`check_in_order` if the connection is plain, else by ``reference``
    (``rows -> transforms.check_connection's result``) on the rows as dicts.
    ``frames``: the rows' frame bytes, in the table's order, where the table has
    no "frame" column (``arrow_stages.groups_with_frames``)."""
    if ENABLED and table.num_rows:
        result = _in_order_table(table, frames)
        if result is not None:
            return result
    if frames is not None:
        import pyarrow as pa
        table = table.append_column("frame", frames.arrow() if isinstance(frames, Payloads)
                                    else pa.array(frames, pa.binary()))
    return reference(table)


def _in_order_table(table, frames: "list | Payloads | None" = None) -> dict | None:
    import pyarrow.compute as pc
    if table["truncated"].to_numpy().any() or table["after_gap"].to_numpy().any():
        return None
    n = table.num_rows
    keys = pc.list_flatten(table["order_key"]).to_numpy()
    if len(keys) != 3 * n:
        return None                  # not (processor, segment, offset) keys: the reference sorts
    if frames is None:
        frames = Payloads(table["frame"])
    take = table.select(["source", "connection", "direction", "timestamp_ns", "marker"])
    if not _ascending(keys[0::3], keys[1::3], keys[2::3]):
        order = np.lexsort((keys[2::3], keys[1::3], keys[0::3]))   # as sorted(tuple(order_key))
        take = take.take(order)      # not in order yet
        frames = frames.taken(order) if isinstance(frames, Payloads) \
            else [frames[i] for i in order.tolist()]
    markers = take["marker"]
    return check_in_order(
        take["connection"][0].as_py(), take["source"][0].as_py(),
        take["direction"].to_numpy(), take["timestamp_ns"].to_numpy(), frames,
        [None] * n if markers.null_count == n else markers.to_pylist())


def _ascending(first: np.ndarray, second: np.ndarray, third: np.ndarray) -> bool:
    """Whether the rows' (first, second, third) never go down: then a stable sort
    leaves them as they are (a task's connection nearly always; sorting them
    anyway: 0.01 CPU s of the 919,785-frame capture)."""
    a, b, c = np.diff(first), np.diff(second), np.diff(third)
    return bool(((a > 0) | ((a == 0) & ((b > 0) | ((b == 0) & (c >= 0))))).all())


class Payloads:
    """Frames where they lie in an Arrow binary column, for :func:`check_in_order`:
    frame ``i`` is row ``rows[i]`` of ``column``, ``size[i]`` bytes at
    ``address[i]``.  The compiled loops (``_plain_checks``) read them there;
    Python reads one with ``payloads[i]`` (bytes).  A frames table held as
    bytes objects, one per frame, was a second copy of the whole capture: for
    the 919,785-frame one, 290 MB of fresh memory and 0.4-0.8 CPU s in all."""

    __slots__ = ("column", "rows", "address", "size")

    def __init__(self, column, rows=None, address=None, size=None) -> None:
        if rows is None:                # all of the column's rows, in order
            column = _binary(column)
            address, size = _addresses(column)
            rows = np.arange(len(size), dtype=np.int64)
        self.column = column            # the Arrow (chunked) array: keeps the buffers alive
        self.rows, self.address, self.size = rows, address, size

    def taken(self, order) -> "Payloads":
        """These frames in ``order`` (positions among them)."""
        return Payloads(self.column, self.rows[order], self.address[order], self.size[order])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> bytes | None:
        return self.column[int(self.rows[i])].as_py()

    def arrow(self):
        """The frames as an Arrow binary array, in their order (for the reference:
        a view column has no take in pyarrow 26, so they are read one by one)."""
        import pyarrow as pa
        return pa.array([self[i] for i in range(len(self))], pa.binary())


def _binary(column):
    """A column of bytes as one of the binary types whose rows :func:`_addresses`
    finds (another type cast to binary)."""
    import pyarrow as pa
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type) \
            or pa.types.is_binary_view(column.type):
        return column
    return column.cast(pa.binary())


def _addresses(column) -> tuple[np.ndarray, np.ndarray]:
    """Where each row of an Arrow binary, large binary or binary view column
    lies: (addresses, sizes), uint64 and int64 (a null: size 0)."""
    import pyarrow as pa
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    found = [_chunk_addresses(chunk) for chunk in chunks if len(chunk)]
    if not found:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    return np.concatenate([a for a, _ in found]), np.concatenate([n for _, n in found])


# Arrow's binary view: 16 bytes, the value's length, then up to 12 bytes of it
# inline, or its first 4 bytes, the index of the data buffer holding it and its
# offset there.
_VIEW = np.dtype([("length", "<i4"), ("prefix", "<u4"), ("buffer", "<i4"), ("offset", "<i4")])


def _chunk_addresses(chunk) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa
    n = len(chunk)
    buffers = chunk.buffers()
    if pa.types.is_binary_view(chunk.type):
        views = np.frombuffer(buffers[1], _VIEW)[chunk.offset:chunk.offset + n]
        size = views["length"].astype(np.int64)
        inline = size <= 12
        first = buffers[1].address + 16 * np.arange(chunk.offset, chunk.offset + n,
                                                    dtype=np.uint64) + np.uint64(4)
        data = np.array([b.address if b is not None else 0 for b in buffers[2:]] or [0],
                        np.uint64)
        held = data[np.where(inline, 0, views["buffer"])] + views["offset"].astype(np.uint64)
        return np.where(inline, first, held), size
    _, offsets, data = buffers
    if offsets is None or data is None:            # no bytes at all
        return np.zeros(n, np.uint64), np.zeros(n, np.int64)
    width = np.int64 if pa.types.is_large_binary(chunk.type) else np.int32
    at = np.frombuffer(offsets, width)[chunk.offset:chunk.offset + n + 1]
    return at[:-1].astype(np.uint64) + np.uint64(data.address), np.diff(at).astype(np.int64)


def checked_table(results: list[dict], schema):
    """Checked results (columns from :func:`check_in_order`, or the reference's
    rows) -> the checked table (``arrow_stages.CHECKED_SCHEMA``), one row per
    connection, its list columns built from whole columns at once."""
    import json
    import pyarrow as pa
    columns = {"connection": pa.array([r["connection"]["connection"] for r in results],
                                      pa.string()),
               "summary": pa.array([json.dumps(r["connection"]) for r in results],
                                   pa.string()),
               "violations": pa.array([r["violations"] for r in results],
                                      schema.field("violations").type)}
    for name in ("pairs", "requests", "states"):
        columns[name] = _list_column([r[name] for r in results],
                                     [bool(r.get("columns")) for r in results],
                                     schema.field(name).type)
    return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)


def _list_column(parts: list, is_columns: list[bool], list_type):
    """One list-of-structs column from each connection's part: columns
    ({field: values}, a str or None value meaning the same for every row) or rows."""
    import pyarrow as pa
    struct = list_type.value_type
    chunks: dict[str, list] = {f.name: [] for f in struct}
    offsets = [0]
    for part, columnar in zip(parts, is_columns):
        if columnar:
            n = len(part["position"] if "position" in part else part["api_key"])
            for f in struct:
                value = part.get(f.name)
                chunks[f.name].append(_Same(value, n) if value is None or isinstance(value, str)
                                      else value)
        else:
            n = len(part)
            for f in struct:
                chunks[f.name].append([row[f.name] for row in part])
        offsets.append(offsets[-1] + n)
    arrays = [_array(chunks[f.name], f.type) for f in struct]
    values = pa.StructArray.from_arrays(arrays, fields=list(struct))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=list_type)


class _Same:
    """A part's field that holds one value for all its ``n`` rows (its
    connection, a field the fast path leaves null)."""

    __slots__ = ("value", "n")

    def __init__(self, value, n: int) -> None:
        self.value, self.n = value, n

    def tolist(self) -> list:
        return [self.value] * self.n


def _array(chunks: list, type_):
    """One Arrow array of the chunks: numpy arrays at numpy speed, Arrow arrays
    joined, and a field that is one value per part (a connection: a million
    rows, a few dozen values) as a take of those values, never a Python list
    of a million."""
    import pyarrow as pa
    if chunks and all(isinstance(c, np.ndarray) for c in chunks):
        return pa.array(np.concatenate(chunks), type=type_)
    if chunks and all(isinstance(c, pa.Array) for c in chunks):
        return pa.concat_arrays([c.cast(type_) for c in chunks])
    if chunks and all(isinstance(c, _Same) for c in chunks):
        each = pa.array([c.value for c in chunks], type=type_)
        return each.take(np.repeat(np.arange(len(chunks)), [c.n for c in chunks]))
    values: list = []
    for c in chunks:
        values += _listed(c)
    return pa.array(values, type=type_)


def _listed(values) -> list:
    """A column's values as a list (a numpy, Arrow or one-value column converted)."""
    if isinstance(values, list):
        return values
    return values.to_pylist() if hasattr(values, "to_pylist") else values.tolist()


def share_fields(part: dict, names: tuple[str, ...]) -> dict:
    """Fields of a column-wise part ("pairs" or "requests") as
    ``summary_arrow.partials`` takes them, the names ``summary_arrow.flattened``
    gives ("errors": error codes not empty): numpy and Arrow arrays stay arrays,
    which Arrow takes as they are (made lists first, then Arrow arrays again,
    they cost 0.1 CPU s of the 919,785-frame capture); one value for every row
    (a str) becomes a list."""
    n = len(part["api_key"])
    out = {}
    for name in names:
        value = part["error_codes"] if name == "errors" else part[name]
        if name == "errors":
            out[name] = np.fromiter(map(bool, value), bool, n)
        elif value is None or isinstance(value, str):
            out[name] = [value] * n
        else:
            out[name] = value
    return out


def as_rows(result: dict) -> dict:
    """A result of :func:`check_in_order` in the reference's shape: "pairs",
    "requests" and "states" as lists of dicts (the tables' fields in order)."""
    if not result.get("columns"):
        return result
    from kafka_net.spark_jobs.schemas import PAIR_SCHEMA, REQUEST_SCHEMA, STATE_SCHEMA
    out = {k: v for k, v in result.items() if k != "columns"}
    for name, schema in (("pairs", PAIR_SCHEMA), ("requests", REQUEST_SCHEMA),
                         ("states", STATE_SCHEMA)):
        part = result[name]
        n = len(part["position"] if "position" in part else part["api_key"])
        columns = []
        for field in schema.fieldNames():
            value = part.get(field)
            columns.append([value] * n if value is None or isinstance(value, str)
                           else _listed(value))
        out[name] = [dict(zip(schema.fieldNames(), row)) for row in zip(*columns)]
    return out
