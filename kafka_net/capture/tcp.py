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

The byte streams (holes, retransmissions, the stream start) are described in
:mod:`.tcp_stream`, the framing, gap markers and resynchronising in
:mod:`.tcp_frames`.  The two directions' frames are then put in one order by
TCP's acknowledgement numbers (:func:`_merge`): a response whose first
packet acknowledges all of a request's bytes comes after it, one that does
not comes before it; timestamps decide only where no ACK says anything (a
clock skew between two merged interfaces does not reorder anything).  The
client's FIN is a ``CLOSE`` marker in that order, and a direction whose
framing was found by searching (no SYN) starts with a ``SYNC`` marker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

from kafka_net.capture.model import CLOSE, GAP, REQUEST, RESPONSE, SYNC, Frame
from kafka_net.capture.packet import ACK, FIN, RST, SYN, Packet
from kafka_net.capture.tcp_frames import (
    I32, MAX_FRAME_SIZE, SYNC_TRIES, Flow, Framed, plausible_request, request_correlation_id,
    response_correlation_id)
from kafka_net.protocol.headers import peek_request_header, peek_response_correlation_id
from kafka_net.capture.tcp_stream import FlowStats

__all__ = ["Connection", "FlowStats", "MAX_FRAME_SIZE", "SYNC_TRIES", "reassemble",
           "plausible_request"]


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
    unverifiable_from_ns: int | None = None   # the first gap (lost or unusable bytes)
    not_kafka: bool = False          # the client's bytes are not Kafka requests
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


def reassemble(packets: list[Packet], broker_ports: set[int] | None = None,
               path: str = "") -> list[Connection]:
    """Group packets into connections and rebuild their Kafka frames; see the module
    docstring.  ``packets`` may come from several files in any order; a frame
    whose packet names no file (and a marker) names ``path``."""
    ordered = sorted(packets, key=attrgetter("timestamp_ns"))
    groups: list[_Group] = []
    current: dict[tuple, _Group] = {}
    for p in ordered:
        a, b = (p.src_ip, p.src_port), (p.dst_ip, p.dst_port)
        key = (a, b) if a <= b else (b, a)
        group = current.get(key)
        if p.flags & SYN and not p.flags & ACK:
            if group is not None and group.syn_src is None and group.synack_ack == (
                    p.seq + 1) % 2**32:
                # Its SYN+ACK was stamped earlier (clocks of two interfaces): the same.
                group.syn_src, group.syn_isn = a, p.seq
            elif group is None or group.syn_src != a or group.syn_isn != p.seq:
                group = _Group(a, p.seq)
                current[key] = group
                groups.append(group)
        elif group is None:
            group = _Group(None, None)
            current[key] = group
            groups.append(group)
        if p.flags & SYN and p.flags & ACK and group.synack_ack is None:
            group.synack_ack = p.ack
        group.packets.append(p)
    out: list[Connection] = []
    seen_ids: dict[str, int] = {}
    for group in groups:
        if group.syn_src is None and not any(p.payload_len for p in group.packets):
            continue   # stray packets of a connection we know nothing about
        conn = _build(group, broker_ports or set(), path)
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
    __slots__ = ("syn_src", "syn_isn", "synack_ack", "packets")

    def __init__(self, syn_src, syn_isn) -> None:
        self.syn_src = syn_src
        self.syn_isn = syn_isn
        self.synack_ack: int | None = None
        self.packets: list[Packet] = []


def _build(group: _Group, broker_ports: set[int], path: str = "") -> Connection:
    packets = group.packets
    client, broker, rule = _roles(packets, broker_ports)
    req, resp = Flow(), Flow()
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
    req_ids = {peek_request_header(f.payload)[2] for f in req.frames
               if f.marker is None and len(f.payload) >= 8}
    resp.split(RESPONSE, req_ids)
    if resp.synced_mid_stream and resp.frames and req.frames:
        _drop_requests_before_first_answer(req, resp, conn)
    for flow in (req, resp):
        if flow.synced_mid_stream and flow.frames and flow.frames[0].marker is None:
            _mark_sync(flow)   # (a gap marker first makes the direction suspect anyway)
    conn.not_kafka = req.not_kafka
    for flow, name in ((req, "requests"), (resp, "responses")):
        if flow.stats.unverifiable:
            conn.notes.append(f"{name}: {flow.stats.unverifiable}")
        flow.stats.frames = sum(1 for f in flow.frames if f.marker is None)
        flow.stats.truncated_frames = sum(1 for f in flow.frames if f.truncated)
    if req.not_kafka:
        req.frames, resp.frames = [], []   # the whole connection is something else
    if req.fin_off is not None and (req.frames or resp.frames):
        req.frames.append(Framed(req.fin_ts, b"", 0, False, None, req.fin_off,
                                 req.fin_off + 1, req.fin_ack, CLOSE))
    conn.frames = [_frame(pos, direction, f, req if direction == REQUEST else resp, path)
                   for pos, (direction, f) in enumerate(_merge(req, resp))]
    gaps = [f.timestamp_ns for f in conn.frames if f.marker == GAP or f.after_gap]
    if req.stats.unverifiable or resp.stats.unverifiable:
        gaps += [t for t in (req.unverifiable_ns, resp.unverifiable_ns) if t is not None] \
            or [conn.first_ns]
    conn.unverifiable_from_ns = min(gaps) if gaps else None
    return conn


def _frame(pos: int, direction: int, f: Framed, flow: Flow, path: str = "") -> Frame:
    packet = flow.completing_packet(f.start, f.end) if f.marker is None else None
    return Frame(pos, direction, f.ts, f.payload, f.size, f.truncated,
                 f.gap is not None and f.marker is None, f.gap, f.marker,
                 file=(packet.file if packet else "") or path,
                 frame_number=packet.record + 1 if packet and packet.record >= 0 else 0)


def _merge(req: Flow, resp: Flow):
    """Both directions' frames in one order: by what each side had received, as
    the ACK of the packet that started a frame says (a response that started in
    a packet acknowledging all of a request's bytes comes after it; one that did
    not, before it), timestamps only where ACKs say nothing (requests first on
    ties).  Yields (direction, Framed).

    Gap markers, which may stand for several frames, are placed conservatively:
    a request gap before the first response sent once the broker had any of its
    bytes (answers to the lost requests come after it), a response gap after
    every request sent before the client had all of its bytes (so each request
    whose answer may be in it is waiting when it is met)."""
    qs, rs = req.frames, resp.frames
    q_acks = [resp.offset_of(f.ack) if f.ack is not None else None for f in qs]
    r_acks = [req.offset_of(f.ack) if f.ack is not None else None for f in rs]
    i = j = 0
    while i < len(qs) and j < len(rs):
        q, r = qs[i], rs[j]
        if r_acks[j] is not None:
            request_first = r_acks[j] > q.start if q.marker == GAP else r_acks[j] >= q.end
        elif q_acks[i] is not None:
            request_first = q_acks[i] < r.end
        else:
            request_first = q.ts <= r.ts
        if request_first:
            yield REQUEST, q
            i += 1
        else:
            yield RESPONSE, r
            j += 1
    yield from ((REQUEST, q) for q in qs[i:])
    yield from ((RESPONSE, r) for r in rs[j:])


def _drop_requests_before_first_answer(req: "Flow", resp: "Flow", conn: Connection) -> None:
    """Mid-stream response sync: requests before the one the first framed response
    answers had their responses in bytes that were skipped."""
    first = next((f.payload for f in resp.frames if f.marker is None), b"")
    corr = peek_response_correlation_id(first)
    if corr is None:
        return
    for i, f in enumerate(req.frames):
        if len(f.payload) >= 8 and peek_request_header(f.payload)[2] == corr:
            if i:
                req.stats.dropped_frames += i
                conn.notes.append(
                    f"requests: {i} frame(s) dropped, sent before the request answered by "
                    f"the first whole response captured")
                del req.frames[:i]
            return


def _mark_sync(flow: "Flow") -> None:
    """A SYNC marker just before the direction's first frame: its boundary was found
    by searching, so pairing holds that direction's faults unverifiable until one
    of its frames decodes whole (see :mod:`.pairing`).  It takes the first frame's
    times, offsets and ACK, so :func:`_merge` puts it right before that frame; its
    ``gap`` is the range of bytes skipped before that boundary, its ``size`` how
    many frames those bytes hold (:func:`_skipped_frames`)."""
    first = flow.frames[0]
    flow.frames.insert(0, first._replace(payload=b"", size=_skipped_frames(flow, first.start),
                                         truncated=False, gap=(0, first.start), marker=SYNC))


def _skipped_frames(flow: "Flow", end: int) -> int:
    """How many frames the bytes before the first boundary found (``end``) hold: the
    end of the one the capture started inside, and whole ones the search passed
    (answers to requests sent before the capture, requests answered there).  The
    first segment start whose chain of size prefixes lands exactly on ``end`` says
    where whole frames begin; if none does, one frame (the bytes are not empty)."""
    if end <= 0:
        return 0
    for start in flow.seg_starts[:SYNC_TRIES]:
        if start >= end:
            break
        pos, whole = start, 0
        while pos < end:
            head = flow._known(pos, 4)
            size = I32.unpack(head)[0] if len(head) == 4 else -1
            if not 0 <= size <= MAX_FRAME_SIZE:
                break
            pos, whole = pos + 4 + size, whole + 1
        if pos == end:
            return whole + (start > 0)
    return 1


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
    ids = {request_correlation_id(h) for h in sent if len(h) >= 12 and plausible_request(h)}
    if not ids:
        return 0
    return sum(1 for h in received
               if 4 <= I32.unpack_from(h, 0)[0] <= MAX_FRAME_SIZE
               and response_correlation_id(h) in ids)


