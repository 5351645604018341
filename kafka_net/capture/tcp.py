"""TCP reassembly of captured packets into Kafka frames, sans-IO.

:func:`reassemble` takes the TCP packets of one or more capture files (see
:mod:`.pcap`), groups them into connections, rebuilds each direction's byte
stream and splits it into Kafka frames by their int32 size prefix.  The
result, per connection, is the list of :class:`~kafka_net.capture.pairing.Frame`
that :func:`~kafka_net.capture.pairing.pair_connection` walks.

Connections
-----------
Packets are grouped by their pair of endpoints.  A SYN (without ACK) that is
not a retransmission of the current connection's SYN starts a new connection
on the same endpoints (a port reused after FIN, RST or a lost FIN).  The
packets of several files are simply concatenated by the caller: they are
sorted by timestamp here, so a flow cut across rotated files is joined.

Which side is the broker (the first rule that decides; :attr:`Connection.broker_rule`):

1. ``"syn"``: the destination of a SYN without ACK (the side that was
   connected to); ``"syn-ack"``: the source of a SYN+ACK.
2. ``"broker_ports"``: the one side whose port is in ``broker_ports``.
3. ``"request_header"``: the side whose packets start with *plausible Kafka
   requests* (int32 size 8..100 MiB, api_key 0..100, api_version 0..20, a
   client id length that fits) whose correlation ids come back at the start
   of the other side's packets; the side with more such answers is the
   client.  If that does not decide, the side whose first packet is a
   plausible request is the client.
4. ``"port_order"``: the lower port (brokers listen on fixed ports, clients
   use ephemeral ones); on a tie, the destination of the first packet.

Pass ``broker_ports`` for captures without handshakes: rule 3 is a heuristic.

Byte streams
------------
Per direction, data segments are placed by sequence number relative to the
stream start and unwrapped across the 2**32 wraparound.  The stream start is
the SYN's sequence number + 1 (the client's can also be read from the
broker's SYN+ACK); with neither captured, the lowest sequence number among
the first 256 data segments.  Bytes are delivered as a TCP receiver would,
in capture order: a segment that arrives early waits until the bytes before
it are in, bytes already delivered are dropped (retransmissions, overlaps,
keepalive probes: the first captured copy wins).  What is missing leaves a
*hole*:

* a **lost** hole: bytes that never appear in the capture (dropped by the
  capture, or a rotated file that was not given).  At the end of a stream
  they are found from the FIN's sequence number, or from the peer's ACKs
  (bytes acknowledged but never captured; one byte is not counted, it may be
  a FIN that was not captured).
* a **cut** hole: bytes the snap length cut off (the IP header says they
  were sent).  Frame boundaries stay known; the frame is marked truncated.

Frames and verifiability
------------------------
The stream is split by size prefixes.  A frame whose bytes span a hole keeps
its known prefix and ``truncated=True``; a frame that is still incomplete when
the data ends is kept (truncated) if its header is complete, else dropped.

A direction becomes **unverifiable** from a point on when a lost hole is
met, when a size prefix falls into a hole (framing is lost; frames are looked
for again at later segment starts, the frames found get ``after_gap``), when
a size prefix is negative or over 100 MiB (not Kafka, or not at a frame
boundary: that direction stops), or when a truncated frame's header is
incomplete.  Lost bytes may have held requests or responses, so the
connection's :attr:`~Connection.unverifiable_from_ns` is the earliest time
the trouble can have started (lost bytes: just after the capture time of the
packet holding the byte before them; bytes that are there but unusable: the
capture time of their packet), and *every* frame of either direction
completed at or after it gets ``after_gap=True``: :func:`pair_connection`
then reports the connection unverifiable from the first such frame instead
of reporting mismatches.  This is conservative: a response to a request sent
before the loss may be left unchecked too.

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
in the same direction).  Frames of both directions are merged by timestamp,
requests first on ties.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from heapq import heappop, heappush
from dataclasses import dataclass, field
from operator import attrgetter

from kafka_net.capture.pairing import REQUEST, RESPONSE, Frame
from kafka_net.capture.pcap import ACK, FIN, RST, SYN, Packet
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import decode_request_header
from kafka_net.protocol.messages import MESSAGES

__all__ = ["Connection", "FlowStats", "MAX_FRAME_SIZE", "SYNC_TRIES", "reassemble",
           "plausible_request"]

MAX_FRAME_SIZE = 100 * 1024 * 1024      # socket.request.max.bytes' default
SYNC_TRIES = 4096                       # segment starts tried to find a frame boundary
_EARLY_WINDOW = 1 << 20                 # no SYN: how far before the first segment to start
MAX_API_KEY, MAX_API_VERSION = 100, 20

_SEQ_MOD, _SEQ_HALF = 1 << 32, 1 << 31
_I32 = struct.Struct(">i")
_REQ_HEAD = struct.Struct(">ihhi")       # size, api_key, api_version, correlation id
_I16 = struct.Struct(">h")


@dataclass
class FlowStats:
    """One direction of a connection (client -> broker carries the requests)."""

    segments: int = 0                # data-carrying segments
    bytes: int = 0                   # distinct payload bytes captured
    retransmitted_segments: int = 0  # data segments that brought nothing new
    retransmitted_bytes: int = 0     # duplicate bytes dropped (incl. partial overlaps)
    out_of_order_segments: int = 0   # captured before bytes that precede them
    gaps: int = 0                    # holes of bytes missing from the capture
    gap_bytes: int = 0
    cut_bytes: int = 0               # bytes the snap length cut off
    skipped_bytes: int = 0           # bytes not framed (before a boundary was found ...)
    frames: int = 0
    truncated_frames: int = 0
    dropped_frames: int = 0          # frames left out (see the module docstring)
    incomplete_tail_bytes: int = 0   # bytes of a frame still unfinished at the end
    unverifiable: str | None = None  # why this direction cannot be checked (first reason)


@dataclass
class Connection:
    """One TCP connection's Kafka frames, both directions merged in order."""

    id: str                          # "client_ip:port-broker_ip:port" (+ "#n" if reused)
    client_ip: str
    client_port: int
    broker_ip: str
    broker_port: int
    frames: list[Frame]
    requests: FlowStats              # client -> broker
    responses: FlowStats             # broker -> client
    first_ns: int                    # first and last packet timestamps
    last_ns: int
    broker_rule: str                 # how the broker side was chosen (module docstring)
    syn: bool = False                # the client's SYN was captured
    fin: bool = False                # a FIN was captured (either side)
    rst: bool = False                # a RST was captured (either side)
    unverifiable_from_ns: int | None = None   # frames at or after this have after_gap
    notes: list[str] = field(default_factory=list)

    @property
    def client(self) -> str:
        return _endpoint(self.client_ip, self.client_port)

    @property
    def broker(self) -> str:
        return _endpoint(self.broker_ip, self.broker_port)

    @property
    def bytes(self) -> int:
        return self.requests.bytes + self.responses.bytes

    @property
    def gaps(self) -> int:
        return self.requests.gaps + self.responses.gaps

    @property
    def retransmissions(self) -> int:
        return self.requests.retransmitted_segments + self.responses.retransmitted_segments

    @property
    def verifiable(self) -> bool:
        return self.unverifiable_from_ns is None


def plausible_request(head: bytes) -> bool:
    """Do these bytes (size prefix first, at least 8 of them) start a Kafka request?"""
    if len(head) < 8:
        return False
    size, api_key, api_version = _REQ_HEAD.unpack_from(head + b"\0\0\0\0", 0)[:3]
    if not (8 <= size <= MAX_FRAME_SIZE and 0 <= api_key <= MAX_API_KEY
            and 0 <= api_version <= MAX_API_VERSION):
        return False
    if size >= 10 and len(head) >= 14:
        client_id_len = _I16.unpack_from(head, 12)[0]
        return -1 <= client_id_len <= size - 10
    return True


def reassemble(packets: list[Packet], broker_ports: set[int] | None = None
               ) -> list[Connection]:
    """Group packets into connections and rebuild their Kafka frames; see the module
    docstring.  ``packets`` may come from several files in any order."""
    ordered = sorted(packets, key=attrgetter("timestamp_ns"))
    groups: list[_Group] = []
    current: dict[tuple, _Group] = {}
    for p in ordered:
        a, b = (p.src_ip, p.src_port), (p.dst_ip, p.dst_port)
        key = (a, b) if a <= b else (b, a)
        group = current.get(key)
        if p.flags & SYN and not p.flags & ACK:
            if group is None or group.syn_src != a or group.syn_isn != p.seq:
                group = _Group(a, p.seq)
                current[key] = group
                groups.append(group)
        elif group is None:
            group = _Group(None, None)
            current[key] = group
            groups.append(group)
        group.packets.append(p)
    out: list[Connection] = []
    seen_ids: dict[str, int] = {}
    for group in groups:
        if group.syn_src is None and not any(p.payload_len for p in group.packets):
            continue   # stray packets of a connection we know nothing about
        conn = _build(group, broker_ports or set())
        n = seen_ids.get(conn.id, 0) + 1
        seen_ids[conn.id] = n
        if n > 1:
            conn.id = f"{conn.id}#{n}"
        out.append(conn)
    return out


# --- internals ---------------------------------------------------------------------------


def _endpoint(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class _Group:
    __slots__ = ("syn_src", "syn_isn", "packets")

    def __init__(self, syn_src, syn_isn) -> None:
        self.syn_src = syn_src
        self.syn_isn = syn_isn
        self.packets: list[Packet] = []


def _build(group: _Group, broker_ports: set[int]) -> Connection:
    packets = group.packets
    client, broker, rule = _roles(packets, broker_ports)
    req, resp = _Flow(), _Flow()
    fin = rst = False
    for p in packets:
        from_client = (p.src_ip, p.src_port) == client
        (req if from_client else resp).add(p)
        if p.flags & ACK:
            (resp if from_client else req).peer_acks.append((p.timestamp_ns, p.ack))
        elif not p.flags & (SYN | RST):
            (resp if from_client else req).peer_acks_reliable = False
        fin = fin or bool(p.flags & FIN)
        rst = rst or bool(p.flags & RST)
    syn = req.isn is not None
    if req.isn is None and resp.acked_isn is not None:
        # The client's SYN was missed but the broker's SYN+ACK says where the client's
        # stream starts: bytes missing at its start are then a gap, not a mid-stream start.
        req.isn, req.syn_ts = resp.acked_isn, resp.syn_ts
    req.assemble()
    resp.assemble()
    conn = Connection(
        id=f"{_endpoint(*client)}-{_endpoint(*broker)}", client_ip=client[0],
        client_port=client[1], broker_ip=broker[0], broker_port=broker[1], frames=[],
        requests=req.stats, responses=resp.stats, first_ns=packets[0].timestamp_ns,
        last_ns=packets[-1].timestamp_ns, broker_rule=rule,
        syn=syn, fin=fin, rst=rst)

    # A request boundary found by searching must be confirmed by a response carrying
    # its correlation id; a response boundary, by a request carrying its id.
    req.split(REQUEST, resp.response_ids() if req.isn is None else None)
    req_ids = {_I32.unpack_from(f[1], 4)[0] for f in req.frames if len(f[1]) >= 8}
    resp.split(RESPONSE, req_ids)
    if resp.synced_mid_stream and resp.frames and req.frames:
        _drop_requests_before_first_answer(req, resp, conn)

    limits = [x for x in (req.unverifiable_ns, resp.unverifiable_ns) if x is not None]
    limit = min(limits) if limits else None
    # Frames after lost bytes of their own direction are after_gap whatever the time.
    firsts = [next((f[0] for f in flow.frames if f[4]), None) for flow in (req, resp)]
    starts = limits + [t for t in firsts if t is not None]
    conn.unverifiable_from_ns = min(starts) if starts else None
    for flow, name in ((req, "requests"), (resp, "responses")):
        if flow.stats.unverifiable:
            conn.notes.append(f"{name}: {flow.stats.unverifiable}")
        flow.stats.frames = len(flow.frames)
        flow.stats.truncated_frames = sum(1 for f in flow.frames if f[3])

    entries = [(f[0], REQUEST, i, f) for i, f in enumerate(req.frames)]
    entries += [(f[0], RESPONSE, i, f) for i, f in enumerate(resp.frames)]
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    conn.frames = [
        Frame(pos, direction, ts, f[1], f[2], f[3],
              f[4] or (limit is not None and ts >= limit))
        for pos, (ts, direction, _i, f) in enumerate(entries)]
    return conn


def _drop_requests_before_first_answer(req: "_Flow", resp: "_Flow", conn: Connection) -> None:
    """Mid-stream response sync: requests before the one the first framed response
    answers had their responses in bytes that were skipped."""
    first = resp.frames[0][1]
    corr = _I32.unpack_from(first, 0)[0]
    for i, f in enumerate(req.frames):
        if len(f[1]) >= 8 and _I32.unpack_from(f[1], 4)[0] == corr:
            if i:
                req.stats.dropped_frames += i
                conn.notes.append(
                    f"requests: {i} frame(s) dropped, sent before the request answered by "
                    f"the first whole response captured")
                del req.frames[:i]
            return


def _roles(packets: list[Packet], broker_ports: set[int]):
    """(client, broker, rule): see the module docstring."""
    for p in packets:
        if p.flags & SYN:
            if not p.flags & ACK:
                return (p.src_ip, p.src_port), (p.dst_ip, p.dst_port), "syn"
            return (p.dst_ip, p.dst_port), (p.src_ip, p.src_port), "syn-ack"
    first = packets[0]
    a, b = (first.src_ip, first.src_port), (first.dst_ip, first.dst_port)
    a_in, b_in = a[1] in broker_ports, b[1] in broker_ports
    if a_in != b_in:
        return (b, a, "broker_ports") if a_in else (a, b, "broker_ports")
    heads: dict[tuple, list[bytes]] = {a: [], b: []}
    for p in packets:
        side = heads[(p.src_ip, p.src_port)]
        if len(p.payload) >= 8 and len(side) < 256:
            side.append(p.payload[:16])
    score_a, score_b = _request_score(heads[a], heads[b]), _request_score(heads[b], heads[a])
    if score_a != score_b:
        return (a, b, "request_header") if score_a > score_b else (b, a, "request_header")
    first_a = bool(heads[a]) and plausible_request(heads[a][0])
    first_b = bool(heads[b]) and plausible_request(heads[b][0])
    if first_a != first_b:
        return (a, b, "request_header") if first_a else (b, a, "request_header")
    if a[1] != b[1]:
        return (a, b, "port_order") if a[1] > b[1] else (b, a, "port_order")
    return a, b, "port_order"


def _request_score(sent: list[bytes], received: list[bytes]) -> int:
    """How many packets of ``received`` start with a response to a plausible request
    starting a packet of ``sent`` (same correlation id)?"""
    ids = {_I32.unpack_from(h, 8)[0] for h in sent if len(h) >= 12 and plausible_request(h)}
    if not ids:
        return 0
    return sum(1 for h in received
               if 4 <= _I32.unpack_from(h, 0)[0] <= MAX_FRAME_SIZE
               and _I32.unpack_from(h, 4)[0] in ids)


class _Flow:
    """One direction: its packets, then its byte stream, then its frames."""

    def __init__(self) -> None:
        self.stats = FlowStats()
        self.segs: list[tuple[int, int, bytes, int]] = []   # seq, ts, payload, length
        self.isn: int | None = None
        self.syn_ts: int | None = None
        self.fin_seq: int | None = None
        self.acked_isn: int | None = None     # the peer's ISN, from our SYN+ACK
        self.peer_acks: list[tuple[int, int]] = []   # (ts, ack) the peer sent us
        self.peer_acks_reliable = True        # every peer segment carried an ACK
        self.acked_ts: list[int] = []         # the same, unwrapped: by then the peer had
        self.acked_off: list[int] = []        # all bytes before acked_off (running max)
        # the stream, filled by assemble()
        self.run_starts: list[int] = []
        self.run_data: list[bytes] = []
        self.holes: list[list] = []               # [start, end, lost]
        self.piece_starts: list[int] = []     # per delivered segment: [start, end) of
        self.piece_ends: list[int] = []       # its new bytes, when they became
        self.piece_ts: list[int] = []         # deliverable, and when it was captured
        self.piece_own_ts: list[int] = []
        self.seg_starts: list[int] = []
        self.end = 0
        self.first_data_ts = 0
        # framing results
        self.frames: list[tuple[int, bytes, int, bool, bool]] = []
        self.unverifiable_ns: int | None = None
        self.synced_mid_stream = False

    def add(self, p: Packet) -> None:
        seq = p.seq
        if p.flags & SYN:
            if self.isn is None:
                self.isn, self.syn_ts = p.seq, p.timestamp_ns
                if p.flags & ACK:
                    self.acked_isn = (p.ack - 1) % _SEQ_MOD
            seq = (seq + 1) % _SEQ_MOD      # data on a SYN (TCP Fast Open) follows it
        if p.payload_len:
            self.segs.append((seq, p.timestamp_ns, p.payload, p.payload_len))
        if p.flags & FIN and self.fin_seq is None:
            self.fin_seq = (seq + p.payload_len) % _SEQ_MOD

    # -- the byte stream --

    def assemble(self) -> None:
        """Rebuild the byte stream like a TCP receiver would, in capture order: bytes
        are delivered when everything before them is in (a segment that arrives early
        waits in a heap); bytes already delivered are dropped.  Whatever is still
        waiting at the end lies beyond lost bytes: holes."""
        st = self.stats
        segs = self.segs
        st.segments = len(segs)
        if self.isn is not None:
            base = (self.isn + 1) % _SEQ_MOD
        elif segs:
            # No SYN: start at the lowest sequence number among the first segments
            # (the very first captured one may have overtaken its predecessors).
            first = segs[0][0]
            back = [(seq - first + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF for seq, *_ in segs[:256]]
            base = (first + min(0, min(d for d in back if d >= -_EARLY_WINDOW))) % _SEQ_MOD
        else:
            return
        if segs:
            self.first_data_ts = segs[0][1]
        ref_seq, ref_off = base, 0
        self._rcv = 0
        self._run_start, self._run_end, self._parts = 0, -1, []
        waiting: list = []
        acks, next_ack, acked = self.peer_acks, 0, 0
        for rank, (seq, ts, payload, length) in enumerate(segs):
            while next_ack < len(acks) and acks[next_ack][0] <= ts:
                ack_ts, ack = acks[next_ack]
                acked = max(acked, ref_off + (ack - ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF)
                self.acked_ts.append(ack_ts)
                self.acked_off.append(acked)
                next_ack += 1
            off = ref_off + (seq - ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF
            if off > ref_off:
                ref_seq, ref_off = seq, off
            if off + length <= self._rcv:
                st.retransmitted_segments += 1
                st.retransmitted_bytes += length
            elif off <= self._rcv:
                self._deliver(off, ts, ts, payload, length)
                while waiting and waiting[0][0] <= self._rcv:
                    w_off, _rank, w_ts, w_payload, w_length = heappop(waiting)
                    st.out_of_order_segments += 1
                    self._deliver(w_off, ts, w_ts, w_payload, w_length)
            else:
                heappush(waiting, (off, rank, ts, payload, length))
        while waiting:     # beyond lost bytes
            w_off, _rank, w_ts, w_payload, w_length = heappop(waiting)
            if w_off > self._rcv:
                self._hole(self._rcv, w_off, True)
                self._rcv = w_off
            self._deliver(w_off, w_ts, w_ts, w_payload, w_length)
        if self._parts:
            self.run_starts.append(self._run_start)
            self.run_data.append(b"".join(self._parts))
        end = self._rcv
        for ack_ts, ack in acks[next_ack:]:
            acked = max(acked, ref_off + (ack - ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF)
            self.acked_ts.append(ack_ts)
            self.acked_off.append(acked)
        if self.fin_seq is not None:
            fin_off = ref_off + (self.fin_seq - ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF
            if fin_off > end:
                self._hole(end, fin_off, True)
                end = fin_off
        elif acked > end + 1:
            # The peer acknowledged bytes the capture does not have (one byte more may
            # just be a FIN that was not captured).
            self._hole(end, acked, True)
            end = acked
        self.end = end
        for start, stop, lost in self.holes:
            if lost:
                st.gaps += 1
                st.gap_bytes += stop - start
        self.segs = []   # no longer needed
        del self._parts

    def _deliver(self, off: int, ts: int, own_ts: int, payload: bytes, length: int) -> None:
        """Append a segment's new bytes (``off <= self._rcv`` holds) to the stream;
        ``ts`` is when they became deliverable, ``own_ts`` when they were captured."""
        st = self.stats
        rcv = self._rcv
        end = off + length
        if end <= rcv:
            st.retransmitted_segments += 1
            st.retransmitted_bytes += length
            return
        if off < rcv:
            st.retransmitted_bytes += rcv - off
            start = rcv
        else:
            start = off
            self.seg_starts.append(off)
        known_end = off + len(payload)
        if known_end > start:
            chunk = payload if start == off else payload[start - off:]
            if start == self._run_end:
                self._parts.append(chunk)
            else:
                if self._parts:
                    self.run_starts.append(self._run_start)
                    self.run_data.append(b"".join(self._parts))
                self._run_start, self._parts = start, [chunk]
            self._run_end = known_end
            st.bytes += known_end - start
        cut_from = max(known_end, start)
        if end > cut_from:
            self._hole(cut_from, end, False)
            st.cut_bytes += end - cut_from
        self.piece_starts.append(start)
        self.piece_ends.append(end)
        self.piece_ts.append(ts)
        self.piece_own_ts.append(own_ts)
        self._rcv = end

    def _hole(self, start: int, end: int, lost: bool) -> None:
        if self.holes and self.holes[-1][1] == start:
            self.holes[-1][1] = end
            self.holes[-1][2] = self.holes[-1][2] or lost
        else:
            self.holes.append([start, end, lost])

    def _run_at(self, pos: int) -> int | None:
        i = bisect_right(self.run_starts, pos) - 1
        if i >= 0 and pos < self.run_starts[i] + len(self.run_data[i]):
            return i
        return None

    def _known(self, pos: int, n: int) -> bytes:
        """Up to ``n`` captured bytes from ``pos`` on (fewer at a hole or the end)."""
        i = self._run_at(pos)
        if i is None:
            return b""
        at = pos - self.run_starts[i]
        return self.run_data[i][at:at + n]

    def _ts(self, start: int, end: int) -> int:
        """Timestamp of the latest packet holding bytes of [start, end)."""
        i = max(bisect_right(self.piece_starts, start) - 1, 0)
        j = max(bisect_left(self.piece_starts, end) - 1, i)
        return max(self.piece_ts[i:j + 1])

    def _loss_ts(self, pos: int) -> int | None:
        """The earliest capture time of a frame (either direction) that can depend on
        the bytes at ``pos``; None if no captured frame can.

        Bytes that are there but unusable (not Kafka, a header cut by the snap
        length): the capture time of their packet.  Lost bytes: they were sent after
        the byte before them, and the peer can answer them only once it has them, so
        only in packets acknowledging them (TCP puts the current cumulative ACK in
        every segment): the later of the two.  A peer that never acknowledged them
        never answered them.  (If some peer segment carried no ACK, only the first
        bound is used.)
        """
        i = bisect_right(self.piece_starts, pos) - 1
        if i >= 0 and pos < self.piece_ends[i]:
            return self.piece_own_ts[i]
        if i >= 0:
            sent_after = self.piece_own_ts[i] + 1
        elif self.syn_ts is not None:
            sent_after = self.syn_ts + 1
        else:
            sent_after = self.first_data_ts
        if not self.peer_acks_reliable:
            return sent_after        # segments without ACKs: nothing better to go by
        j = bisect_right(self.acked_off, pos)
        if j == len(self.acked_off):
            return None
        return max(sent_after, self.acked_ts[j])

    def _known_bytes(self, start: int, end: int) -> int:
        """How many bytes of [start, end) were captured."""
        i = max(bisect_right(self.run_starts, start) - 1, 0)
        n = 0
        for rs, rd in zip(self.run_starts[i:], self.run_data[i:]):
            if rs >= end:
                break
            n += max(0, min(rs + len(rd), end) - max(rs, start))
        return n

    def _first_lost_hole(self, start: int, end: int) -> int | None:
        """Start of the first lost hole overlapping [start, end), if any."""
        i = bisect_right(self.holes, [start, float("inf"), True]) - 1
        for h in self.holes[max(i, 0):]:
            if h[0] >= end:
                break
            if h[1] > start and h[2]:
                return max(h[0], start)
        return None

    # -- frames --

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
        size = _I32.unpack_from(head, 0)[0]
        if direction == REQUEST:
            if not plausible_request(head) or (
                    match is not None and (len(head) < 12 or
                                           _I32.unpack_from(head, 8)[0] not in match)):
                return False
        elif not 4 <= size <= MAX_FRAME_SIZE or (
                match is not None and _I32.unpack_from(head, 4)[0] not in match):
            return False
        nxt = self._known(pos + 4 + size, 16)
        if direction == REQUEST and len(nxt) >= 8:
            return plausible_request(nxt)
        if len(nxt) >= 4:
            return 0 <= _I32.unpack_from(nxt, 0)[0] <= MAX_FRAME_SIZE
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
            if len(head) == 8 and 4 <= _I32.unpack_from(head, 0)[0] <= MAX_FRAME_SIZE:
                ids.add(_I32.unpack_from(head, 4)[0])
        return ids

    def _header_complete(self, payload: bytes, direction: int) -> bool:
        """Does a truncated frame still hold the header pairing needs?"""
        if direction == RESPONSE:
            return len(payload) >= 4
        if len(payload) < 8:
            return False
        message = MESSAGES.get(_I16.unpack_from(payload, 0)[0])
        if message is None:
            return True
        try:
            decode_request_header(payload, message.request.flexible)
        except InvalidRequestError:
            return False
        return True

    def split(self, direction: int, match: set[int] | None) -> None:
        """Split the stream into frames: (ts, payload, size, truncated, after_loss).

        ``match``: correlation ids a boundary found by searching (mid-stream start,
        lost framing) must carry; see :meth:`_boundary_ok`.
        """
        st = self.stats
        if not self.run_data:
            if self.holes:
                self._unverifiable(0, "no payload bytes were captured")
            return
        pos = 0
        end_all = self.end
        if self.isn is None:
            found = self._sync(0, direction, match)
            if found is None:
                st.skipped_bytes += st.bytes
                self._unverifiable(0, "no Kafka frame boundary found (capture started "
                                      "mid-stream, or not Kafka)")
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
                return
        frames = self.frames
        last_ts = 0
        lost = False
        while pos < end_all:
            ri = self._run_at(pos)
            rend = self.run_starts[ri] + len(self.run_data[ri]) if ri is not None else pos
            if rend - pos < 4:
                if ri is not None and rend >= end_all:
                    st.incomplete_tail_bytes += rend - pos
                    break
                # The next size prefix was not (wholly) captured: framing is lost.
                self._unverifiable(pos, f"frame boundary lost at stream byte {pos} "
                                        f"(the size prefix is missing from the capture)")
                lost = True
                found = self._sync(pos + 1, direction, match)
                st.skipped_bytes += self._known_bytes(
                    pos, found if found is not None else end_all)
                if found is None:
                    break
                pos = found
                continue
            rs, rd = self.run_starts[ri], self.run_data[ri]
            size = _I32.unpack_from(rd, pos - rs)[0]
            if size < 0 or size > MAX_FRAME_SIZE:
                self._unverifiable(pos, f"frame size {size} at stream byte {pos} is not "
                                        f"plausible (not Kafka, or not at a frame boundary)")
                st.skipped_bytes += self._known_bytes(pos, end_all)
                break
            fend = pos + 4 + size
            payload = rd[pos + 4 - rs:fend - rs]
            truncated = fend > rend
            if truncated:
                hole_at = self._first_lost_hole(rend, min(fend, end_all))
                if hole_at is not None:
                    reason = None if st.unverifiable else (
                        f"{self._gap_bytes(rend, fend)} bytes missing from the capture at "
                        f"stream byte {hole_at}")
                    self._unverifiable(hole_at, reason)
                    lost = True
                if fend > end_all:
                    # The data ends inside this frame (capture stopped, connection cut).
                    st.incomplete_tail_bytes += self._known_bytes(pos, end_all)
                    if self._header_complete(payload, direction):
                        ts = max(self._ts(pos, end_all), last_ts)
                        frames.append((ts, payload, size, True, lost))
                    break
                if not lost and not self._header_complete(payload, direction):
                    self._unverifiable(pos, f"the snap length cut the header of the frame "
                                            f"at stream byte {pos}")
                    lost = True
            ts = max(self._ts(pos, fend), last_ts)
            last_ts = ts
            frames.append((ts, payload, size, truncated, lost))
            pos = fend

    def _gap_bytes(self, start: int, end: int) -> int:
        return sum(min(h[1], end) - max(h[0], start) for h in self.holes
                   if h[2] and h[0] < end and h[1] > start)
