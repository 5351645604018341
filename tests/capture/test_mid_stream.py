"""A capture that started mid-stream: the frame it started inside is counted, as an
unverifiable frame, and its bytes are among the connection's gaps
(kafka_net/capture/pairing.py, the SYNC marker) -- in the per-connection report
and in the conformance job's headline, which said "100% checked" before."""

from __future__ import annotations

import json

from kafka_net.capture.decode import decode_file
from kafka_net.capture.pairing import REQUEST, RESPONSE, SYNC, pair_connection
from kafka_net.capture.tcp import reassemble
from kafka_net.spark_jobs import conformance
from tests.capture.tcp_wire import conversation, only
from tests.capture.test_decode import pcap_bytes


def started_inside_request_2():
    """Nine exchanges, three in flight at a time; the capture starts in the middle of
    request 2, long after the handshake (as test_tcp's mid-stream test does)."""
    wire, requests, _ = conversation(n=9, mss=50, pipeline=3)
    start = next(i for i, p in enumerate(wire.packets)
                 if p.payload and p.payload in requests[1][50:]
                 and p.payload[:4] != requests[1][:4])
    wire.packets[:start] = []
    return wire


def test_the_partial_frames_are_unverifiable_and_gaps():
    conn = only(reassemble(started_inside_request_2().packets, {9092}))
    report = pair_connection(conn.frames)
    assert report.violations == [] and report.unverifiable_from is None
    syncs = {f.direction: f.gap for f in conn.frames if f.marker == SYNC}
    assert syncs[REQUEST][1] > 0 and syncs[RESPONSE][1] > 0
    # One partial frame each way: the rest of request 2, the bytes before response 3.
    assert report.partial_frames == 2
    counts = report.state_counts()
    assert counts["unverifiable"] == 2
    assert counts["checked"] == sum(1 for f in conn.frames if f.marker is None)
    assert sorted(report.gaps) == sorted((d, *gap) for d, gap in syncs.items())
    assert report.unchecked_frames == 2


def test_a_capture_started_at_a_frame_boundary_has_no_partial_frame():
    """No handshake captured, but the first bytes each way start a frame."""
    wire, requests, _ = conversation(n=3, mss=1000, handshake=False)
    conn = only(reassemble(wire.packets, {9092}))
    report = pair_connection(conn.frames)
    assert [f.gap for f in conn.frames if f.marker == SYNC] == [(0, 0), (0, 0)]
    assert report.partial_frames == 0 and report.gaps == []
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
    assert coverage["unverifiable"] == 2 and coverage["gaps"] == 2
    assert coverage["checked"] == coverage["frames"] - 2 and coverage["coverage"] < 1
    (connection,) = report["connections"]
    assert connection["frames_unverifiable"] == 2 and len(connection["gaps"]) == 2
    assert report["verdict"] == "INCOMPLETE" and code != 0


def test_decode_shows_each_partial_frame():
    text = "\n".join(decode_file(pcap_bytes(started_inside_request_2()), "m.pcap",
                                 broker_ports={9092}))
    assert text.count("Partial frame: stream bytes 0-") == 2
    assert "(counted as one unverifiable frame)" in text
