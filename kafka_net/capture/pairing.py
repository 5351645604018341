"""Pair requests with responses on one connection, and find protocol violations.

Kafka's contract on a connection: the broker answers requests in the order it
received them, each response carrying its request's correlation id, exactly
once, except Produce with acks=0, which is never answered.  This module
checks a captured conversation against that contract with a state machine
walked over the connection's frames in order (never a join on row numbers,
which miscounts from the first duplicate on).

State: the requests still waiting for an answer, oldest first.  For each
response with correlation id ``c``:

* ``c`` is the oldest waiting request's: a pair.
* ``c`` is a *younger* waiting request's: paired too, and the older ones it
  overtook are marked.  If an overtaken request is answered later, the
  overtaking response broke the order: **correlation_mismatch** (reported
  once, at the overtaking response).  If it never is, the request was
  skipped: **unanswered_request** (at the request).  Deciding at the end
  keeps one defect from being counted twice.
* ``c`` was already answered: **duplicate_response**.
* ``c`` belongs to an acks=0 Produce: **acks0_answered**.
* ``c`` belongs to a request that comes *later* in the capture:
  **response_before_request**.
* otherwise: **response_without_request**.

For requests: an id already waiting is **duplicate_correlation_id_in_flight**;
a header that does not parse is **undecodable_request** (and so is a body
that does not parse for its API and version, when we know the API).  A
paired response whose header or body does not decode for its request's API
and version (the response header rule, ApiVersions' v0 header included) is
**undecodable_response**.

Not violations, but reported: requests still waiting when the connection's
frames end (the client left, the broker closed, or the capture stopped), and
frames after a capture gap (lost packets), which cannot be checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import (
    decode_request_header, decode_response_header, peek_request_header,
    response_header_version)
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import Reader

REQUEST, RESPONSE = 0, 1

CHECKS = (
    "correlation_mismatch", "unanswered_request", "response_without_request",
    "duplicate_response", "acks0_answered", "duplicate_correlation_id_in_flight",
    "response_before_request", "undecodable_request", "undecodable_response",
)

# Header versions for APIs we have no schema for: every API made flexible since
# KIP-482 uses header v2 from its first flexible version, which we cannot know;
# such requests are checked only as far as the fixed first eight bytes go.


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a connection, in capture order."""

    position: int            # index within the connection's frames
    direction: int           # REQUEST or RESPONSE
    timestamp_ns: int
    frame: bytes             # payload without the size prefix (maybe cut)
    frame_size: int
    truncated: bool = False
    after_gap: bool = False  # bytes before this frame were lost (pcap)


@dataclass(slots=True)
class Pair:
    correlation_id: int
    api_key: int
    api_version: int
    client_id: str | None
    request_position: int
    response_position: int
    request_ns: int
    response_ns: int
    error_codes: tuple[int, ...] = ()

    @property
    def latency_ns(self) -> int:
        return self.response_ns - self.request_ns


@dataclass(frozen=True, slots=True)
class Violation:
    check: str
    position: int
    timestamp_ns: int
    correlation_id: int
    detail: str


@dataclass
class ConnectionReport:
    pairs: list[Pair] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    requests: list = field(default_factory=list)
    in_flight_at_end: int = 0
    acks0_requests: int = 0
    unverifiable_from: int | None = None
    unchecked_frames: int = 0


@dataclass(slots=True)
class _Req:
    position: int
    timestamp_ns: int
    correlation_id: int
    api_key: int
    api_version: int
    client_id: str | None
    acks0: bool = False
    answered: bool = False
    overtaken_by: "Frame | None" = None   # the response that overtook it


def pair_connection(frames: list[Frame]) -> ConnectionReport:
    """Walk one connection's frames in order; see the module docstring."""
    walk = _Walk(frames)
    for frame in frames:
        if frame.after_gap:
            walk.report.unverifiable_from = frame.position
            break
        if frame.direction == REQUEST:
            walk.on_request(frame)
        else:
            walk.on_response(frame)
    walk.finish()
    return walk.report


class _Walk:
    """The state of one connection's walk."""

    def __init__(self, frames: list[Frame]) -> None:
        self.report = ConnectionReport()
        self.waiting: list[_Req] = []            # oldest first
        self.answered: dict[int, Pair] = {}
        self.acks0: dict[int, _Req] = {}
        self.answered_early: dict[int, Frame] = {}  # id -> its response, which came first
        self.mismatch_reported: set[int] = set() # positions of overtaking responses
        # correlation id -> positions of requests carrying it (for lookahead)
        self.request_positions: dict[int, list[int]] = {}
        for f in frames:
            if f.direction == REQUEST and len(f.frame) >= 8:
                corr = peek_request_header(f.frame)[2]
                self.request_positions.setdefault(corr, []).append(f.position)

    def violation(self, check: str, at, corr: int, detail: str) -> None:
        self.report.violations.append(
            Violation(check, at.position, at.timestamp_ns, corr, detail))

    def on_request(self, frame: Frame) -> None:
        req = self._decode(frame)
        if req is None:
            return
        self.report.requests.append(req)
        corr = req.correlation_id
        if corr in self.answered_early:
            # Its response came first (already reported); it counts as answered,
            # so a later copy of that response is a duplicate.
            response = self.answered_early.pop(corr)
            req.answered = True
            self.answered[corr] = Pair(corr, req.api_key, req.api_version, req.client_id,
                                       req.position, response.position, req.timestamp_ns,
                                       response.timestamp_ns)
        elif req.acks0:
            self.report.acks0_requests += 1
            self.acks0[corr] = req
        else:
            if any(w.correlation_id == corr for w in self.waiting):
                self.violation("duplicate_correlation_id_in_flight", frame, corr,
                               f"correlation id {corr} is already waiting for a response")
            self.waiting.append(req)

    def _decode(self, frame: Frame) -> _Req | None:
        try:
            return _decode_request(frame)
        except InvalidRequestError as exc:
            corr = -1
            if len(frame.frame) >= 8:
                api_key, api_version, corr = peek_request_header(frame.frame)
            self.violation("undecodable_request", frame, corr, str(exc))
            if corr == -1:
                return None
            # The id is known: a broker may still answer it, so keep pairing.
            return _Req(frame.position, frame.timestamp_ns, corr, api_key, api_version, None)

    def on_response(self, frame: Frame) -> None:
        try:
            corr = decode_response_header(frame.frame, 0)[0]
        except InvalidRequestError as exc:
            self.violation("undecodable_response", frame, -1, f"no correlation id: {exc}")
            return
        match = next((i for i, w in enumerate(self.waiting) if w.correlation_id == corr), None)
        if match is not None:
            self._answer(frame, match)
        elif corr in self.answered:
            self.violation("duplicate_response", frame, corr,
                           f"correlation id {corr} was answered already at frame "
                           f"{self.answered[corr].response_position}")
        elif corr in self.acks0:
            self.acks0.pop(corr)
            self.violation("acks0_answered", frame, corr,
                           "a Produce with acks=0 must get no response")
        elif (later := self._later_request(corr, frame.position)) is not None:
            self.answered_early[corr] = frame
            self.violation("response_before_request", frame, corr,
                           f"the request with correlation id {corr} comes later, at frame "
                           f"{later}")
        else:
            self.violation("response_without_request", frame, corr,
                           f"no request with correlation id {corr} is waiting")

    def _later_request(self, corr: int, position: int) -> int | None:
        return next((p for p in self.request_positions.get(corr, ()) if p > position), None)

    def _answer(self, frame: Frame, index: int) -> None:
        req = self.waiting.pop(index)
        for older in self.waiting[:index]:
            if older.overtaken_by is None:
                older.overtaken_by = frame
        _pair(frame, req, self)
        overtaker = req.overtaken_by
        if overtaker is not None and overtaker.position not in self.mismatch_reported:
            # This request was answered after all, so the overtaking response
            # broke the order; blame it once, however many it overtook.
            self.mismatch_reported.add(overtaker.position)
            self.violation("correlation_mismatch", overtaker,
                           decode_response_header(overtaker.frame, 0)[0],
                           f"answered before the request with correlation id "
                           f"{req.correlation_id}, which came first")

    def finish(self) -> None:
        """Waiting requests overtaken by a later response were skipped: unanswered.
        The rest were in flight when the connection's frames ended."""
        for req in self.waiting:
            if req.overtaken_by is not None:
                self.violation("unanswered_request", req, req.correlation_id,
                               f"later requests were answered (from frame "
                               f"{req.overtaken_by.position}) but this one never was")
            else:
                self.report.in_flight_at_end += 1
        self.report.violations.sort(key=lambda v: (v.position, v.check))


def _pair(frame: Frame, req: _Req, walk: _Walk) -> None:
    req.answered = True
    pair = Pair(req.correlation_id, req.api_key, req.api_version, req.client_id,
                req.position, frame.position, req.timestamp_ns, frame.timestamp_ns)
    if not frame.truncated:
        problem, codes = _check_response(frame.frame, req)
        pair.error_codes = codes
        if problem:
            walk.violation("undecodable_response", frame, req.correlation_id, problem)
    walk.report.pairs.append(pair)
    walk.answered[req.correlation_id] = pair


# --- decoding checks ---------------------------------------------------------------------


def _decode_request(frame: Frame) -> _Req:
    api_key, api_version, corr = peek_request_header(frame.frame)
    message = MESSAGES.get(api_key)
    if message is None:
        if api_key not in ApiKey._value2member_map_:
            raise InvalidRequestError(f"unknown api key {api_key}")
        # A real API we have no schema for: the fixed eight bytes are all we check.
        return _Req(frame.position, frame.timestamp_ns, corr, api_key, api_version, None)
    try:
        header, offset = decode_request_header(frame.frame, message.request.flexible)
    except InvalidRequestError:
        if frame.truncated:  # the capture cut it inside the header, not the client
            return _Req(frame.position, frame.timestamp_ns, corr, api_key, api_version, None)
        raise
    req = _Req(frame.position, frame.timestamp_ns, corr, api_key, api_version,
               header.client_id)
    if frame.truncated:
        return req
    if api_version in message.request.valid:
        try:
            body = message.request.decode(memoryview(frame.frame)[offset:], api_version)
        except InvalidRequestError as exc:
            raise InvalidRequestError(
                f"{ApiKey(api_key).title} v{api_version} request body: {exc}") from None
        req.acks0 = api_key == ApiKey.PRODUCE and body.get("acks") == 0
    elif api_key == ApiKey.PRODUCE and api_version > message.request.valid.high:
        req.acks0 = _newer_produce_acks(frame.frame, offset) == 0
    return req


def _newer_produce_acks(frame: bytes, offset: int) -> int | None:
    """acks of a Produce newer than our schema: every version since v9 starts
    with a compact nullable transactional_id, then int16 acks."""
    r = Reader(frame, offset)
    try:
        n = r.uvarint() - 1
        if n > 0:
            r.raw(n)
        return r.int16()
    except InvalidRequestError:
        return None


def _check_response(payload: bytes, req: _Req) -> tuple[str | None, tuple[int, ...]]:
    """(problem or None, error codes found) for a paired response."""
    message = MESSAGES.get(req.api_key)
    if message is None:
        return None, ()
    version = req.api_version
    if req.api_key == ApiKey.API_VERSIONS and version not in message.response.valid:
        version = 0  # KIP-511: an unsupported ApiVersions request gets a v0 body
    if version not in message.response.valid:
        return None, ()
    header_version = response_header_version(req.api_key, version, message.response.flexible)
    try:
        _, offset = decode_response_header(payload, header_version)
        body = message.response.decode(memoryview(payload)[offset:], version)
    except InvalidRequestError as exc:
        body = _api_versions_v0_fallback(payload, req, version)
        if body is None:
            return (f"{ApiKey(req.api_key).title} v{version} response (header "
                    f"v{header_version}) does not decode: {exc}"), ()
    return None, tuple(sorted(set(_error_codes(body))))


def _api_versions_v0_fallback(payload: bytes, req: _Req, version: int) -> dict | None:
    """A broker that does not know the requested ApiVersions version answers with
    a v0 body (KIP-511); clients re-read it at v0, as Kafka's
    ApiVersionsResponse.parse does, so it is conformant."""
    if req.api_key != ApiKey.API_VERSIONS or version == 0:
        return None
    try:
        return MESSAGES[ApiKey.API_VERSIONS].response.decode(memoryview(payload)[4:], 0)
    except InvalidRequestError:
        return None


def _error_codes(value) -> list[int]:
    """Every non-zero error_code anywhere in a decoded body."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "error_code" and isinstance(v, int) and v != 0:
                out.append(v)
            elif isinstance(v, (dict, list)):
                out.extend(_error_codes(v))
    elif isinstance(value, list):
        for item in value:
            out.extend(_error_codes(item))
    return out


__all__ = ["CHECKS", "ConnectionReport", "Frame", "Pair", "Violation", "pair_connection",
           "REQUEST", "RESPONSE"]
