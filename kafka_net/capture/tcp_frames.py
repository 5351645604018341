"""One direction's byte stream split into Kafka frames, sans-IO (the framing
half of :mod:`kafka_net.capture.tcp`, over :mod:`.tcp_stream`).

Frames, gaps and resynchronising
--------------------------------
The stream is split by size prefixes into :class:`Framed` frames, each with
its stream offsets and the ACK its first packet carried (what the sender had
received from its peer: :mod:`.tcp` orders the two directions by it).

* A frame with lost bytes inside keeps its known prefix, ``truncated=True``
  and the lost range in ``gap``; if its header survived it is still paired,
  and framing goes on at the end its size prefix gives.
* A frame whose header was lost or cut by the snap length cannot be paired:
  it becomes a **gap marker** (a :class:`Framed` with ``marker=GAP``).
* A size prefix in lost bytes loses the framing: a gap marker covers the
  bytes up to the next plausible boundary, looked for at later segment starts
  (:meth:`Flow._boundary_ok`: a size prefix, a request header that decodes
  through the lenient reader, a correlation id consistent with the
  connection (:meth:`Flow._resync_ids`), and a plausible next size prefix),
  and framing resumes there.
* A size prefix that is negative or over 100 MiB (not Kafka, or not at a
  frame boundary) ends the direction with a gap marker to its end.
* A frame still incomplete when the data ends is kept (truncated) if its
  header is complete, else dropped.

:mod:`.pairing` turns markers into "unverifiable" for what may depend on the
lost bytes, never into violations.  The direction's first reason is kept in
``stats.unverifiable``.

Capture started mid-stream (no SYN for a direction): the first bytes may be
in the middle of a frame.  Frames are looked for at segment starts (the first
:data:`SYNC_TRIES` ones): a request boundary must parse as a plausible request
header whose correlation id starts one of the broker's packets, a response
boundary must carry the correlation id of a captured request (a response to
a request sent before the capture started cannot be checked), and the next
size prefix must be plausible too.  Requests captured before the request
answered by the first framed response are dropped (their responses, if any,
were not captured whole).  A direction where no boundary is found is
unverifiable from its first byte.

Each frame's timestamp is that of the packet that completed it (the one
that made all its bytes deliverable; never earlier than the frame before it
in the same direction); a marker's, just after the packet before its bytes.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from typing import NamedTuple

from kafka_net.capture.model import GAP, REQUEST, RESPONSE
from kafka_net.capture.tcp_stream import ByteStream
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import (
    client_id_length, decode_request_header, peek_request_header, peek_response_correlation_id)
from kafka_net.protocol.messages import MESSAGES

MAX_FRAME_SIZE = 100 * 1024 * 1024      # socket.request.max.bytes' default
SYNC_TRIES = 4096                       # segment starts tried to find a frame boundary
MAX_API_KEY, MAX_API_VERSION = 100, 20

I32 = struct.Struct(">i")


def plausible_request(head: bytes) -> bool:
    """Do these bytes (size prefix first, at least 8 of them) start a Kafka request?
    The header is read by the lenient reader (:mod:`kafka_net.protocol.headers`)."""
    if len(head) < 8:
        return False
    size = I32.unpack_from(head, 0)[0]
    api_key, api_version, _ = peek_request_header(head[4:] + b"\0\0\0\0")
    if not (8 <= size <= MAX_FRAME_SIZE and 0 <= api_key <= MAX_API_KEY
            and 0 <= api_version <= MAX_API_VERSION):
        return False
    if size >= 10 and len(head) >= 14:
        return -1 <= client_id_length(head[4:]) <= size - 10
    return True


def request_correlation_id(head: bytes) -> int:
    """The correlation id of a request starting with its size prefix."""
    return peek_request_header(head[4:12])[2]


def response_correlation_id(head: bytes) -> int | None:
    """The correlation id of a response starting with its size prefix."""
    return peek_response_correlation_id(head[4:8])


class Framed(NamedTuple):
    """One frame (or gap marker) of one direction, with its place in the stream."""

    ts: int
    payload: bytes
    size: int
    truncated: bool
    gap: tuple[int, int] | None   # lost bytes inside the frame; a marker's range
    start: int                    # stream offsets [start, end), size prefix included
    end: int
    ack: int | None               # the raw ACK its first packet carried (None: no ACK)
    marker: str | None = None     # GAP: bytes here could not be framed


class Flow(ByteStream):
    """One direction: its packets, then its byte stream (:class:`ByteStream`), then
    its frames (:meth:`split`)."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[Framed] = []
        self.not_kafka = False
        self.unverifiable_ns: int | None = None
        self.synced_mid_stream = False

    def _unverifiable(self, pos: int, reason: str | None) -> None:
        at = self._loss_ts(pos)
        if at is not None and (self.unverifiable_ns is None or at < self.unverifiable_ns):
            self.unverifiable_ns = at
        if self.stats.unverifiable is None and reason:
            self.stats.unverifiable = reason

    def _boundary_ok(self, pos: int, direction: int, match: set[int] | None) -> bool:
        """Could a frame start at ``pos``?  Requests need a plausible header, responses
        a sane size; with ``match``, the correlation id must be in it (a request's id
        seen at a response boundary, or a response's id among the requests').  The
        next size prefix, if captured, must be plausible too."""
        head = self._known(pos, 16)
        if len(head) < 8:
            return False
        size = I32.unpack_from(head, 0)[0]
        if direction == REQUEST:
            if not plausible_request(head) or (
                    match is not None and (len(head) < 12 or
                                           request_correlation_id(head) not in match)):
                return False
            if not self._header_complete(self._known(pos + 4, min(size, 4096)), REQUEST):
                return False
        elif not 4 <= size <= MAX_FRAME_SIZE or (
                match is not None and response_correlation_id(head) not in match):
            return False
        nxt = self._known(pos + 4 + size, 16)
        if direction == REQUEST and len(nxt) >= 8:
            return plausible_request(nxt)
        if len(nxt) >= 4:
            return 0 <= I32.unpack_from(nxt, 0)[0] <= MAX_FRAME_SIZE
        return True

    def _sync(self, start: int, direction: int, match: set[int] | None) -> int | None:
        i = bisect_left(self.seg_starts, start)
        for candidate in self.seg_starts[i:i + SYNC_TRIES]:
            if self._boundary_ok(candidate, direction, match):
                return candidate
        return None

    def response_ids(self) -> set[int]:
        """Correlation ids at this (response) direction's segment starts: what a
        request found mid-stream must match to be believed."""
        ids = set()
        for start in self.seg_starts[:SYNC_TRIES]:
            head = self._known(start, 8)
            if len(head) == 8 and 4 <= I32.unpack_from(head, 0)[0] <= MAX_FRAME_SIZE:
                ids.add(response_correlation_id(head))
        return ids

    def _header_complete(self, payload: bytes, direction: int) -> bool:
        """Does a truncated frame still hold the header pairing needs?"""
        if direction == RESPONSE:
            return len(payload) >= 4
        if len(payload) < 8:
            return False
        message = MESSAGES.get(peek_request_header(payload)[0])
        if message is None:
            return True
        try:
            decode_request_header(payload, message.request.flexible)
        except InvalidRequestError:
            return False
        return True

    def split(self, direction: int, match: set[int] | None) -> None:
        """Split the stream into :class:`Framed` frames and gap markers.

        ``match``: correlation ids a boundary found by searching (mid-stream start,
        lost framing) must carry; see :meth:`_boundary_ok`.
        """
        st = self.stats
        if not self.run_data:
            if self.holes:
                self._unverifiable(0, "no payload bytes were captured")
                self._gap(0, self.end, 0)
            return
        pos = 0
        end_all = self.end
        if self.isn is None:
            found = self._sync(0, direction, match)
            if found is None:
                st.skipped_bytes += st.bytes
                self._unverifiable(0, "no Kafka frame boundary found (capture started "
                                      "mid-stream, or not Kafka)")
                self.not_kafka = True
                return
            self.synced_mid_stream = True
            st.skipped_bytes += self._known_bytes(0, found)
            pos = found
        elif direction == REQUEST:
            head = self._known(0, 16)
            if len(head) >= 8 and not plausible_request(head):
                st.skipped_bytes += st.bytes
                self._unverifiable(0, f"the first bytes ({head[:8].hex()}) are not a Kafka "
                                      f"request header: not Kafka")
                self.not_kafka = True
                return
        frames = self.frames
        last_ts = 0
        while pos < end_all:
            ri = self._run_at(pos)
            rend = self.run_starts[ri] + len(self.run_data[ri]) if ri is not None else pos
            if rend - pos < 4:
                if ri is not None and rend >= end_all:
                    st.incomplete_tail_bytes += rend - pos
                    break
                # The next size prefix was not (wholly) captured: framing is lost until
                # the next plausible boundary (see _boundary_ok).
                self._unverifiable(pos, f"frame boundary lost at stream byte {pos} "
                                        f"(the size prefix is missing from the capture)")
                found = self._sync(pos + 1, direction, self._resync_ids(direction, match))
                stop = found if found is not None else end_all
                st.skipped_bytes += self._known_bytes(pos, stop)
                self._gap(pos, stop, last_ts)
                if found is None:
                    break
                pos = found
                continue
            rs, rd = self.run_starts[ri], self.run_data[ri]
            size = I32.unpack_from(rd, pos - rs)[0]
            if size < 0 or size > MAX_FRAME_SIZE:
                self._unverifiable(pos, f"frame size {size} at stream byte {pos} is not "
                                        f"plausible (not Kafka, or not at a frame boundary)")
                st.skipped_bytes += self._known_bytes(pos, end_all)
                self._gap(pos, end_all, last_ts)
                break
            fend = pos + 4 + size
            payload = rd[pos + 4 - rs:fend - rs]
            gap = None
            if fend > rend:
                hole_at = self._first_lost_hole(rend, min(fend, end_all))
                if hole_at is not None:
                    hole_end = next(h[1] for h in self.holes if h[2] and h[1] > hole_at)
                    gap = (hole_at, min(hole_end, fend, end_all))
                    self._unverifiable(hole_at, f"{self._gap_bytes(rend, fend)} bytes "
                                                f"missing from the capture at stream "
                                                f"byte {hole_at}")
                if fend > end_all and gap is None:
                    # The data ends inside this frame (capture stopped, connection cut).
                    st.incomplete_tail_bytes += self._known_bytes(pos, end_all)
                    if self._header_complete(payload, direction):
                        ts = max(self._ts(pos, end_all), last_ts)
                        frames.append(Framed(ts, payload, size, True, None, pos, fend,
                                             self.ack_at(pos)))
                    break
                if not self._header_complete(payload, direction) and (
                        gap is not None or len(payload) < 8):
                    # Pairing cannot use it: a gap as far as pairing goes.  (A frame
                    # the snap length cut after its first 8 bytes is still a frame:
                    # its key, version and correlation id are there; pairing reads
                    # it header only.)
                    if gap is None:
                        self._unverifiable(pos, f"the snap length cut the header of the "
                                                f"frame at stream byte {pos}")
                    self._gap(pos, min(fend, end_all), last_ts)
                    pos = fend
                    continue
            ts = max(self._ts(pos, min(fend, end_all)), last_ts)
            last_ts = ts
            frames.append(Framed(ts, payload, size, fend > rend, gap, pos, fend,
                                 self.ack_at(pos)))
            pos = fend

    def _gap(self, start: int, end: int, last_ts: int) -> None:
        """A marker: the bytes [start, end) could not be framed (lost, cut, not Kafka)."""
        ts = max(self._sent_after(start), last_ts)
        self.frames.append(Framed(ts, b"", 0, False, (start, end), start, end, None, GAP))

    def _resync_ids(self, direction: int, match: set[int] | None):
        """Correlation ids a boundary after lost framing must carry.  A request: one
        answered by the broker (``match``), or one above every id sent before
        (clients count up).  A response: a captured request's (``match``), or one
        between the lowest and highest of those (its request may have been lost
        too, and clients count up)."""
        if direction != REQUEST:
            return _Between(match) if match else match
        last = max((peek_request_header(f.payload)[2] for f in self.frames
                    if f.marker is None and len(f.payload) >= 8), default=None)
        return match if last is None else _Above(match or set(), last)


class _Between:
    """``corr in`` this: in the set, or between its lowest and highest."""

    __slots__ = ("ids", "low", "high")

    def __init__(self, ids: set[int]) -> None:
        self.ids, self.low, self.high = ids, min(ids), max(ids)

    def __contains__(self, corr: int) -> bool:
        return self.low < corr < self.high or corr in self.ids


class _Above:
    """``corr in`` this: in the set, or above ``last``."""

    __slots__ = ("ids", "last")

    def __init__(self, ids: set[int], last: int) -> None:
        self.ids, self.last = ids, last

    def __contains__(self, corr: int) -> bool:
        return corr > self.last or corr in self.ids
