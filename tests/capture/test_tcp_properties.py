"""TCP reassembly properties (Hypothesis): reordering, duplicates and losses never
make a wrong frame, and arbitrary packets never raise.  The example-based
tests are in test_tcp.py."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafka_net.capture.pairing import pair_connection
from kafka_net.capture.pcap import ACK, FIN, PSH, RST, SYN, Packet
from kafka_net.capture.tcp import reassemble
from tests.capture.tcp_wire import (
    assert_clean, conversation, drop, metadata_request, metadata_response, only,
    shuffle_within_bursts)



@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), n=st.integers(1, 6), mss=st.integers(1, 300),
       pipeline=st.integers(1, 4), dups=st.integers(0, 10))
def test_reordering_and_duplicates_never_change_the_frames(seed, n, mss, pipeline, dups):
    wire, requests, responses = conversation(n=n, mss=mss, pipeline=pipeline)
    packets = shuffle_within_bursts(wire.packets, random.Random(seed), dups)
    assert_clean(only(reassemble(packets)), requests, responses)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), n=st.integers(1, 6), mss=st.integers(3, 200),
       pipeline=st.integers(1, 3), drops=st.integers(1, 4), skip=st.integers(0, 30),
       handshake=st.booleans())
# Boundaries found after lost bytes inside a request, reading its client id as a
# header (one cut by the end of the data), then the client's FIN: unverifiable.
@example(seed=31972, n=5, mss=3, pipeline=1, drops=3, skip=29, handshake=True)
@example(seed=120, n=5, mss=3, pipeline=1, drops=1, skip=0, handshake=False)
@example(seed=380395535, n=6, mss=3, pipeline=1, drops=2, skip=7, handshake=True)
# The responses' size prefix lost and never found again, the requests sent after it
# still waiting at the client's FIN: unverifiable, not unanswered.
@example(seed=334, n=4, mss=166, pipeline=1, drops=4, skip=0, handshake=False)
# No handshake and no broker port: the roles guessed wrong, and a response's bytes
# searched as requests found a boundary (correlation id 0 also starts a segment
# of the other side): the SYNC marker keeps those frames unverifiable.
@example(seed=1, n=6, mss=23, pipeline=1, drops=4, skip=23, handshake=False)
def test_dropped_packets_never_give_violations(seed, n, mss, pipeline, drops, skip,
                                               handshake):
    """Lost packets (anywhere, also at the start) make frames unverifiable, never wrong."""
    wire, _, _ = conversation(n=n, mss=mss, pipeline=pipeline, handshake=handshake)
    rng = random.Random(seed)
    packets = wire.packets[skip:]
    data = [p for p in packets if p.payload]
    for victim in rng.sample(data, min(drops, len(data))):
        packets = drop(packets, victim)
    for conn in reassemble(packets, rng.choice([None, {9092}])):
        report = pair_connection(conn.frames)
        assert report.violations == [], (report.violations, conn)


_ENDS = [("10.0.0.1", 50000), ("10.0.0.2", 9092), ("10.0.0.3", 9092)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(
    st.integers(0, 50), st.sampled_from([(0, 1), (1, 0), (2, 1), (0, 2)]),
    st.sampled_from([0, 1, 2**31, 2**32 - 5, 1000]), st.integers(0, 3000),
    st.sampled_from([ACK, PSH | ACK, SYN, SYN | ACK, FIN | ACK, RST]),
    st.one_of(st.binary(max_size=40), st.sampled_from(
        [metadata_request(3)[:30], metadata_response(3), b"\x00\x00\x00\x04", b""])),
    st.integers(0, 50)), max_size=40), st.sampled_from([None, {9092}, {50000}]))
def test_arbitrary_packets_never_raise(items, ports):
    packets = []
    for ts, (s, d), base, delta, flags, payload, extra in items:
        src, dst = _ENDS[s], _ENDS[d]
        packets.append(Packet(ts, src[0], src[1], dst[0], dst[1], (base + delta) % 2**32,
                              base, flags, payload, len(payload) + extra % 3))
    for conn in reassemble(packets, ports):
        assert [f.position for f in conn.frames] == list(range(len(conn.frames)))
        pair_connection(conn.frames)
