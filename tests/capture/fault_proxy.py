"""A recording TCP proxy on 127.0.0.1 and a capture writer that injects faults with
known ground truth, for tests/capture/test_faults.py (not a test module).

:class:`RecordingProxy` sits between real clients (kafka-python) and a
kafka-net broker that advertises the proxy's port, and records the exact
bytes of both directions of every connection, in the order the proxy saw
them (causal: it forwards a request before the answer can come back).

:func:`frames_of` cuts the recording into each connection's frames, in that
order; faults on the Kafka level (trailing bytes, a flipped record byte, a
dropped last response, an answered acks=0 Produce) are edits of that list.
:func:`packetize` then writes the TCP packets a capture would have seen
(handshake, one or more segments per frame, correct sequence and
acknowledgement numbers, client FIN then broker FIN), remembering which
packets carry which frame: faults on the TCP level (loss, reordering,
retransmission, skew, fragments, snap length) are edits of the packets, and
the ground truth follows from which frames' packets they touched.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field

from kafka_net.capture.pcap import ACK, FIN, PSH, SYN, Packet
from kafka_net.protocol import ApiKey
from kafka_net.protocol.headers import decode_request_header, peek_request_header
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import Reader

REQUEST, RESPONSE = 0, 1
BROKER_PORT = 9092


class RecordingProxy:
    """Accepts on 127.0.0.1:0, connects each client to ``upstream``, records bytes."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.upstream: int | None = None
        self.lock = threading.Lock()
        self.chunks: list[tuple[int, int, bytes]] = []   # connection, direction, bytes
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.closed = False

    def start(self, upstream_port: int) -> "RecordingProxy":
        self.upstream = upstream_port
        self._spawn(self._accept)
        return self

    def _spawn(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        self.threads.append(t)

    def _accept(self) -> None:
        n = 0
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            broker = socket.create_connection(("127.0.0.1", self.upstream), timeout=30)
            for s in (client, broker):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.sockets.append(s)
            self._spawn(self._pump, n, REQUEST, client, broker)
            self._spawn(self._pump, n, RESPONSE, broker, client)
            n += 1

    def _pump(self, conn: int, direction: int, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            with self.lock:   # recorded before it is forwarded: causal order
                self.chunks.append((conn, direction, data))
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass
        for t in self.threads:
            t.join(timeout=5)


# -- frames ------------------------------------------------------------------------------


@dataclass
class KFrame:
    """One Kafka frame of the recording (size prefix included in ``data``)."""

    direction: int
    data: bytes
    corr: int
    api_key: int = -1           # of the request (responses: their request's)
    api_version: int = -1
    acks0: bool = False


@dataclass
class Conversation:
    frames: list[KFrame]
    client_port: int


def frames_of(chunks: list[tuple[int, int, bytes]]) -> list[Conversation]:
    """Each connection's frames in the order the proxy completed them."""
    bufs: dict[tuple[int, int], bytearray] = {}
    convs: dict[int, list[KFrame]] = {}
    requests: dict[tuple[int, int], KFrame] = {}
    for conn, direction, data in chunks:
        buf = bufs.setdefault((conn, direction), bytearray())
        buf += data
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
            size = struct.unpack_from(">i", buf)[0]
            raw = bytes(buf[:4 + size])
            del buf[:4 + size]
            convs.setdefault(conn, []).append(_kframe(direction, raw, conn, requests))
    return [Conversation(frames, 40000 + conn) for conn, frames in sorted(convs.items())]


def _kframe(direction: int, raw: bytes, conn: int, requests: dict) -> KFrame:
    if direction == REQUEST:
        api_key, version, corr = peek_request_header(raw[4:])
        f = KFrame(REQUEST, raw, corr, api_key, version, produce_acks(raw[4:]) == 0)
        requests[(conn, corr)] = f
        return f
    corr = struct.unpack_from(">i", raw, 4)[0]
    req = requests.get((conn, corr))
    return KFrame(RESPONSE, raw, corr, req.api_key if req else -1,
                  req.api_version if req else -1)


def produce_acks(payload: bytes) -> int | None:
    api_key, version, _ = peek_request_header(payload)
    if api_key != ApiKey.PRODUCE:
        return None
    header, offset = decode_request_header(payload, MESSAGES[ApiKey.PRODUCE].request.flexible)
    return MESSAGES[ApiKey.PRODUCE].request.decode(Reader(payload, offset), version)["acks"]


def records_span(frame: KFrame) -> tuple[int, int] | None:
    """Where the first non-empty record batch sits in a Produce request's bytes."""
    payload = frame.data[4:]
    message = MESSAGES[ApiKey.PRODUCE].request
    _, offset = decode_request_header(payload, message.flexible)
    body = message.decode(Reader(payload, offset), frame.api_version)
    for topic in body["topic_data"]:
        for part in topic["partition_data"]:
            records = bytes(part["records"] or b"")
            if records:
                at = frame.data.find(records)
                return at, at + len(records)
    return None


# -- packets -----------------------------------------------------------------------------


@dataclass
class Capture:
    """Packets of one connection and, per frame index, the packets carrying it."""

    conv: Conversation
    packets: list[Packet]
    carriers: dict[int, list[Packet]] = field(default_factory=dict)
    stream_offsets: dict[int, tuple[int, int]] = field(default_factory=dict)


CLIENT_IP, BROKER_IP = "10.1.0.1", "10.1.0.2"


def packetize(conv: Conversation, mss: int = 700, step_ns: int = 10_000,
              t0: int = 1_700_000_000_000_000_000, close_after_ns: int = 0) -> Capture:
    """``close_after_ns``: how long the client waits before its FIN (a client that
    gives up on a request waits its request timeout first)."""
    ends = {REQUEST: (CLIENT_IP, conv.client_port), RESPONSE: (BROKER_IP, BROKER_PORT)}
    isn = {REQUEST: 1_000_000 + conv.client_port, RESPONSE: 3_000_000_000 + conv.client_port}
    sent = {REQUEST: 0, RESPONSE: 0}
    cap = Capture(conv, [])
    t = [t0]

    def packet(side: int, flags: int, payload: bytes = b"", seq_off: int | None = None):
        src, dst = ends[side], ends[1 - side]
        t[0] += step_ns
        seq = isn[side] + 1 + (sent[side] if seq_off is None else seq_off)
        ack = isn[1 - side] + 1 + sent[1 - side]
        if flags & SYN:
            seq -= 1
            ack = isn[1 - side] + 1 if side == RESPONSE else 0
        p = Packet(t[0], src[0], src[1], dst[0], dst[1], seq % 2**32, ack % 2**32, flags,
                   payload, len(payload))
        cap.packets.append(p)
        return p

    packet(REQUEST, SYN)
    packet(RESPONSE, SYN | ACK)
    packet(REQUEST, ACK)
    for i, f in enumerate(conv.frames):
        start = sent[f.direction]
        cap.stream_offsets[i] = (start, start + len(f.data))
        carriers = []
        for at in range(0, len(f.data), mss):
            chunk = f.data[at:at + mss]
            carriers.append(packet(f.direction, PSH | ACK, chunk))
            sent[f.direction] += len(chunk)
        cap.carriers[i] = carriers
        if f.direction == REQUEST:
            packet(RESPONSE, ACK)          # the broker's pure ACK
    t[0] += close_after_ns
    packet(REQUEST, FIN | ACK)
    sent[REQUEST] += 1
    packet(RESPONSE, FIN | ACK)
    sent[RESPONSE] += 1
    packet(REQUEST, ACK)
    return cap


def retimed(p: Packet, ts: int) -> Packet:
    return Packet(ts, p.src_ip, p.src_port, p.dst_ip, p.dst_port, p.seq, p.ack, p.flags,
                  p.payload, p.payload_len, p.record)


def cut(p: Packet, keep: int) -> Packet:
    return Packet(p.timestamp_ns, p.src_ip, p.src_port, p.dst_ip, p.dst_port, p.seq, p.ack,
                  p.flags, p.payload[:keep], p.payload_len, p.record)
