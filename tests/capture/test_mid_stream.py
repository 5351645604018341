"""A capture that started mid-stream: the frames before each direction's first
boundary (the end of the one it started inside, and whole ones the search passed)
are counted as unverifiable frames, and their bytes are among the connection's
gaps (kafka_net/capture/pairing.py, the SYNC marker; tcp.py counts them) -- in the
per-connection report and in the conformance job's headline, which said "100%
checked" before."""

from __future__ import annotations

import json

from kafka_net.capture.decode import decode_file
from kafka_net.capture.pairing import REQUEST, RESPONSE, SYNC, pair_connection
from kafka_net.capture.tcp import reassemble
from kafka_net.spark_jobs import conformance
from tests.capture.tcp_wire import (
    api_versions_response, conversation, metadata_response, only)
from tests.capture.test_decode import pcap_bytes


RESPONSES_1_2 = [api_versions_response(1), metadata_response(2)]


def started_inside_request_2():
    """Nine exchanges, three in flight at a time; the capture starts in the middle of
    request 2, long after the handshake (as test_tcp's mid-stream test does)."""
    wire, requests, responses = conversation(n=9, mss=50, pipeline=3)
    assert responses[:2] == RESPONSES_1_2
    start = next(i for i, p in enumerate(wire.packets)
                 if p.payload and p.payload in requests[1][50:]
                 and p.payload[:4] != requests[1][:4])
    wire.packets[:start] = []
    return wire


def test_the_skipped_frames_are_unverifiable_and_gaps():
    wire = started_inside_request_2()
    conn = only(reassemble(wire.packets, {9092}))
    report = pair_connection(conn.frames)
    assert report.violations == [] and report.unverifiable_from is None
    syncs = {f.direction: f for f in conn.frames if f.marker == SYNC}
    # Requests: the rest of request 2.  Responses: 1 and 2, whole, answering requests
    # the capture does not have whole (the search starts at response 3).
    assert {d: f.frame_size for d, f in syncs.items()} == {REQUEST: 1, RESPONSE: 2}
    assert syncs[RESPONSE].gap == (0, sum(len(r) for r in RESPONSES_1_2))
    assert report.skipped_frames == 3
    counts = report.state_counts()
    assert counts["unverifiable"] == 3
    assert counts["checked"] == sum(1 for f in conn.frames if f.marker is None)
    assert sorted(report.gaps) == sorted((d, *f.gap) for d, f in syncs.items())
    assert report.unchecked_frames == 3


def test_a_capture_started_at_a_frame_boundary_skips_no_frame():
    """No handshake captured, but the first bytes each way start a frame."""
    wire, requests, _ = conversation(n=3, mss=1000, handshake=False)
    conn = only(reassemble(wire.packets, {9092}))
    report = pair_connection(conn.frames)
    assert [f.gap for f in conn.frames if f.marker == SYNC] == [(0, 0), (0, 0)]
    assert report.skipped_frames == 0 and report.gaps == []
    assert report.state_counts()["unverifiable"] == 0
    assert len(report.pairs) == len(requests)


def test_the_conformance_headline_counts_them(tmp_path):
    """The report's coverage (small input: in process, no JVM): not 100% checked."""
    (tmp_path / "caps").mkdir()
    (tmp_path / "caps" / "mid.pcap").write_bytes(pcap_bytes(started_inside_request_2()))
    out = tmp_path / "out"
    code = conformance.main([str(tmp_path / "caps"), "--out", str(out),
                             "--broker-port", "9092"])
    report = json.loads((out / "report.json").read_text())
    coverage = report["coverage"]
    assert coverage["unverifiable"] == 3 and coverage["gaps"] == 2
    assert coverage["checked"] == coverage["frames"] - 3 and coverage["coverage"] < 1
    (connection,) = report["connections"]
    assert connection["frames_unverifiable"] == 3 and len(connection["gaps"]) == 2
    assert report["verdict"] == "INCOMPLETE" and code != 0


def test_decode_shows_the_skipped_frames():
    text = "\n".join(decode_file(pcap_bytes(started_inside_request_2()), "m.pcap",
                                 broker_ports={9092}))
    assert text.count(" frame(s) (the end of the one the capture started inside") == 2
    assert f"Skipped: stream bytes 0-{sum(map(len, RESPONSES_1_2))}, 2 frame(s)" in text
