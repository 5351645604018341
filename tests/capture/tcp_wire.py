"""A TCP connection on the wire, packet by packet, for the reassembly tests (not a
test module): ``Wire`` sends, loses and reorders; ``conversation`` is a run of
ApiVersions and Metadata exchanges; ``assert_clean`` checks a connection
reassembled without loss."""

from __future__ import annotations

import random

from kafka_net.capture.pairing import REQUEST, RESPONSE, pair_connection
from kafka_net.capture.pcap import ACK, FIN, PSH, SYN, Packet
from kafka_net.capture.tcp import Connection
from kafka_net.protocol import ApiKey, encode_request, encode_response
from kafka_net.protocol.messages import MESSAGES

CLIENT = ("10.0.0.1", 50123)
BROKER = ("10.0.0.2", 9092)
C, B = 0, 1


class Wire:
    """The packets of one TCP connection in send order, ``step`` ns apart."""

    def __init__(self, client=CLIENT, broker=BROKER, isn_c=1_000, isn_b=700_000,
                 t0=1_000_000_000, step=1_000):
        self.ends = {C: client, B: broker}
        self.seq = {C: isn_c % 2**32, B: isn_b % 2**32}
        self.t = t0
        self.step = step
        self.packets: list[Packet] = []

    def packet(self, side, seq, flags, payload=b"", payload_len=None) -> Packet:
        src, dst = self.ends[side], self.ends[1 - side]
        self.t += self.step
        p = Packet(self.t, src[0], src[1], dst[0], dst[1], seq % 2**32, self.seq[1 - side],
                   flags, payload, len(payload) if payload_len is None else payload_len)
        self.packets.append(p)
        return p

    def handshake(self) -> "Wire":
        self.packet(C, self.seq[C], SYN)
        self.seq[C] += 1
        self.packet(B, self.seq[B], SYN | ACK)
        self.seq[B] += 1
        self.packet(C, self.seq[C], ACK)
        return self

    def send(self, side, data: bytes, mss: int = 1000) -> list[Packet]:
        out = []
        for i in range(0, len(data), mss):
            chunk = data[i:i + mss]
            out.append(self.packet(side, self.seq[side], PSH | ACK, chunk))
            self.seq[side] += len(chunk)
        return out

    def close(self) -> "Wire":
        for side in (C, B):
            self.packet(side, self.seq[side], FIN | ACK)
            self.seq[side] += 1
        return self


def metadata_request(corr: int, topics: int = 2) -> bytes:
    body = {"topics": [{"topic_id": None, "name": f"topic-{corr}-" + "t" * 60}] * topics,
            "allow_auto_topic_creation": True, "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}
    return encode_request(ApiKey.METADATA, 9, corr, body, client_id="tester")


def metadata_response(corr: int) -> bytes:
    body = MESSAGES[ApiKey.METADATA].response.defaults()
    body["cluster_id"] = "cluster-" + "c" * 40
    return encode_response(ApiKey.METADATA, 9, corr, body)


def api_versions_request(corr: int) -> bytes:
    return encode_request(ApiKey.API_VERSIONS, 3, corr, {
        "client_software_name": "kafka-net", "client_software_version": "0.1.0"})


def api_versions_response(corr: int) -> bytes:
    return encode_response(ApiKey.API_VERSIONS, 3, corr,
                           MESSAGES[ApiKey.API_VERSIONS].response.defaults())


def conversation(n: int = 6, mss: int = 40, pipeline: int = 1, wire: Wire | None = None,
                 handshake: bool = True, close: bool = True):
    """(wire, requests, responses): ``n`` exchanges, ``pipeline`` requests in flight."""
    wire = wire or Wire()
    if handshake:
        wire.handshake()
    requests, responses = [], []
    corr = 1
    while corr <= n:
        batch = list(range(corr, min(n, corr + pipeline - 1) + 1))
        for c in batch:
            req = api_versions_request(c) if c == 1 else metadata_request(c)
            requests.append(req)
            wire.send(C, req, mss)
        for c in batch:
            resp = api_versions_response(c) if c == 1 else metadata_response(c)
            responses.append(resp)
            wire.send(B, resp, mss)
        corr += len(batch)
    if close:
        wire.close()
    return wire, requests, responses


def payloads(conn: Connection, direction: int, after_gap: bool | None = False) -> list[bytes]:
    return [f.frame for f in conn.frames if f.direction == direction and f.marker is None
            and (after_gap is None or f.after_gap == after_gap)]


def only(conns: list[Connection]) -> Connection:
    assert len(conns) == 1, conns
    return conns[0]


def assert_clean(conn: Connection, requests, responses):
    assert payloads(conn, REQUEST) == [r[4:] for r in requests]
    assert payloads(conn, RESPONSE) == [r[4:] for r in responses]
    assert [f.position for f in conn.frames] == list(range(len(conn.frames)))
    assert not any(f.truncated or f.after_gap or f.marker == "gap" for f in conn.frames)
    assert conn.unverifiable_from_ns is None and conn.gaps == 0
    report = pair_connection(conn.frames)
    assert report.violations == [] and report.unverifiable_from is None
    assert len(report.pairs) == len(requests) and report.in_flight_at_end == 0
    return report


def shuffle_within_bursts(packets: list[Packet], rng: random.Random, dups: int = 0):
    """Capture order differs from send order inside each one-direction burst, and
    ``dups`` data packets are captured twice (retransmissions): frames must not change."""
    out, burst = [], []

    def flush():
        times = [p.timestamp_ns for p in burst]
        rng.shuffle(times)
        out.extend(_with_ts(p, t) for p, t in zip(burst, times))
        burst.clear()

    for p in packets:
        if burst and (p.src_port != burst[-1].src_port or not p.payload):
            flush()
        burst.append(p)
    flush()
    data = [p for p in out if p.payload]
    for _ in range(dups if data else 0):
        p = rng.choice(data)
        out.append(_with_ts(p, p.timestamp_ns + 1))
    rng.shuffle(out)      # reassemble sorts by timestamp itself
    return out


def _with_ts(p: Packet, ts: int) -> Packet:
    return Packet(ts, p.src_ip, p.src_port, p.dst_ip, p.dst_port, p.seq, p.ack, p.flags,
                  p.payload, p.payload_len, p.record)


def drop(packets, victim):
    """``packets`` without ``victim`` (a lost packet)."""
    return [p for p in packets if p is not victim]
