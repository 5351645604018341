"""Faults with known ground truth, end to end through the Spark job: real client
traffic recorded by the proxy of tests/capture/fault_proxy.py, written as pcap
files with lost segments (and, in one run, trailing bytes after a response).

The exit code, report.json's verdict and coverage, and the violations agree
with the ground truth (tests/capture/test_faults.py checks each fault kind
through the same per-connection functions, faster)."""

from __future__ import annotations

import random
import struct
from collections import Counter
from unittest import mock

import pytest

from kafka_net.protocol import ApiKey
from kafka_net.spark_jobs import conformance
from kafka_net.spark_jobs import report as report_mod
from tests.capture.fault_proxy import RESPONSE, Conversation, KFrame, packetize
from tests.capture.packets import pcap_file
from tests.capture.test_faults import _pcap_records, record_workload, truth
from tests.spark.conftest import load_report

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def recorded():
    return record_workload()


def lossy_pcaps(recorded, directory, trailing: bool):
    """One pcap per connection, 4% of data segments lost; with ``trailing``, 8 bytes
    after the body of the first Produce response.  Returns (violations expected as
    (client port, check, corr), states Counter)."""
    rng = random.Random(11)
    expected, states = set(), Counter()
    directory.mkdir()
    for conv in recorded:
        frames = list(conv.frames)
        if trailing:
            at = next((i for i, f in enumerate(frames) if f.direction == RESPONSE
                       and f.api_key == ApiKey.PRODUCE), None)
            if at is not None:
                f = frames[at]
                body = f.data[4:] + b"\x00" * 8
                frames[at] = KFrame(RESPONSE, struct.pack(">i", len(body)) + body, f.corr,
                                    f.api_key, f.api_version)
                trailing = False
                expected.add((conv.client_port, "trailing_bytes", f.corr))
        conv = Conversation(frames, conv.client_port)
        cap = packetize(conv, mss=200)
        data = [p for p in cap.packets if p.payload]
        lost = {id(p) for p in data if rng.random() < 0.04}
        # The trailing-bytes frame stays whole, so the fault is visible.
        keep = {id(p) for i, f in enumerate(frames) if f.data[-8:] == b"\x00" * 8
                for p in cap.carriers[i]}
        lost -= keep
        head = {i for i, ps in cap.carriers.items() if id(ps[0]) in lost}
        body = {i for i, ps in cap.carriers.items()
                if i not in head and any(id(p) in lost for p in ps)}
        cap.packets = [p for p in cap.packets if id(p) not in lost]
        v, s = truth(conv, head, body)
        expected |= v
        states.update(s)
        path = directory / f"conn-{conv.client_port}.pcap"
        path.write_bytes(pcap_file(_pcap_records(cap, False, rng), nano=True))
    assert states["unverifiable"] > 0
    return expected, states


def run_main(argv) -> int:
    # The session fixture shipped the code to the executors already.
    with mock.patch.object(conformance, "ship_code", lambda spark: None):
        return conformance.main([str(a) for a in argv])


def check_report(out, expected, states):
    report = load_report(out)
    found = {(int(e["connection"].split("-")[0].rsplit(":", 1)[1]), check,
              e["correlation_id"])
             for check, entry in report["checks"].items() for e in entry["examples"]}
    assert found == expected
    cov = report["coverage"]
    total = sum(states.values())
    assert abs(cov["frames"] - total) <= 0.01 * total
    for state in ("checked", "header_only", "unverifiable", "not_kafka"):
        assert abs(cov["shares"][state] - states[state] / total) <= 0.01, (cov, states)
    return report


def test_segment_loss_is_incomplete_not_pass(recorded, tmp_path, spark):
    expected, states = lossy_pcaps(recorded, tmp_path / "caps", trailing=False)
    assert expected == set()
    code = run_main([tmp_path / "caps", "--out", tmp_path / "out", "--broker-port", "9092"])
    report = check_report(tmp_path / "out", expected, states)
    assert report["verdict"] == "INCOMPLETE" and code == conformance.EXIT_INCOMPLETE == 3
    assert report["totals"]["in_flight_at_end"] == 0
    # The same figures pass a lower bar.
    assert report_mod.verdict(report, report["coverage"]["coverage"]) == "PASS"


def test_segment_loss_and_trailing_bytes_fail(recorded, tmp_path, spark):
    expected, states = lossy_pcaps(recorded, tmp_path / "caps", trailing=True)
    assert [c for _, c, _ in expected] == ["trailing_bytes"]
    code = run_main([tmp_path / "caps", "--out", tmp_path / "out", "--min-coverage", "50"])
    report = check_report(tmp_path / "out", expected, states)
    assert report["verdict"] == "FAIL" and code == conformance.EXIT_VIOLATIONS
    assert report["coverage"]["min_coverage"] == 0.5


def test_a_snaplen_cut_capture_counts_every_frame(recorded, tmp_path, spark):
    """tcpdump -s 96 on a loopback with TCP timestamps: 30 bytes of TCP payload per
    packet.  Every frame is in the coverage (header only where cut), within 1% of
    the ground truth, and nothing is reported."""
    keep = 30
    caps = tmp_path / "caps"
    caps.mkdir()
    expected, states = set(), Counter()
    for conv in recorded:
        cap = packetize(conv, mss=600)
        cut_frames = {i for i, ps in cap.carriers.items()
                      if any(len(p.payload) > keep for p in ps)}
        v, s = truth(conv, cut_frames=cut_frames)
        expected |= v
        states.update(s)
        (caps / f"conn-{conv.client_port}.pcap").write_bytes(pcap_file(
            _pcap_records(cap, False, random.Random(0)), nano=True,
            snaplen=14 + 20 + 20 + keep))
    assert expected == set() and states["header_only"] > 0.5 * sum(states.values())
    code = run_main([caps, "--out", tmp_path / "out", "--broker-port", "9092"])
    report = check_report(tmp_path / "out", expected, states)
    assert report["verdict"] == "INCOMPLETE" and code == conformance.EXIT_INCOMPLETE
    assert report["coverage"]["frames"] == sum(states.values())
