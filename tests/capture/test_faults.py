"""Faults injected into captures of real client traffic, checked against ground truth.

kafka-python producers (acks=1 plain, acks=0 gzip) and a consumer talk to a
kafka-net broker through a recording proxy on 127.0.0.1
(tests/capture/fault_proxy.py).  From the recorded byte streams the tests
write TCP packets as a capture would hold them, inject one kind of fault,
and run the capture pipeline (reassembly, then the per-connection checks).
For each kind: every injected violation is found (recall 100%), nothing else
is reported (no false positive), and the coverage shares are within 1% of
what the ground truth says each frame's state must be.
"""

from __future__ import annotations

import random
import struct
from collections import Counter

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafka_net.capture.pairing import pair_connection
from kafka_net.capture.pcap import read_packets
from kafka_net.capture.tcp import reassemble
from kafka_net.config import parse_listeners
from kafka_net.protocol import ApiKey, encode_response
from kafka_net.protocol.messages import MESSAGES
from kafka_net.spark_jobs import transforms
from tests.capture.fault_proxy import (
    BROKER_PORT, REQUEST, RESPONSE, Conversation, KFrame, RecordingProxy, cut, frames_of,
    packetize, records_span, retimed)
from tests.capture.packets import ethernet, ipv4, pcap_file, tcp_header
from tests.capture.tcp_wire import shuffle_within_bursts
from tests.support import make_config, running_server

TOPIC = "faults"
TIMEOUT_S = 20


def record_workload() -> list[Conversation]:
    """Real clients through the proxy: each connection's frames."""
    proxy = RecordingProxy()
    config = make_config(
        advertised_listeners=parse_listeners(f"PLAINTEXT://127.0.0.1:{proxy.port}"),
        group_initial_rebalance_delay_ms=0)
    try:
        with running_server(config) as server:
            proxy.start(server.bound_port())
            boot = f"127.0.0.1:{proxy.port}"
            producer = KafkaProducer(bootstrap_servers=boot, acks=1, linger_ms=0)
            for i in range(60):
                producer.send(TOPIC, key=b"k%d" % i, value=b"value %d " % i * 8).get(TIMEOUT_S)
            producer.close(timeout=5)
            quiet = KafkaProducer(bootstrap_servers=boot, acks=0, linger_ms=0,
                                  compression_type="gzip")
            for i in range(15):
                quiet.send(TOPIC, value=b"fire and forget %d " % i * 4)
                quiet.flush(TIMEOUT_S)
            quiet.close(timeout=5)
            consumer = KafkaConsumer(bootstrap_servers=boot, fetch_max_wait_ms=50,
                                     max_partition_fetch_bytes=2048)
            tp = TopicPartition(TOPIC, 0)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            got = 0
            for _ in range(200):
                got += sum(len(r) for r in consumer.poll(timeout_ms=100).values())
                if got >= 75:
                    break
            consumer.close()
            assert got >= 75
    finally:
        proxy.close()
    return frames_of(proxy.chunks)


@pytest.fixture(scope="module")
def recorded() -> list[Conversation]:
    return record_workload()


# -- ground truth --------------------------------------------------------------------------


def _known(api_key: int, version: int, side: str) -> bool:
    message = MESSAGES.get(api_key)
    if message is None:
        return False
    valid = getattr(message, side).valid
    return version in valid or (api_key == ApiKey.API_VERSIONS and side == "response")


def truth(conv: Conversation, head_lost=(), body_lost=(), cut_frames=()):
    """(expected violations {(port, check, corr)}, expected states Counter) of one
    connection: frames whose first segment was lost are not seen; frames with
    other bytes lost are unverifiable, and so is the partner of a frame not seen;
    frames the snap length cut are header only; the rest are checked.  A request
    left unanswered when the client closes is unanswered_before_close."""
    port = conv.client_port
    answers = {f.corr: i for i, f in enumerate(conv.frames) if f.direction == RESPONSE}
    asked = {f.corr: i for i, f in enumerate(conv.frames) if f.direction == REQUEST}
    violations, states = set(), Counter()
    for i, f in enumerate(conv.frames):
        partner = answers.get(f.corr) if f.direction == REQUEST else asked.get(f.corr)
        side = "request" if f.direction == REQUEST else "response"
        if i in head_lost:
            continue
        if i in body_lost or partner in head_lost:
            states["unverifiable"] += 1
        elif i in cut_frames or not _known(f.api_key, f.api_version, side):
            states["header_only"] += 1
        else:
            states["checked"] += 1
        if f.direction == REQUEST and partner is None and not f.acks0:
            violations.add((port, "unanswered_before_close", f.corr))
    return violations, states


def checked(captures, packets_of=lambda c: c.packets):
    """Run the pipeline on each capture: ({(port, check, corr)}, states Counter)."""
    found, states = set(), Counter()
    for cap in captures:
        conns = reassemble(packets_of(cap), {BROKER_PORT})
        assert len(conns) == 1, conns
        report = pair_connection(conns[0].frames)
        found |= {(cap.conv.client_port, v.check, v.correlation_id) for v in report.violations}
        assert len(report.violations) == len(
            {(v.check, v.correlation_id) for v in report.violations}), report.violations
        states.update({k: v for k, v in report.state_counts().items() if v})
    return found, states


def assert_matches(found, states, expected, expected_states):
    missed = expected - found
    false_alarms = found - expected
    assert not missed, f"recall below 100%: {sorted(missed)}"
    assert not false_alarms, f"false positives: {sorted(false_alarms)}"
    total, truth_total = sum(states.values()), sum(expected_states.values())
    assert abs(total - truth_total) <= 0.01 * truth_total, (states, expected_states)
    for state in ("checked", "header_only", "unverifiable", "not_kafka"):
        share = states[state] / total if total else 0
        truth_share = expected_states[state] / truth_total if truth_total else 0
        assert abs(share - truth_share) <= 0.01, (state, states, expected_states)


def clean_truth(convs):
    expected, states = set(), Counter()
    for conv in convs:
        v, s = truth(conv)
        expected |= v
        states.update(s)
    return expected, states


def lose_segments(convs, rng: random.Random, rate: float, mss: int):
    """Each conversation in segments of ``mss`` bytes, each data segment lost with
    probability ``rate``: (captures, expected violations, expected states), a frame
    losing its first segment unseen, one losing a later segment unverifiable."""
    captures, expected, states = [], set(), Counter()
    for conv in convs:
        cap = packetize(conv, mss=mss)
        data = [p for p in cap.packets if p.payload]
        lost = {id(p) for p in data if rng.random() < rate}
        head = {i for i, ps in cap.carriers.items() if id(ps[0]) in lost}
        body = {i for i, ps in cap.carriers.items()
                if i not in head and any(id(p) in lost for p in ps)}
        cap.packets = [p for p in cap.packets if id(p) not in lost]
        v, s = truth(conv, head, body)
        captures.append(cap)
        expected |= v
        states.update(s)
    return captures, expected, states


def assert_reordering_is_harmless(convs, rng: random.Random, mss: int) -> None:
    """Segments of ``mss`` bytes shuffled within each burst: found and counted as
    the clean capture's ground truth says."""
    captures = [packetize(c, mss=mss) for c in convs]
    found, states = checked(captures, lambda c: shuffle_within_bursts(c.packets, rng, 0))
    assert_matches(found, states, *clean_truth(convs))


def snap(convs, keep: int):
    """Each conversation in 600-byte segments, to be read with a snap length of
    ``keep`` bytes of TCP payload (:func:`snapped`): (captures, expected violations,
    expected states), a frame with a packet longer than that header only."""
    captures, expected, states = [], set(), Counter()
    for conv in convs:
        cap = packetize(conv, mss=600)
        cut_frames = {i for i, ps in cap.carriers.items()
                      if any(len(p.payload) > keep for p in ps)}
        v, s = truth(conv, cut_frames=cut_frames)
        captures.append(cap)
        expected |= v
        states.update(s)
    return captures, expected, states


def snapped(cap, keep: int):
    """The capture's packets as a pcap with a snap length of ``keep`` bytes of TCP
    payload (Ethernet, IPv4 and TCP headers of 14, 20 and 20 bytes) reads them."""
    data = pcap_file(_pcap_records(cap, False, random.Random(0)), nano=True,
                     snaplen=14 + 20 + 20 + keep)
    packets, problems = read_packets(data)
    assert problems == []
    return packets


# -- the recording itself ----------------------------------------------------------------


def test_the_workload_has_what_the_faults_need(recorded):
    frames = [f for conv in recorded for f in conv.frames]
    kinds = Counter((f.direction, f.api_key) for f in frames)
    assert kinds[(REQUEST, ApiKey.PRODUCE)] >= 75 and kinds[(RESPONSE, ApiKey.FETCH)] >= 2
    assert sum(f.acks0 for f in frames) == 15
    assert len(frames) >= 150


def test_a_clean_capture_is_clean_and_fully_checked(recorded):
    found, states = checked([packetize(c) for c in recorded])
    assert_matches(found, states, *clean_truth(recorded))


# -- TCP-level faults -----------------------------------------------------------------------


@pytest.mark.parametrize("seed,rate", [(1, 0.01), (2, 0.02), (3, 0.05), (7, 0.08)])
def test_segment_loss(recorded, seed, rate):
    """1-8% of data segments lost: checking goes on after each gap; requests whose
    answers were lost are unverifiable, never violations."""
    # mss: frames of one or several segments
    captures, expected, states = lose_segments(recorded, random.Random(seed), rate,
                                               mss=120 + 60 * seed)
    assert sum(states.values()) < sum(len(c.frames) for c in recorded)  # something lost
    found, got = checked(captures)
    assert_matches(found, got, expected, states)


def test_reordered_segments(recorded):
    assert_reordering_is_harmless(recorded, random.Random(5), mss=90)


def test_retransmissions(recorded):
    """Duplicates of 10% of the data segments, and 5% first lost then resent."""
    rng = random.Random(6)

    def resent(cap):
        out = []
        for p in cap.packets:
            if p.payload and rng.random() < 0.05:
                out.append(retimed(p, p.timestamp_ns + 35_000))     # the original lost
                continue
            out.append(p)
            if p.payload and rng.random() < 0.1:
                out.append(retimed(p, p.timestamp_ns + 5_000))
        return out

    captures = [packetize(c, mss=150) for c in recorded]
    found, states = checked(captures, resent)
    assert_matches(found, states, *clean_truth(recorded))


def test_200us_skew_between_directions(recorded):
    """The broker's packets stamped 200 µs early (two interfaces' clocks merged):
    responses look older than their requests, the ACKs put them right."""
    def skewed(cap):
        return [retimed(p, p.timestamp_ns - 200_000) if p.src_port == BROKER_PORT else p
                for p in cap.packets]

    captures = [packetize(c) for c in recorded]
    early = 0
    for cap in captures:
        req_ts = {}
        for p in skewed(cap):
            if p.payload and p.src_port != BROKER_PORT:
                req_ts.setdefault(p.seq, p.timestamp_ns)
        early += sum(1 for p in skewed(cap) if p.payload and p.src_port == BROKER_PORT
                     and p.timestamp_ns < max(req_ts.values(), default=0))
    assert early > 0     # timestamps alone would misorder
    found, states = checked(captures, skewed)
    assert_matches(found, states, *clean_truth(recorded))


def _pcap_records(cap, fragment: bool, rng: random.Random):
    """The capture as Ethernet/IPv4 records; with ``fragment``, packets over 200 bytes
    are sent as 3 IP fragments in shuffled order."""
    records = []
    for n, p in enumerate(cap.packets):
        tcp = tcp_header(p.src_port, p.dst_port, p.seq, p.ack, p.flags) + p.payload
        if not fragment or len(tcp) <= 200:
            records.append((p.timestamp_ns, ethernet(ipv4(p.src_ip, p.dst_ip, tcp, ident=n))))
            continue
        unit = (len(tcp) // 3 + 7) // 8 * 8
        pieces = []
        for at in range(0, len(tcp), unit):
            more = 0x2000 if at + unit < len(tcp) else 0
            pieces.append(ethernet(ipv4(p.src_ip, p.dst_ip, tcp[at:at + unit],
                                        frag=more | at // 8, ident=n % 65536)))
        rng.shuffle(pieces)
        records += [(p.timestamp_ns + k, frame) for k, frame in enumerate(pieces)]
    return records


def test_ip_fragments(recorded):
    rng = random.Random(8)
    captures = [packetize(c, mss=900) for c in recorded]

    def via_pcap(cap):
        packets, problems = read_packets(pcap_file(_pcap_records(cap, True, rng), nano=True))
        assert problems == []
        return packets

    found, states = checked(captures, via_pcap)
    assert_matches(found, states, *clean_truth(recorded))


@pytest.mark.parametrize("keep", [96, 30])
def test_snaplen_truncation(recorded, keep):
    """A 150-byte snap length (96 bytes of TCP payload), and ``tcpdump -s 96`` on a
    loopback with TCP timestamps (30 bytes of payload: a kafka-python request's
    client id is cut): frames cut are checked by header only, the rest in full, and
    every frame counts in the coverage; acks=0 Produces are still recognised."""
    captures, expected, states = snap(recorded, keep)
    assert states["header_only"] > 0
    found, got = checked(captures, lambda cap: snapped(cap, keep))
    assert_matches(found, got, expected, states)
    assert cut(captures[0].packets[0], 0).payload == b""


# -- Kafka-level faults ---------------------------------------------------------------------


def _with_frames(conv: Conversation, frames: list[KFrame]) -> Conversation:
    return Conversation(frames, conv.client_port)


def _pick(recorded, want):
    """The first (conversation index, frame index) whose frame satisfies ``want``."""
    for ci, conv in enumerate(recorded):
        for fi, f in enumerate(conv.frames):
            if want(conv, fi, f):
                return ci, fi
    raise AssertionError("the workload has no such frame")


def _run_with(recorded, ci, frames, extra_expected, close_after_ns=0):
    convs = list(recorded)
    convs[ci] = _with_frames(recorded[ci], frames)
    expected, states = clean_truth(convs)
    expected |= extra_expected
    found, got = checked([packetize(c, close_after_ns=close_after_ns) for c in convs])
    assert_matches(found, got, expected, states)
    return convs


def test_trailing_bytes_after_a_response_body(recorded):
    ci, fi = _pick(recorded, lambda c, i, f: f.direction == RESPONSE
                   and f.api_key == ApiKey.PRODUCE)
    frames = list(recorded[ci].frames)
    f = frames[fi]
    body = f.data[4:] + b"\x00" * 8
    frames[fi] = KFrame(RESPONSE, struct.pack(">i", len(body)) + body, f.corr, f.api_key,
                        f.api_version)
    _run_with(recorded, ci, frames,
              {(recorded[ci].client_port, "trailing_bytes", f.corr)})


def test_flipped_byte_inside_a_record_batch(recorded):
    ci, fi = _pick(recorded, lambda c, i, f: f.direction == REQUEST
                   and f.api_key == ApiKey.PRODUCE and not f.acks0)
    frames = list(recorded[ci].frames)
    f = frames[fi]
    start, end = records_span(f)
    data = bytearray(f.data)
    data[end - 3] ^= 0x01                     # inside the last record's value
    frames[fi] = KFrame(REQUEST, bytes(data), f.corr, f.api_key, f.api_version)
    _run_with(recorded, ci, frames,
              {(recorded[ci].client_port, "corrupt_records", f.corr)})


def test_dropped_last_response_then_fin(recorded):
    ci, fi = _pick(recorded, lambda c, i, f: i == len(c.frames) - 1
                   and f.direction == RESPONSE)
    frames = list(recorded[ci].frames)
    dropped = frames.pop(fi)
    # Caught by the truth function too: the request has no answer and the client
    # closes, after its request timeout (30 s, kafka-python's default, which also
    # bounds a Produce's timeout_ms); nothing else may be reported (not "in flight",
    # not unverifiable).
    _run_with(recorded, ci, frames,
              {(recorded[ci].client_port, "unanswered_before_close", dropped.corr)},
              close_after_ns=31 * 10**9)


def test_acks0_answered_and_counted_as_a_response(recorded):
    ci, fi = _pick(recorded, lambda c, i, f: f.acks0)
    frames = list(recorded[ci].frames)
    q = frames[fi]
    body = MESSAGES[ApiKey.PRODUCE].response.defaults()
    answer = encode_response(ApiKey.PRODUCE, q.api_version, q.corr, body)
    frames.insert(fi + 1, KFrame(RESPONSE, answer, q.corr, q.api_key, q.api_version))
    convs = _run_with(recorded, ci, frames,
                      {(recorded[ci].client_port, "acks0_answered", q.corr)})
    # Through the Spark job's per-connection functions: the request row counts it.
    cap = packetize(convs[ci])
    units = transforms.frames_of_flow([("x.pcap", p) for p in cap.packets], {BROKER_PORT})
    rows = [row for kind, row in units if kind == "frame"]
    result = transforms.check_connection(rows[0]["connection"], rows)
    (row,) = [r for r in result["requests"] if r["acks0"] and r["timestamp_ns"]
              == next(f.timestamp_ns for f in _conn_frames(cap) if f.marker is None
                      and f.direction == REQUEST and f.frame[4:8] == struct.pack(">i", q.corr))]
    assert row["responses"] == 1 and row["client_id"]
    assert [v["check"] for v in result["violations"]] == ["acks0_answered"]


def _conn_frames(cap):
    (conn,) = reassemble(cap.packets, {BROKER_PORT})
    return conn.frames
