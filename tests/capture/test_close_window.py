"""unanswered_before_close is the broker's only when the broker had the request before
the client's FIN (kafka_net/capture/pairing.py, QUEUED_READ_WINDOW_NS).

A request that waited behind others on its connection (a parked Fetch, acks=0
Produces the broker was working through) can be taken by the broker only once
those are done; a client that closes a millisecond later, on shutdown, abandons
it: in flight, never the broker's finding.  Measured from when the broker could
first take it, the window is the same for both shapes; a request sent to an idle
connection is owed its answer at once, as before.

Then one live session (a kafka-net broker with its capture on, tcpdump on the
loopback) makes both shapes for real: no broker finding in either capture, nor in
the pcap once the answers the broker sent after the client's FIN are taken out
(Kafka never answers a connection whose FIN it has read; kafka-net does, so its
pcap alone would not show the shape).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_net.capture.findings import locate_violations
from kafka_net.capture.model import CLOSE, REQUEST, RESPONSE, Frame
from kafka_net.capture.pairing import QUEUED_READ_WINDOW_NS, pair_connection
from kafka_net.capture.reader import read_capture_file
from kafka_net.protocol import ApiKey
from kafka_net.protocol.records.building import build_batch
from tests.capture.tcpdump import Tcpdump
from tests.capture.test_live_findings import TOPIC, _api_versions, _fetch_body, create_topic
from tests.capture.test_pairing import PRODUCE_DATA, payload, req, resp
from tests.support import RawClient, make_config, produce_body, running_server

MS = 1_000_000
T0 = 10**12
FETCH = req(ApiKey.FETCH, 12, 1, {"max_wait_ms": 500, "topics": []})
FETCH_ANSWER = resp(ApiKey.FETCH, 12, 1, {"responses": []})
ACKS0 = {"acks": 0, "timeout_ms": 1000, "topic_data": PRODUCE_DATA}


def _frames(*items) -> list[Frame]:
    """(timestamp, direction, payload) items; an empty request payload is the FIN."""
    return [Frame(i, d, ts, data, len(data), marker=CLOSE if d == REQUEST and not data
                  else None) for i, (ts, d, data) in enumerate(items)]


def _checks(report) -> list[tuple[str, int]]:
    return [(v.check, v.correlation_id) for v in report.violations]


@pytest.mark.parametrize("fin_after_answer_ns,expected", [
    (100_000, []),                                         # the hidden capture's 100 µs
    (MS, []),
    (QUEUED_READ_WINDOW_NS + MS, [("unanswered_before_close", 10)]),
])
def test_a_request_behind_a_parked_fetch_is_owed_from_the_fetch_answer(
        fin_after_answer_ns, expected):
    """The Metadata request waited behind a parked Fetch: the broker could take it only
    once the Fetch was answered, so the window runs from that answer."""
    answered = T0 + 400 * MS
    report = pair_connection(_frames(
        (T0, REQUEST, FETCH), (T0 + MS, REQUEST, payload("q10")),
        (answered, RESPONSE, FETCH_ANSWER),
        (answered + fin_after_answer_ns, REQUEST, b"")))
    assert _checks(report) == expected
    assert report.in_flight_at_end == (0 if expected else 1)


@pytest.mark.parametrize("fin_after_ns,expected", [
    (MS, []),
    (QUEUED_READ_WINDOW_NS + MS, [("unanswered_before_close", 10)]),
])
def test_a_request_behind_acks0_produces_is_owed_only_after_the_window(fin_after_ns,
                                                                       expected):
    """Behind acks=0 Produces the broker works through at a pace no answer shows."""
    frames = [(T0, REQUEST, payload("q1")), (T0 + MS, RESPONSE, payload("r1"))]
    frames += [(T0 + (2 + i) * MS, REQUEST, req(ApiKey.PRODUCE, 9, 20 + i, ACKS0))
               for i in range(3)]
    sent = T0 + 10 * MS
    frames += [(sent, REQUEST, payload("q10")), (sent + fin_after_ns, REQUEST, b"")]
    report = pair_connection(_frames(*frames))
    assert _checks(report) == expected
    assert report.acks0_requests == 3


def test_a_request_sent_to_an_idle_connection_is_owed_at_once():
    """Nothing ahead of it: the broker took it as it came (and muted the connection
    until its answer was out), so a FIN 20 µs later does not excuse the broker."""
    report = pair_connection(_frames(
        (T0, REQUEST, payload("q1")), (T0 + MS, RESPONSE, payload("r1")),
        (T0 + 2 * MS, REQUEST, payload("q10")), (T0 + 2 * MS + 20_000, REQUEST, b"")))
    assert _checks(report) == [("unanswered_before_close", 10)]


# -- the live session ------------------------------------------------------------------

METADATA = {"topics": None, "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}
BURST = 20                      # acks=0 Produces, 64 KiB of records each


def _acks0_burst(client: RawClient, first_corr: int) -> None:
    batch = build_batch([(b"k", b"v" * 4096)] * 16)
    for i in range(BURST):
        client.send(ApiKey.PRODUCE, 9, produce_body(TOPIC, 0, batch, acks=0),
                    correlation_id=first_corr + i)


def _close(client: RawClient) -> int:
    """The client's FIN; returns its port."""
    port = client.sock.getsockname()[1]
    client.sock.close()
    return port


def fetch_then_close(port: int) -> int:
    """A Fetch the broker parks (max_wait_ms 200, nothing to read), acks=0 Produces and
    a Metadata request behind it; the client closes as soon as the Fetch answer is
    in, as a consumer does on shutdown.  Returns the client port."""
    client = RawClient(port)
    _api_versions(client)
    client.send(ApiKey.FETCH, 12, _fetch_body(200), correlation_id=10)
    _acks0_burst(client, 100)
    client.send(ApiKey.METADATA, 12, METADATA, correlation_id=11)
    client.recv_frame()                                 # the Fetch answer
    return _close(client)                               # the client's FIN, at once


def produce_then_close(port: int) -> int:
    """acks=0 Produces, a Metadata request behind them, and the client's FIN at once."""
    client = RawClient(port)
    _api_versions(client)
    _acks0_burst(client, 200)
    client.send(ApiKey.METADATA, 12, METADATA, correlation_id=12)
    return _close(client)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    base = tmp_path_factory.mktemp("close-window")
    with running_server(make_config(capture_dir=str(base / "kncap"))) as server:
        port = server.bound_port()
        dump = Tcpdump(base / "lo.pcap", port)
        try:
            dump.start()
            create_topic(port)
            ports = {"fetch": fetch_then_close(port), "produce": produce_then_close(port)}
            time.sleep(0.5)       # the broker works through the bursts (bounded)
        finally:
            server.shutdown()
            dump.stop()
    return {"ports": ports, "kncap": sorted((base / "kncap").iterdir()),
            "pcap": [base / "lo.pcap"]}


def _connections(paths: list[Path]) -> dict[int, list[Frame]]:
    """{client port: frames} of the capture files."""
    out = {}
    for path in paths:
        capture = read_capture_file(path.read_bytes(), str(path))
        assert capture.kind is not None, capture.problems
        for conn in capture.connections:
            out[_client_port(conn.id)] = conn.frames
    return out


def _client_port(connection: str) -> int:
    # kafka-net: "<broker>:<port>-<client>:<port>-<processor>-<n>"; pcap: "<client>-<broker>"
    ends = [p for p in connection.split("-") if ":" in p]
    return int((ends[1] if connection.count("-") > 1 else ends[0]).rsplit(":", 1)[1])


def _broker_findings(frames: list[Frame]) -> list[tuple[str, int]]:
    report = pair_connection(frames)
    return [(r["check"], r["correlation_id"]) for r in locate_violations(frames, report, "c")
            if r["party"] == "broker"]


def as_kafka_answers(frames: list[Frame]) -> list[Frame]:
    """The connection as a Kafka broker would have made it: no answer after the
    client's FIN (a send to a connection whose close it has read fails)."""
    fin = next(f.position for f in frames if f.marker == CLOSE)
    kept = [f for f in frames if f.position <= fin or f.direction == REQUEST]
    return [replace(f, position=i) for i, f in enumerate(kept)]


@pytest.mark.parametrize("source", ["kncap", "pcap"])
def test_no_broker_finding_when_the_client_closes_behind_queued_requests(session, source):
    conns = _connections(session[source])
    for shape, port in session["ports"].items():
        assert _broker_findings(conns[port]) == [], shape


@pytest.mark.parametrize("shape,corr", [("fetch", 11), ("produce", 12)])
def test_no_broker_finding_without_answers_after_the_fin(session, shape, corr):
    """The Metadata request waits at the client's FIN (behind the acks=0 Produces, and
    the Fetch answered just before the FIN): abandoned, never unanswered."""
    frames = as_kafka_answers(_connections(session["pcap"])[session["ports"][shape]])
    report = pair_connection(frames)
    fin = next(f.position for f in frames if f.marker == CLOSE)
    (metadata,) = [r for r in report.requests if r.api_key == ApiKey.METADATA]
    assert metadata.correlation_id == corr and metadata.position < fin
    assert not metadata.answered
    assert _broker_findings(frames) == []
    assert report.in_flight_at_end == 1
    if shape == "fetch":     # the client closed right after the Fetch answer came
        (fetch,) = [p for p in report.pairs if p.api_key == ApiKey.FETCH]
        assert fetch.response_position < fin
