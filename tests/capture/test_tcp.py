"""TCP reassembly into Kafka frames, on synthetic packets (and synthetic pcap files);
the connections are built with tests/capture/tcp_wire.py, and the Hypothesis
properties are in test_tcp_properties.py."""

from __future__ import annotations

import random

import pytest

from kafka_net.capture.pairing import REQUEST, RESPONSE, SYNC, pair_connection
from kafka_net.capture.pairing_checks import CHECKED
from kafka_net.capture.pcap import ACK, FIN, PSH, RST, SYN, Packet, read_packets
from kafka_net.capture.tcp import Connection, plausible_request, reassemble
from tests.capture.packets import ethernet, ip_packet, pcap_file, pcapng_file
from tests.capture.tcp_wire import (
    B, BROKER, CLIENT, C, Wire, api_versions_request, assert_clean, conversation, drop,
    metadata_request, metadata_response, only, payloads, shuffle_within_bursts)


def test_many_small_segments():
    wire, requests, responses = conversation(n=6, mss=7, pipeline=2)
    conn = only(reassemble(wire.packets))
    assert conn.id == "10.0.0.1:50123-10.0.0.2:9092"
    assert (conn.client, conn.broker, conn.broker_rule) == (
        "10.0.0.1:50123", "10.0.0.2:9092", "syn")
    assert conn.syn and conn.fin and not conn.rst
    assert_clean(conn, requests, responses)
    assert conn.bytes == sum(map(len, requests + responses))
    assert conn.requests.frames == 6 and conn.requests.segments > 100
    # Each frame's timestamp is the packet that completed it: the last chunk of it.
    last_chunk_ts = {}
    for p in wire.packets:
        if p.payload:
            last_chunk_ts[(p.src_port, p.seq + p.payload_len)] = p.timestamp_ns
    ends = {C: 1_001, B: 700_001}
    for f in conn.frames:
        if f.marker:
            continue
        side = C if f.direction == REQUEST else B
        ends[side] += 4 + f.frame_size
        port = CLIENT[1] if side == C else BROKER[1]
        assert f.timestamp_ns == last_chunk_ts[(port, ends[side])]


def test_out_of_order_and_retransmitted_segments():
    wire, requests, responses = conversation(n=5, mss=9, pipeline=3)
    packets = shuffle_within_bursts(wire.packets, random.Random(7), dups=15)
    conn = only(reassemble(packets))
    assert_clean(conn, requests, responses)
    assert conn.retransmissions == 15
    assert conn.requests.out_of_order_segments + conn.responses.out_of_order_segments > 0


def test_overlapping_retransmission_is_trimmed():
    wire = Wire().handshake()
    req = metadata_request(1)
    sent = wire.send(C, req, 50)
    # A repacketised retransmission covering the end of one segment and part of the next.
    wire.packet(C, sent[1].seq + 20, PSH | ACK, req[70:130])
    resp = metadata_response(1)
    wire.send(B, resp, 50)
    conn = only(reassemble(wire.packets))
    assert_clean(conn, [req], [resp])
    assert conn.requests.retransmitted_bytes == 60 and conn.retransmissions == 1


@pytest.mark.parametrize("isn_c,isn_b", [(2**32 - 50, 2**32 - 3), (2**32 - 1, 0)])
def test_sequence_numbers_wrap_around(isn_c, isn_b):
    wire, requests, responses = conversation(n=4, mss=30, wire=Wire(isn_c=isn_c, isn_b=isn_b))
    assert_clean(only(reassemble(wire.packets)), requests, responses)


def _assert_unverifiable_not_mismatched(conn: Connection):
    """Lost bytes: no violation, the gap is reported, and checking goes on after it."""
    report = pair_connection(conn.frames)
    assert report.violations == []
    first_gap = next(f.position for f in conn.frames if f.after_gap or f.marker == "gap")
    assert report.unverifiable_from == first_gap
    assert conn.unverifiable_from_ns is not None
    assert report.in_flight_at_end == 0
    return report


def metadata_exchanges_losing(segment: int, close: bool):
    """Six Metadata exchanges in 40-byte segments: (wire, requests, responses, the
    packet to lose: segment ``segment`` of request 4)."""
    wire = Wire().handshake()
    requests = [metadata_request(c) for c in range(1, 7)]
    responses = [metadata_response(c) for c in range(1, 7)]
    victim = None
    for i, (req, resp) in enumerate(zip(requests, responses)):
        sent = wire.send(C, req, 40)
        if i == 3:
            victim = sent[segment]
        wire.send(B, resp, 40)
    if close:
        wire.close()
    return wire, requests, responses, victim


def test_dropped_segment_inside_a_request():
    # Segment 2: in the middle of request 4's body.
    wire, requests, responses, victim = metadata_exchanges_losing(2, close=True)
    conn = only(reassemble(drop(wire.packets, victim)))
    assert conn.requests.gaps == 1 and conn.requests.gap_bytes == 40
    assert "missing from the capture" in conn.requests.unverifiable
    # Request 4 is cut where the bytes are missing, and framing goes on (the size
    # prefix says where request 5 starts): the other frames are exact.
    assert payloads(conn, REQUEST) == [r[4:] for r in requests[:3] + requests[4:]]
    assert payloads(conn, RESPONSE) == [r[4:] for r in responses]
    (cut,) = [f for f in conn.frames if f.direction == REQUEST and f.after_gap]
    assert cut.truncated and cut.frame == requests[3][4:2 * 40]
    assert cut.gap == (sum(map(len, requests[:3])) + 80, sum(map(len, requests[:3])) + 120)
    report = _assert_unverifiable_not_mismatched(conn)
    assert len(report.pairs) == 6     # request 4's header survived: it still pairs
    assert report.states[cut.position].state == "unverifiable"


def test_dropped_segment_holding_a_size_prefix_resyncs_later():
    # Segment 0: the start of request 4, size prefix included.
    wire, requests, _, victim = metadata_exchanges_losing(0, close=False)
    conn = only(reassemble(drop(wire.packets, victim)))
    assert "frame boundary lost" in conn.requests.unverifiable
    # Resynchronised on request 5: everything but request 4 is framed and checked.
    assert payloads(conn, REQUEST) == [r[4:] for r in requests[:3] + requests[4:]]
    assert conn.requests.skipped_bytes == len(requests[3]) - 40
    report = _assert_unverifiable_not_mismatched(conn)
    assert [p.correlation_id for p in report.pairs] == [1, 2, 3, 5, 6]
    # Response 4 answers the lost request: unverifiable, not a violation.
    r4 = next(f for f in conn.frames if f.direction == RESPONSE and f.frame[:4] ==
              b"\0\0\0\x04")
    assert report.states[r4.position].state == "unverifiable"


def test_without_acks_a_loss_taints_everything_after_the_byte_before_it():
    wire = Wire().handshake()
    requests = [metadata_request(c) for c in range(1, 5)]
    victim = None
    for i, req in enumerate(requests):
        sent = wire.send(C, req, 40)
        victim = sent[0] if i == 2 else victim
        wire.send(B, metadata_response(i + 1), 40)
    no_acks = [p if p.flags & SYN else Packet(
        p.timestamp_ns, p.src_ip, p.src_port, p.dst_ip, p.dst_port, p.seq, 0, p.flags & ~ACK,
        p.payload, p.payload_len) for p in wire.packets if p is not victim]
    report = _assert_unverifiable_not_mismatched(only(reassemble(no_acks)))
    # Request 3 was lost (framing resumes at request 4); its answer is unverifiable.
    assert [p.correlation_id for p in report.pairs] == [1, 2, 4]
    assert sorted(s.state for s in report.states.values()).count("unverifiable") == 1


def test_dropped_response_segment():
    wire = Wire().handshake()
    requests, responses, victim = [], [], None
    for c in range(1, 6):
        requests.append(metadata_request(c))
        wire.send(C, requests[-1], 100)
        responses.append(metadata_response(c))
        sent = wire.send(B, responses[-1], 30)
        if c == 2:
            victim = sent[1]
    conn = only(reassemble(drop(wire.packets, victim)))
    assert conn.responses.gaps == 1 and conn.requests.gaps == 0
    report = _assert_unverifiable_not_mismatched(conn)
    assert len(report.pairs) == 5     # response 2's header survived the loss
    (cut,) = [f for f in conn.frames if f.after_gap]
    assert report.states[cut.position].state == "unverifiable"


def test_lost_tail_before_fin_is_a_gap_and_capture_end_is_not():
    wire = Wire().handshake()
    req, resp = metadata_request(1), metadata_response(1)
    wire.send(C, req)
    sent = wire.send(B, resp, 20)
    wire.close()
    with_fin = drop(wire.packets, sent[-1])
    conn = only(reassemble(with_fin))
    assert conn.responses.gaps == 1
    _assert_unverifiable_not_mismatched(conn)
    # Without the FIN the capture just stopped: the response is kept, truncated.
    stopped = [p for p in with_fin if not p.flags & FIN]
    conn = only(reassemble(stopped))
    assert conn.gaps == 0 and conn.unverifiable_from_ns is None
    (f,) = payloads(conn, RESPONSE)
    assert resp[4:].startswith(f) and len(f) < len(resp) - 4
    assert conn.responses.incomplete_tail_bytes == len(resp) - len(sent[-1].payload)
    report = pair_connection(conn.frames)
    assert report.violations == [] and len(report.pairs) == 1


def test_acks_reveal_bytes_lost_at_the_end():
    wire = Wire().handshake()
    req1, req2 = metadata_request(1), metadata_request(2)
    wire.send(C, req1)
    wire.send(B, metadata_response(1))
    lost = wire.send(C, req2)             # never captured, but the broker acks it ...
    wire.send(B, metadata_response(2))    # ... and answers it
    conn = only(reassemble(drop(wire.packets, lost[0])))
    assert conn.requests.gaps == 1 and conn.requests.gap_bytes == len(req2)
    report = _assert_unverifiable_not_mismatched(conn)
    assert len(report.pairs) == 1


def test_syn_ack_says_where_the_client_stream_starts():
    wire = Wire().handshake()
    requests = [metadata_request(c) for c in (1, 2, 3)]
    responses = [metadata_response(c) for c in (1, 2, 3)]
    first = None
    for req, resp in zip(requests, responses):
        sent = wire.send(C, req, 60)
        first = first or sent[0]
        wire.send(B, resp)
    # The client's SYN and its first segment were not captured: without the SYN+ACK
    # this would look like a capture started mid-stream; with it, it is a gap.
    packets = [p for p in wire.packets[1:] if p is not first]
    conn = only(reassemble(packets))
    assert not conn.syn and conn.broker_rule == "syn-ack"
    assert conn.requests.gaps == 1 and conn.requests.gap_bytes == 60
    report = pair_connection(conn.frames)
    assert report.violations == [] and report.unverifiable_from == 0


def test_capture_stopped_inside_a_size_prefix():
    wire = Wire().handshake()
    req = metadata_request(1)
    wire.send(C, req)
    wire.packet(C, wire.seq[C], PSH | ACK, b"\x00\x00")
    conn = only(reassemble(wire.packets))
    assert payloads(conn, REQUEST) == [req[4:]] and conn.requests.incomplete_tail_bytes == 2


@pytest.mark.parametrize("with_ports", [True, False])
def test_capture_started_mid_stream(with_ports):
    wire, requests, responses = conversation(n=9, mss=50, pipeline=3)
    # Start capturing in the middle of request 2 (long after the handshake).
    start = next(i for i, p in enumerate(wire.packets)
                 if p.payload and p.payload in requests[1][50:] and p.payload[:4] !=
                 requests[1][:4])
    conn = only(reassemble(wire.packets[start:], {9092} if with_ports else None))
    assert not conn.syn
    assert conn.broker == "10.0.0.2:9092"
    assert conn.broker_rule == ("broker_ports" if with_ports else "request_header")
    report = pair_connection(conn.frames)
    assert report.violations == [] and report.unverifiable_from is None
    # Each direction's found boundary is marked (SYNC, with the bytes skipped before
    # it); the first frame of each decodes whole, so every frame is checked.
    for direction in (REQUEST, RESPONSE):
        mine = [f for f in conn.frames if f.direction == direction]
        assert mine[0].marker == SYNC and mine[1].marker is None
        assert mine[0].gap[1] > 0 and mine[0].timestamp_ns == mine[1].timestamp_ns
    assert {s.state for s in report.states.values()} == {CHECKED}
    # Requests 1-2 started before the capture; responses 1-2 answer them: left out.
    assert [p.correlation_id for p in report.pairs] == list(range(3, 10))
    assert payloads(conn, REQUEST) == [r[4:] for r in requests[2:]]
    assert payloads(conn, RESPONSE) == [r[4:] for r in responses[2:]]
    assert conn.requests.skipped_bytes > 0 and conn.responses.skipped_bytes > 0


def test_mid_stream_without_any_request_is_unverifiable():
    wire, _requests, responses = conversation(n=3, mss=50)
    only_responses = [p for p in wire.packets if p.src_port == 9092 and p.payload]
    conn = only(reassemble(only_responses, {9092}))
    assert conn.frames == [] and conn.unverifiable_from_ns is not None
    assert "no Kafka frame boundary" in conn.responses.unverifiable


def test_two_interleaved_connections():
    w1, req1, resp1 = conversation(n=4, mss=25, wire=Wire(t0=1_000_000, step=1000))
    w2, req2, resp2 = conversation(n=3, mss=33, wire=Wire(
        client=("10.0.0.3", 41000), isn_c=5, isn_b=9, t0=1_000_500, step=1000))
    conns = reassemble(w2.packets + w1.packets)
    assert [c.id for c in conns] == ["10.0.0.1:50123-10.0.0.2:9092",
                                     "10.0.0.3:41000-10.0.0.2:9092"]
    assert_clean(conns[0], req1, resp1)
    assert_clean(conns[1], req2, resp2)


def test_port_reused_for_a_new_connection():
    w = Wire(isn_c=100, isn_b=200)
    _, req1, resp1 = conversation(n=2, wire=w)
    w.seq = {C: 900_000, B: 5_000_000}
    _, req2, resp2 = conversation(n=3, wire=w)
    conns = reassemble(w.packets)
    assert [c.id for c in conns] == ["10.0.0.1:50123-10.0.0.2:9092",
                                     "10.0.0.1:50123-10.0.0.2:9092#2"]
    assert_clean(conns[0], req1, resp1)
    assert_clean(conns[1], req2, resp2)


def test_retransmitted_syn_is_the_same_connection():
    w = Wire()
    w.packet(C, w.seq[C], SYN)
    _, requests, responses = conversation(n=2, wire=w)
    assert_clean(only(reassemble(w.packets)), requests, responses)


def _to_records(packets):
    return [(p.timestamp_ns, ethernet(ip_packet(p.src_ip, p.src_port, p.dst_ip, p.dst_port,
                                                 p.seq, p.ack, p.flags, p.payload)))
            for p in packets]


def test_flow_split_across_rotated_files_is_joined():
    wire, requests, responses = conversation(n=6, mss=30, pipeline=2)
    records = _to_records(wire.packets)
    half = len(records) // 2 + 1
    first = pcap_file(records[:half], nano=True)
    second = pcapng_file(records[half:], endian=">")      # formats may differ too
    for files in ((first, second), (second, first)):
        packets = []
        for data in files:
            got, problems = read_packets(data)
            assert problems == []
            packets += got
        assert_clean(only(reassemble(packets)), requests, responses)
    # A missing middle file is a gap: unverifiable, not mismatched.
    third = len(records) // 3
    packets = (read_packets(pcap_file(records[:third], nano=True))[0]
               + read_packets(pcap_file(records[2 * third:], nano=True))[0])
    _assert_unverifiable_not_mismatched(only(reassemble(packets)))


def test_http_is_unverifiable_not_a_crash():
    wire = Wire(broker=("10.0.0.2", 80)).handshake()
    wire.send(C, b"GET / HTTP/1.1\r\nHost: example\r\n\r\n", 10)
    wire.send(B, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", 10)
    wire.close()
    for packets in (wire.packets, wire.packets[3:]):        # with and without handshake
        conn = only(reassemble(packets))
        assert conn.frames == [] and not conn.verifiable
        assert conn.requests.unverifiable and conn.responses.unverifiable
        assert conn.broker == "10.0.0.2:80"
        assert pair_connection(conn.frames).violations == []


def test_tls_and_garbage_after_good_frames():
    wire = Wire().handshake()
    wire.send(C, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40)
    conn = only(reassemble(wire.packets))
    assert conn.frames == [] and "not Kafka" in conn.requests.unverifiable
    wire = Wire().handshake()
    req, resp = metadata_request(1), metadata_response(1)
    wire.send(C, req)
    wire.send(B, resp)
    wire.send(C, b"\xff\xff\xff\xf0" + b"junk" * 10)
    wire.send(B, resp)
    conn = only(reassemble(wire.packets))
    assert "frame size -16" in conn.requests.unverifiable
    report = pair_connection(conn.frames)
    # After the garbage, the second copy of response 1 may answer a request in it.
    assert report.violations == [] and len(report.pairs) == 1
    assert report.unverifiable_from == 2
    assert [s.state for s in report.states.values()].count("unverifiable") == 1


def test_broker_side_rules():
    wire, requests, responses = conversation(n=3, mss=40, handshake=False,
                                             wire=Wire(client=("10.0.0.1", 1234),
                                                       broker=("10.0.0.2", 60000)))
    conn = only(reassemble(wire.packets))
    assert (conn.broker, conn.broker_rule) == ("10.0.0.2:60000", "request_header")
    conn = only(reassemble(wire.packets, {1234}))
    assert (conn.broker, conn.broker_rule) == ("10.0.0.1:1234", "broker_ports")
    # A SYN outranks broker_ports.
    w = Wire(client=("10.0.0.1", 1234), broker=("10.0.0.2", 60000))
    _, requests, responses = conversation(n=2, wire=w)
    conn = only(reassemble(w.packets, {1234}))
    assert (conn.broker, conn.broker_rule) == ("10.0.0.2:60000", "syn")
    assert_clean(conn, requests, responses)
    # The SYN+ACK alone says it too.
    conn = only(reassemble(w.packets[1:]))
    assert (conn.broker, conn.broker_rule) == ("10.0.0.2:60000", "syn-ack")
    # Nothing to go by: the lower port.
    w = Wire(client=("10.0.0.1", 40000), broker=("10.0.0.2", 80))
    w.send(C, b"hello there", 5)
    w.send(B, b"general kenobi", 5)
    conn = only(reassemble(w.packets))
    assert (conn.broker, conn.broker_rule) == ("10.0.0.2:80", "port_order")


def test_ipv6_connection_id():
    wire, requests, responses = conversation(n=2, wire=Wire(
        client=("2001:db8::1", 40000), broker=("2001:db8::2", 9092)))
    conn = only(reassemble(wire.packets))
    assert conn.id == "[2001:db8::1]:40000-[2001:db8::2]:9092"
    assert_clean(conn, requests, responses)


def _cut(packets, keep: int):
    return [Packet(p.timestamp_ns, p.src_ip, p.src_port, p.dst_ip, p.dst_port, p.seq, p.ack,
                   p.flags, p.payload[:keep], p.payload_len) for p in packets]


def test_snaplen_cut_frames_stay_verifiable_while_headers_fit():
    wire, requests, responses = conversation(n=5, mss=200)
    conn = only(reassemble(_cut(wire.packets, 30)))
    assert conn.gaps == 0 and conn.unverifiable_from_ns is None
    assert conn.requests.cut_bytes > 0
    assert all(f.truncated for f in conn.frames if f.frame_size > 30)
    report = pair_connection(conn.frames)
    assert report.violations == [] and len(report.pairs) == 5
    # Cut to 10 bytes, the request headers are incomplete: unverifiable.
    conn = only(reassemble(_cut(wire.packets, 10)))
    assert "snap length cut the header" in conn.requests.unverifiable
    report = pair_connection(conn.frames)
    assert report.violations == [] and report.unverifiable_from == 0


def test_acks_order_the_directions_and_rst_is_noted():
    """The response's timestamp is earlier than the request's (clocks of two
    interfaces merged), but its ACK covers the request: it comes after it."""
    wire = Wire()
    wire.handshake()
    req, resp = metadata_request(1), metadata_response(1)
    (q,) = wire.send(C, req)
    (r,) = wire.send(B, resp)
    wire.packet(C, wire.seq[C], RST)
    skewed = [_moved(p, -1_500) if p is r else p for p in wire.packets]
    conn = only(reassemble(skewed))
    assert [f.direction for f in conn.frames] == [REQUEST, RESPONSE] and conn.rst
    assert pair_connection(conn.frames).violations == []
    # Without ACKs the timestamps decide: the response looks first.
    no_acks = [p if p.flags & SYN else Packet(
        p.timestamp_ns, p.src_ip, p.src_port, p.dst_ip, p.dst_port, p.seq, 0, p.flags & ~ACK,
        p.payload, p.payload_len) for p in skewed]
    conn = only(reassemble(no_acks))
    assert [f.direction for f in conn.frames] == [RESPONSE, REQUEST]


def _moved(p: Packet, by: int) -> Packet:
    return Packet(p.timestamp_ns + by, p.src_ip, p.src_port, p.dst_ip, p.dst_port, p.seq,
                  p.ack, p.flags, p.payload, p.payload_len)


def test_plausible_request():
    assert plausible_request(metadata_request(7)[:16])
    assert plausible_request(api_versions_request(1)[:8])
    assert not plausible_request(b"GET / HTTP/1.1\r\n")
    assert not plausible_request(metadata_response(7)[:3])
    assert not plausible_request(b"\x00\x00\x00\x20\x00\x03\x00\x09\x00\x00\x00\x01\x7f\xff")


def test_stray_packets_without_data_make_no_connection():
    w = Wire()
    w.packet(C, 5, ACK)
    w.packet(B, 9, RST)
    assert reassemble(w.packets) == []
    assert reassemble([]) == []
