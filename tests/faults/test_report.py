"""A capture with faults in it, through ``kafka-net decode`` and ``kafka-net
conformance``: each injected fault is listed as injected (not as the broker's
violation) with the client's reaction, and the verdict on the broker passes."""

from __future__ import annotations

import glob
import json
import os

import socket

import pytest

import kafka_net
from kafka_net.capture.decode import decode_file
from kafka_net.capture import injected
from kafka_net.capture.injected import CHECK, INJECTED
from kafka_net.cli import main as cli_main
from kafka_net.protocol.codec import encode_request
from tests.support import recv_frame


@pytest.fixture(scope="module")
def faulty_capture(tmp_path_factory):
    """A kafka-python producer meeting two NOT_LEADER_OR_FOLLOWER answers, then
    a dropped answer: kafka-python pipelines, so the next answer's correlation
    id is not the one it waits for, and it drops the connection and sends again
    on a new one."""
    from kafka import KafkaProducer

    out = tmp_path_factory.mktemp("faulty")
    with kafka_net.Broker({"capture.dir": str(out)}, captures=True) as broker:
        broker.create_topic("orders", partitions=2)
        errors = broker.faults.add(api="Produce", topic="orders", partitions=[1],
                                   error="NOT_LEADER_OR_FOLLOWER", count=2)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, retries=5,
                                 retry_backoff_ms=50, request_timeout_ms=2000)
        producer.send("orders", b"a", partition=1).get(timeout=30)
        dropped = broker.faults.add(api="Produce", topic="orders", drop=True, once=True)
        producer.send("orders", b"b", partition=0).get(timeout=30)
        producer.close()
        assert (errors.hits, dropped.hits) == (2, 1)
    return sorted(glob.glob(os.path.join(out, "*.kncap")))


def test_conformance_lists_injected_faults_with_the_clients_reaction(faulty_capture,
                                                                    tmp_path):
    rc = cli_main(["conformance", *faulty_capture, "--out", str(tmp_path)])
    with open(tmp_path / "report.json", encoding="utf-8") as fh:
        report = json.load(fh)
    assert rc == 0 and report["verdict"] == "PASS", report["verdict"]
    rows = report["violations"]
    faults = [v for v in rows if v["check"] == CHECK]
    assert len(faults) == 3
    assert all(v["party"] == INJECTED and v["severity"] == "note" for v in faults)
    errors = [v for v in faults if "NOT_LEADER_OR_FOLLOWER" in v["detail"]]
    assert len(errors) == 2
    assert all("orders partitions [1]" in v["detail"] for v in errors)
    assert all(v["api_name"] == "Produce" and v["correlation_id"] >= 0 for v in errors)
    # kafka-python asks for metadata after NOT_LEADER_OR_FOLLOWER, but on its own
    # schedule: before the retry, or after it.
    assert all(v["detail"].endswith(("the client " + injected.REFRESHED_METADATA,
                                     "the client " + injected.RETRIED)) for v in errors)
    drop = next(v for v in faults if "drop" in v["detail"])
    assert drop["detail"].endswith(("the client " + injected.REFRESHED_ONLY,
                                    "the client " + injected.GAVE_UP))
    # The request whose answer was dropped is unanswered when the client closes:
    # the fault's doing, not the broker's.
    # Whether kafka-python pipelined another request behind it (then it is
    # unanswered_request) depends on its timing; either way, not the broker's.
    caused = [v for v in rows if v["check"] != CHECK]
    assert all(v["party"] == INJECTED for v in caused)
    assert report["findings"]["broker"]["violation"] == 0


def test_a_dropped_answer_is_the_faults_finding_not_the_brokers(tmp_path):
    """A client pipelining two requests, the first one's answer dropped: the
    second is answered, so pairing finds the first unanswered_request, which
    a broker alone would owe; here the fault caused it."""
    with kafka_net.Broker({"capture.dir": str(tmp_path / "cap")}) as broker:
        broker.faults.add(api="ApiVersions", drop=True, once=True)
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            sock.sendall(encode_request(18, 0, 1, {}, "raw"))
            sock.sendall(encode_request(3, 1, 2, {"topics": []}, "raw"))
            answer = recv_frame(sock)
        assert int.from_bytes(answer[:4], "big") == 2
    files = sorted(glob.glob(str(tmp_path / "cap" / "*.kncap")))
    rc = cli_main(["conformance", *files, "--out", str(tmp_path / "out")])
    with open(tmp_path / "out" / "report.json", encoding="utf-8") as fh:
        report = json.load(fh)
    assert rc == 0 and report["verdict"] == "PASS"
    checks = {v["check"]: v for v in report["violations"]}
    assert set(checks) == {"unanswered_request", CHECK}
    assert checks["unanswered_request"]["party"] == INJECTED
    assert checks["unanswered_request"]["correlation_id"] == 1
    assert "caused by injected fault f1: drop" in checks["unanswered_request"]["detail"]
    assert report["findings"]["injected"]["note"] == 2


def test_decode_shows_each_fault_where_it_fired(faulty_capture):
    lines = []
    for path in faulty_capture:
        with open(path, "rb") as fh:
            lines.extend(decode_file(fh.read(), path))
    faults = [line for line in lines if line.startswith("[fault]")]
    assert len(faults) == 3
    assert sum('"NOT_LEADER_OR_FOLLOWER"' in line for line in faults) == 2
    assert any("NOTE injected_fault (injected's)" in line for line in lines)
