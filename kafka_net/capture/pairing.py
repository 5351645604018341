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

Since a gap, a FIN and the depth of each check matter, the connection's
frames may include *markers* (:attr:`Frame.marker`), placed in order with the
frames by :mod:`.tcp`: ``"gap"`` (bytes of that direction were lost from the
capture; :attr:`Frame.gap` is their stream byte range) and ``"close"`` (the
client's FIN).  After a gap pairing goes on (:mod:`.tcp_frames` resynchronises
on the next plausible frame boundary):

* a response gap: the requests waiting at it whose answers may have been in it
  (those older than the request the next response answers, or all of them if
  no response follows) are **unverifiable**, never a violation, never in flight.
* a request gap: a response that answers no known request may answer a lost
  one: unverifiable, until a response answers a request sent after the gap.
* either: a boundary found by searching may be a false one, so until a frame
  of that direction decodes cleanly (a request; a response answering a
  waiting request) that direction's own faults are unverifiable too.

A capture that started mid-stream has no gap, but its first boundary in each
direction was found by searching all the same: a ``"sync"`` marker before a
direction's first frame makes it suspect in the same way (a false boundary
reads the middle of a frame, or the other side's bytes when the roles were
guessed, as headers that fail to decode).  It does not make the connection
unverifiable: once a frame decodes whole, everything is checked.  The bytes
skipped before that boundary (the marker's ``gap``) end a frame whose start was
not captured, and may hold whole frames the search passed (answers to requests
sent before the capture, requests answered there; the marker's ``frame_size``
says how many frames in all, found by :mod:`.tcp`): each is counted as an
**unverifiable** frame (:attr:`ConnectionReport.skipped_frames`, in
:meth:`~ConnectionReport.state_counts`; they have no position of their own), and
their bytes are one of the connection's gaps (never a silent "100% checked").

Requests still waiting when the client closed the connection (its FIN) are
**unanswered_before_close**, unless the broker could still rightly hold them
(a Fetch within its max_wait_ms, a Produce within its timeout_ms, a
JoinGroup within its rebalance timeout: the client abandoned those) or the
responses end cut short; requests still waiting when the frames end
otherwise were in flight when the capture ended (reported, not a violation).
Of the requests waiting at the FIN only the oldest one not overtaken can have
been read by the broker (the muted-connection rule, see :meth:`_Walk.on_close`),
and one that waited behind others is owed an answer only if the FIN came
:data:`QUEUED_READ_WINDOW_NS` or more after the broker could first take it.

Requests at a version the broker did not advertise on the connection are
**unadvertised_version** (the client's), and the broker's answer to one, unless
it refuses, **unadvertised_version_served** (:mod:`.version_checks`).  Whose
each finding is, and how bad: :mod:`.attribution`.

A paired response whose body decodes but leaves bytes over is
**trailing_bytes**; a record batch (Produce request, Fetch response) that
Kafka's LogValidator would refuse is **corrupt_records**.  Each frame's
coverage state (checked, header_only and why, unverifiable, not_kafka) is in
:attr:`ConnectionReport.states`; see :mod:`.pairing_checks`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import islice

from kafka_net.capture.model import (
    CLOSE, GAP, REQUEST, RESPONSE, SYNC, ConnectionReport, Frame, FrameState, Pair, Violation)
from kafka_net.capture.pairing_checks import (
    CHECKED, HEADER_ONLY, NOT_KAFKA, UNKNOWN_API, UNVERIFIABLE, BodyProblem,
    produce_acks, read_request, walk_request_body, walk_response_body)
from kafka_net.capture.version_checks import check_advertised_versions
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import decode_response_header, peek_request_header

CHECKS = (
    "correlation_mismatch", "unanswered_request", "response_without_request",
    "duplicate_response", "acks0_answered", "duplicate_correlation_id_in_flight",
    "response_before_request", "undecodable_request", "undecodable_response",
    "trailing_bytes", "corrupt_records", "unanswered_before_close",
    "unadvertised_version", "unadvertised_version_served",
)


# How long after the broker could first take a request that waited behind others
# (the answer to the one ahead of it on the wire, or its own arrival behind acks=0
# Produces) the client's FIN must come for that request to be owed an answer.
# Kafka never answers a connection whose FIN it has read: a request still buffered
# when the broker sees the close is processed, and its answer is dropped (Kafka's
# Selector keeps such a channel in closingChannels and fails its next send).  A
# request that reached an idle connection is taken at once and the connection is
# muted until its answer is out, so the FIN cannot overtake it; one queued behind
# others is taken only after the broker's next turn of its network loop, and the
# acks=0 Produces ahead of it are worked through at a pace the capture never shows
# (they get no answer).  Half a second: far beyond a healthy broker's turn (µs), and
# beyond the pauses a loaded one takes (a JVM collection, a Processor with thousands
# of connections, a burst of acks=0 appends: tens to hundreds of ms); far below the
# time a client waits for an answer before it gives up (request.timeout.ms, 30 s by
# default), so a client that waited and closed still shows the broker's fault.
# Clients closing on shutdown do it 0.1-3.5 ms after their last answer.
QUEUED_READ_WINDOW_NS = 500_000_000


@dataclass(slots=True)
class _Req:
    """A request still waiting for its response."""

    position: int
    timestamp_ns: int
    correlation_id: int
    api_key: int
    api_version: int
    client_id: str | None
    acks0: bool = False
    acks_unknown: bool = False            # a Produce cut before its acks field
    answered: bool = False
    overtaken_by: "Frame | None" = None   # the response that overtook it
    closed: bool = False                  # the client closed the connection after it
    responses: int = 0                    # responses carrying its id (acks=0 ones too)
    wait_ms: int = 0                      # how long the broker may hold it (long polls)
    # The request before it on the connection is a Produce that gets no answer
    # (acks=0, or acks unknown): the broker may still be working through it.
    behind_acks0: bool = False
    gap: "Frame | None" = None            # a response gap met while it waited
    # Its own framing is in doubt: bytes of it were lost (the frame), or it came
    # after a request gap before a clean frame confirmed the boundaries (the gap).
    suspect: "Frame | None" = None


class _Waiting:
    """The requests waiting for an answer, oldest (lowest position) first, and how
    many of them carry each correlation id.

    A client that pipelines (librdkafka sends hundreds of Produces before the first
    answer) keeps this long, and each request asks whether its id is waiting and
    each answer which one it answers: the counts answer the first at once, and the
    second at the head of the queue when the broker keeps Kafka's order.  Only an
    answer out of order walks the queue."""

    __slots__ = ("_queue", "_ids")

    def __init__(self) -> None:
        self._queue: deque[_Req] = deque()
        self._ids: dict[int, int] = {}

    def __iter__(self):
        return iter(self._queue)

    def __len__(self) -> int:
        return len(self._queue)

    def __contains__(self, corr: int) -> bool:
        return corr in self._ids

    def append(self, req: _Req) -> None:
        self._queue.append(req)
        self._ids[req.correlation_id] = self._ids.get(req.correlation_id, 0) + 1

    def index(self, corr: int) -> int | None:
        """Where the oldest waiting request with this id is, or None."""
        if corr not in self._ids:
            return None
        if self._queue[0].correlation_id == corr:
            return 0
        return next(i for i, w in enumerate(self._queue) if w.correlation_id == corr)

    def older(self, index: int) -> list[_Req]:
        """The requests ahead of the one at ``index``."""
        return list(islice(self._queue, index))

    def take(self, index: int) -> tuple[_Req, list[_Req]]:
        """Remove the request at ``index`` and those ahead of it: (it, them)."""
        older = [self._forget(self._queue.popleft()) for _ in range(index)]
        return self._forget(self._queue.popleft()), older

    def put_back(self, older: list[_Req]) -> None:
        """Requests taken from the head go back there, in their order (they are
        older than every request still waiting, so the queue stays by position)."""
        self._queue.extendleft(reversed(older))
        for req in older:
            self._ids[req.correlation_id] = self._ids.get(req.correlation_id, 0) + 1

    def _forget(self, req: _Req) -> _Req:
        left = self._ids[req.correlation_id] - 1
        if left:
            self._ids[req.correlation_id] = left
        else:
            del self._ids[req.correlation_id]
        return req


def pair_connection(frames: list[Frame]) -> ConnectionReport:
    """Walk one connection's frames in order; see the module docstring."""
    walk = _Walk(frames)
    walk.report.unverifiable_from = next(
        (f.position for f in frames if f.marker == GAP or f.after_gap), None)
    for frame in frames:
        if frame.marker == GAP:
            walk.on_gap(frame)
        elif frame.marker == SYNC:
            walk.on_sync(frame)
        elif frame.marker == CLOSE:
            walk.on_close(frame)
        elif frame.marker is not None:
            continue   # a FAULT marker: kafka_net.capture.injected reads it
        elif frame.direction == REQUEST:
            walk.on_request(frame)
        else:
            walk.on_response(frame)
    walk.finish()
    check_advertised_versions(frames, walk.report)
    return walk.report


class _Walk:
    """The state of one connection's walk."""

    def __init__(self, frames: list[Frame]) -> None:
        self.report = ConnectionReport()
        self.waiting = _Waiting()                # oldest first
        # A response gap has marked waiting requests (their ``gap``) since the last
        # answer: the next answer clears the marks.
        self.gap_marked = False
        self.answered: dict[int, Pair] = {}
        self.answered_req: dict[int, _Req] = {}
        self.acks0: dict[int, _Req] = {}
        self.answered_early: dict[int, Frame] = {}  # id -> its response, which came first
        self.mismatch_reported: set[int] = set() # positions of overtaking responses
        self.request_gap: Frame | None = None    # requests may have been lost here
        self.last_request: _Req | None = None
        self.last_answer_ns = 0                  # the latest response paired so far
        # Per direction, the gap after which framing was resynchronised and is not
        # confirmed yet by a frame that decodes cleanly (a boundary found by
        # searching may be a false one): until then a frame's own faults are
        # "unverifiable", not violations.
        self.suspect: list[Frame | None] = [None, None]
        self.cut_tail: Frame | None = None   # the last response, if it is cut short
        # The last response gap, while no response has come after it: the capture
        # never regained the responses' framing, so any request still waiting at the
        # end may have been answered in the lost bytes.
        self.open_response_gap: Frame | None = None
        # correlation id -> positions of requests carrying it (for lookahead)
        self.request_positions: dict[int, list[int]] = {}
        for f in frames:
            if f.marker is None and f.direction == REQUEST and len(f.frame) >= 8:
                corr = peek_request_header(f.frame)[2]
                self.request_positions.setdefault(corr, []).append(f.position)

    def violation(self, check: str, at, corr: int, detail: str, offset: int = -1) -> None:
        self.report.violations.append(
            Violation(check, at.position, at.timestamp_ns, corr, detail, offset))

    def flag(self, check: str, frame: Frame, corr: int, detail: str,
             offset: int = -1) -> None:
        """A violation at ``frame``, unless its direction's framing is not confirmed."""
        gap = self.suspect[frame.direction]
        if gap is None:
            self.violation(check, frame, corr, detail, offset)
        else:
            self.report.states[frame.position] = FrameState(
                frame.position, UNVERIFIABLE, "framing not yet confirmed after "
                + _marker_text(gap), gap.gap)

    def state(self, frame: Frame, state: str, reason: str = "") -> None:
        if frame.after_gap and state != NOT_KAFKA:
            state, reason = UNVERIFIABLE, _gap_text(frame.gap)
        self.report.states[frame.position] = FrameState(frame.position, state, reason,
                                                        frame.gap)

    # -- markers ------------------------------------------------------------------------

    def on_gap(self, marker: Frame) -> None:
        report = self.report
        report.gaps.append((marker.direction, *(marker.gap or (0, 0))))
        self.suspect[marker.direction] = marker
        if marker.direction == REQUEST:
            self.request_gap = marker
        else:
            self.open_response_gap = marker
            self.gap_marked = True
            for req in self.waiting:
                if req.gap is None:
                    req.gap = marker

    def on_sync(self, marker: Frame) -> None:
        """The capture started mid-stream: this direction's first boundary was found
        by searching, after the bytes of ``marker.gap`` (the end of a frame whose
        start was not captured, and perhaps whole frames: ``marker.frame_size``).
        Frames of the connection the capture cannot check: unverifiable, their
        bytes a gap."""
        self.suspect[marker.direction] = marker
        start, end = marker.gap or (0, 0)
        if end > start:
            self.report.gaps.append((marker.direction, start, end))
            self.report.skipped_frames += max(1, marker.frame_size)

    def on_close(self, marker: Frame) -> None:
        """The client's FIN.  A request the broker may still hold (a Fetch within
        its max_wait_ms, a Produce within its timeout_ms, a JoinGroup within its
        rebalance timeout) was abandoned by the client, not skipped by the broker.

        The muted-connection rule: a broker reads one request at a time per
        connection (Kafka's Processor mutes a connection from a request's receipt
        until its response is sent), so of the requests waiting here only the
        oldest one not overtaken can have been read; those behind it were never
        read by the broker and are abandoned too, never unanswered_before_close.
        (Overtaken ones were read: a later request was answered.)  A Produce whose
        acks the capture cut may be acks=0, read and done with: what follows it
        may have been read, or not, so nothing after it is blamed either.

        The head itself is owed an answer only if the broker had it before the FIN:
        see :data:`QUEUED_READ_WINDOW_NS` for a head that waited behind others."""
        head = next((r for r in self.waiting if r.overtaken_by is None), None)
        for req in self.waiting:
            if req.overtaken_by is not None:
                owed_from = req.timestamp_ns       # read: a later request was answered
            elif req is head and not req.acks_unknown:
                owed_from = self._taken_by(req)
            else:
                continue
            if marker.timestamp_ns - owed_from >= req.wait_ms * 1_000_000:
                req.closed = True

    def _taken_by(self, req: _Req) -> int:
        """By when the broker had surely taken the head request: on arrival at an idle
        connection; else the window after it could first take it, once the answer
        to everything ahead of it was out (every response paired so far answers a
        request ahead of it, or it would be overtaken) and it had arrived."""
        ready = max(req.timestamp_ns, self.last_answer_ns)
        if self.last_answer_ns > req.timestamp_ns or req.behind_acks0:
            return ready + QUEUED_READ_WINDOW_NS
        return ready

    # -- requests -----------------------------------------------------------------------

    def on_request(self, frame: Frame) -> None:
        req = self._decode(frame)
        if req is None:
            return
        req.suspect = frame if frame.after_gap else self.suspect[REQUEST]
        last = self.last_request
        req.behind_acks0 = last is not None and (last.acks0 or last.acks_unknown)
        self.last_request = req
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
            if corr in self.waiting:
                self.flag("duplicate_correlation_id_in_flight", frame, corr,
                               f"correlation id {corr} is already waiting for a response")
            self.waiting.append(req)

    def _decode(self, frame: Frame) -> _Req | None:
        if len(frame.frame) < 8:
            self.state(frame, NOT_KAFKA)
            if not frame.after_gap:
                self.flag("undecodable_request", frame, -1,
                          f"{len(frame.frame)} bytes cannot hold a request header")
            return None
        api_key, api_version, corr = peek_request_header(frame.frame)
        req = _Req(frame.position, frame.timestamp_ns, corr, api_key, api_version, None)
        if api_key not in ApiKey._value2member_map_:
            self.state(frame, HEADER_ONLY, UNKNOWN_API)
            if not frame.after_gap:
                self.flag("undecodable_request", frame, corr, f"unknown api key {api_key}")
            return req
        try:
            req.client_id, offset, why = read_request(
                frame.frame, api_key, api_version, corr, frame.truncated or frame.after_gap)
            if why is None:
                body, why = walk_request_body(frame.frame, offset, api_key, api_version)
                req.acks0 = body is not None and api_key == ApiKey.PRODUCE \
                    and body.get("acks") == 0
                req.wait_ms = _wait_ms(api_key, body)
            if why is not None and api_key == ApiKey.PRODUCE:
                # Not decoded (cut, or too new): acks is still near the start, unless
                # the capture cut the frame before it (then it may be acks=0).
                acks = produce_acks(frame.frame, offset, api_version) \
                    if offset is not None else None
                req.acks0, req.acks_unknown = acks == 0, acks is None
        except InvalidRequestError as exc:
            self.state(frame, CHECKED)
            self.flag("undecodable_request", frame, corr, str(exc))
            return req   # the id is known: a broker may still answer it, so keep pairing
        except BodyProblem as exc:
            self.state(frame, CHECKED)
            self.flag(exc.check, frame, corr, str(exc), exc.offset)
            return req
        self.state(frame, HEADER_ONLY if why else CHECKED, why or "")
        if not frame.after_gap and why is None:
            # A request whose body decodes to its end: framing confirmed.  (A header
            # alone is no proof: after lost bytes, a false boundary may read a client
            # id as a header, and a cut frame's body is not there to disagree.)
            self.suspect[REQUEST] = None
        return req

    # -- responses ----------------------------------------------------------------------

    def on_response(self, frame: Frame) -> None:
        self.report.responses += 1
        self.cut_tail = frame if frame.truncated else None
        self.open_response_gap = None
        try:
            corr = decode_response_header(frame.frame, 0)[0]
        except InvalidRequestError as exc:
            self.state(frame, NOT_KAFKA)
            if not frame.after_gap:
                self.flag("undecodable_response", frame, -1, f"no correlation id: {exc}")
            return
        match = self.waiting.index(corr)
        if match and self.suspect[RESPONSE] is not None and any(
                w.gap is None for w in self.waiting.older(match)):
            # Framing not confirmed, and pairing it would accuse the broker: no.
            self.flag("correlation_mismatch", frame, corr, "")
        elif match is not None:
            self._answer(frame, match)
        elif self.request_gap is not None and corr not in self.acks0 \
                and self._later_request(corr, frame.position) is None:
            # It may answer a request lost in the gap (ids are not always unique).
            self.report.states[frame.position] = FrameState(
                frame.position, UNVERIFIABLE, "its request may have been lost: "
                + _gap_text(self.request_gap.gap), self.request_gap.gap)
        elif corr in self.answered:
            self.state(frame, CHECKED)
            if corr in self.answered_req:
                self.answered_req[corr].responses += 1
            self.flag("duplicate_response", frame, corr,
                      f"correlation id {corr} was answered already at frame "
                      f"{self.answered[corr].response_position}")
        elif corr in self.acks0:
            self.state(frame, CHECKED)
            self.acks0.pop(corr).responses += 1
            self.flag("acks0_answered", frame, corr,
                      "a Produce with acks=0 must get no response")
        elif (later := self._later_request(corr, frame.position)) is not None:
            self.state(frame, CHECKED)
            self.answered_early[corr] = frame
            self.flag("response_before_request", frame, corr,
                      f"the request with correlation id {corr} comes later, at frame "
                      f"{later}")
        else:
            self.state(frame, CHECKED)
            self.flag("response_without_request", frame, corr,
                      f"no request with correlation id {corr} is waiting")

    def _later_request(self, corr: int, position: int) -> int | None:
        return next((p for p in self.request_positions.get(corr, ()) if p > position), None)

    def _answer(self, frame: Frame, index: int) -> None:
        req, older = self.waiting.take(index)
        if self.request_gap is not None and req.position > self.request_gap.position:
            self.request_gap = None    # answers to requests lost in it are all past
        kept = []
        for skipped in older:
            if skipped.gap is not None:
                # Its answer was in the response bytes lost since: cannot tell.
                self._unverifiable(skipped, skipped.gap)
            else:
                skipped.overtaken_by = skipped.overtaken_by or frame
                kept.append(skipped)
        self.waiting.put_back(kept)
        if self.gap_marked:
            self.gap_marked = False
            for younger in self.waiting:
                younger.gap = None   # answers to requests after the answered one come later
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

    def _unverifiable(self, req: _Req, gap: Frame) -> None:
        """``gap``: the marker of the lost bytes, or a response cut short."""
        self.report.unverifiable_requests += 1
        why = ("perhaps no request at all: its boundary was found after "
               + _marker_text(gap)) if gap.marker == SYNC else \
            "its response may have been lost: " + _gap_text(gap.gap)
        self.report.states[req.position] = FrameState(req.position, UNVERIFIABLE, why, gap.gap)

    def finish(self) -> None:
        """Waiting requests overtaken by a later response were skipped: unanswered.
        Those waiting at a response gap: unverifiable.  Those waiting when the client
        closed: unanswered before close.  The rest were in flight at the end."""
        for req in self.waiting:
            if req.acks_unknown and (req.overtaken_by is not None or req.closed):
                continue     # perhaps acks=0: no answer was due (its state: header only)
            if req.suspect is not None and (req.overtaken_by is not None or req.closed):
                # Perhaps no request at all (a false boundary after lost bytes).
                self._unverifiable(req, req.suspect)
            elif req.overtaken_by is not None:
                self.violation("unanswered_request", req, req.correlation_id,
                               f"later requests were answered (from frame "
                               f"{req.overtaken_by.position}) but this one never was")
            elif req.gap is not None:
                self._unverifiable(req, req.gap)
            elif self.open_response_gap is not None:
                # Sent after the responses' framing was lost for good (the gap's
                # marker is timed by the frame before it): its answer may be there.
                self._unverifiable(req, self.open_response_gap)
            elif req.closed and self.cut_tail is not None:
                # The responses end inside a frame: the answer may be in bytes the
                # capture does not have.
                self._unverifiable(req, self.cut_tail)
            elif req.closed:
                self.violation("unanswered_before_close", req, req.correlation_id,
                               "the client closed the connection (FIN) without an answer "
                               "to this request")
            else:
                self.report.in_flight_at_end += 1
        self.report.unchecked_frames = self.report.skipped_frames + sum(
            1 for s in self.report.states.values() if s.state != CHECKED)
        self.report.violations.sort(key=lambda v: (v.position, v.check))


_WAIT_FIELDS = {ApiKey.FETCH: "max_wait_ms", ApiKey.PRODUCE: "timeout_ms",
                ApiKey.JOIN_GROUP: "rebalance_timeout_ms"}


def _wait_ms(api_key: int, body: dict | None) -> int:
    """How long the broker may rightly hold this request before answering."""
    name = _WAIT_FIELDS.get(api_key)
    if name is None or body is None:
        return 0
    wait = body.get(name, 0)
    if api_key == ApiKey.JOIN_GROUP and wait < 0:
        wait = body.get("session_timeout_ms", 0)     # v0 has no rebalance timeout
    return max(wait, 0)


def _gap_text(gap: tuple[int, int] | None) -> str:
    if gap is None:
        return "bytes lost from the capture"
    return f"stream bytes {gap[0]}-{gap[1]} lost from the capture"


def _marker_text(marker: Frame) -> str:
    if marker.marker == SYNC:
        return "a search for the first frame boundary (the capture started mid-stream)"
    return "a gap: " + _gap_text(marker.gap)


def _pair(frame: Frame, req: _Req, walk: _Walk) -> None:
    req.answered = True
    req.responses += 1
    walk.answered_req[req.correlation_id] = req
    pair = Pair(req.correlation_id, req.api_key, req.api_version, req.client_id,
                req.position, frame.position, req.timestamp_ns, frame.timestamp_ns)
    walk.report.pairs.append(pair)
    walk.answered[req.correlation_id] = pair
    walk.last_answer_ns = max(walk.last_answer_ns, frame.timestamp_ns)
    if frame.truncated or frame.after_gap:
        walk.state(frame, HEADER_ONLY, "truncated by capture length")
        return
    try:
        codes, why = walk_response_body(frame.frame, req.api_key, req.api_version)
    except BodyProblem as exc:
        walk.state(frame, CHECKED)
        walk.flag(exc.check, frame, req.correlation_id, str(exc), exc.offset)
        return
    except InvalidRequestError as exc:
        walk.state(frame, CHECKED)
        walk.flag("undecodable_response", frame, req.correlation_id,
                  f"the response header does not decode: {exc}")
        return
    walk.state(frame, HEADER_ONLY if why else CHECKED, why or "")
    walk.suspect[RESPONSE] = None    # it answers a waiting request and decodes
    if codes is not None:
        pair.error_codes = tuple(sorted(set(codes)))


__all__ = ["CHECKS", "ConnectionReport", "Frame", "FrameState", "Pair", "Violation",
           "pair_connection", "REQUEST", "RESPONSE", "GAP", "CLOSE", "SYNC"]
