"""Whose findings are, through the job: a capture of librdkafka 2.16.0's Metadata v12
request with its 3 trailing bytes (``01 00 00``, the known deviation of
kafka_net/capture/attribution.py) PASSes for the broker, FAILs for the client,
and PASSes for the client once waived, the report saying why.  The verdict line
goes to stdout."""

from __future__ import annotations

import pytest

from kafka_net.protocol import ApiKey
from kafka_net.spark_jobs import conformance
from tests.capture.test_pairing import API_VERSIONS_RESPONSE, METADATA_RESPONSE
from tests.spark.conftest import load_report, request_payload, response_payload, write_pcap
from tests.spark.test_conformance_job import main_in_process, pcap_of

pytestmark = pytest.mark.spark

SOFTWARE = {"client_software_name": "confluent-kafka-python",
            "client_software_version": "2.16.1-rdkafka-2.16.0"}
KNOWN = "librdkafka-2.16.0-metadata-v12-trailing"


def librdkafka_conversation() -> list:
    metadata = {"topics": None, "allow_auto_topic_creation": True,
                "include_topic_authorized_operations": False}
    return [
        ("q1", 0, request_payload(ApiKey.API_VERSIONS, 3, 1, SOFTWARE, client_id="rdkafka")),
        ("r1", 1, response_payload(ApiKey.API_VERSIONS, 3, 1, API_VERSIONS_RESPONSE)),
        ("q2", 0, request_payload(ApiKey.METADATA, 12, 2, metadata, client_id="rdkafka")
         + b"\x01\x00\x00"),
        ("r2", 1, response_payload(ApiKey.METADATA, 12, 2, METADATA_RESPONSE)),
    ]


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    base = tmp_path_factory.mktemp("findings")
    return write_pcap(base / "librdkafka.pcap", pcap_of(librdkafka_conversation(), 45000,
                                                        10**18))


def run(capture, out, *flags, capsys) -> tuple[int, dict, str]:
    code = main_in_process([capture, "--out", out, *flags])
    return code, load_report(out), capsys.readouterr().out


def test_the_clients_deviation_passes_the_broker(capture, tmp_path, spark, capsys):
    code, report, stdout = run(capture, tmp_path / "out", capsys=capsys)
    assert code == conformance.EXIT_CLEAN and report["verdict"] == "PASS"
    assert stdout.startswith("conformance: PASS: 0 broker finding(s); client: "
                             "1 deviation(s); of 4 frames 100.00% checked")
    (v,) = report["violations"]
    assert (v["check"], v["party"], v["severity"], v["known_deviation"], v["waived"]) == (
        "trailing_bytes", "client", "deviation", KNOWN, False)
    assert v["client_software"] == "confluent-kafka-python 2.16.1-rdkafka-2.16.0"
    assert report["subject"] == "broker"
    assert report["findings"]["client"]["deviation"] == 1


def test_the_client_under_test_fails_until_waived(capture, tmp_path, spark, capsys):
    code, report, stdout = run(capture, tmp_path / "client", "--subject", "client",
                               capsys=capsys)
    assert code == conformance.EXIT_VIOLATIONS and report["verdict"] == "FAIL"
    assert stdout.startswith("conformance: FAIL: 1 client finding(s); of ")

    code, report, stdout = run(capture, tmp_path / "waived", "--subject", "client",
                               "--waive", "trailing_bytes=confluent-kafka-python",
                               capsys=capsys)
    assert code == conformance.EXIT_CLEAN and report["verdict"] == "PASS"
    assert stdout.startswith("conformance: PASS: 0 client finding(s) (1 waived); of ")
    (v,) = report["violations"]
    assert v["waived"] and v["waiver"].startswith(f"known deviation {KNOWN}: librdkafka")
    assert report["waivers"] == [{"check": "trailing_bytes",
                                  "client_software": "confluent-kafka-python",
                                  "reason": "", "findings": 1}]
    assert "Known client deviations seen" in (tmp_path / "waived" / "report.html").read_text()
