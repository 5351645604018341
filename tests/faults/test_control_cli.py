"""``kafka-net fault`` against a real ``kafka-net serve`` process, and the
control endpoint's refusal of other hosts."""

from __future__ import annotations

import json
import socket

import pytest

import kafka_net
from kafka_net.server.faults import control
from tests.integration.test_cli import run_cli, serve

METRICS_URL = r"metrics on (?P<url>http://[^ ]+)/metrics"


def test_kafka_net_fault_against_a_served_broker():
    from kafka import KafkaProducer

    with serve("listeners=PLAINTEXT://127.0.0.1:0", "metrics.listener=http://127.0.0.1:0",
               args=("--dev",)) as broker:
        port = broker.wait_started()["PLAINTEXT"]
        url = broker.wait_for(METRICS_URL)["url"]
        added = run_cli("fault", "--control", url, "add", "--api", "Produce", "--topic", "T",
                        "--partitions", "0", "--error", "NOT_LEADER_OR_FOLLOWER",
                        "--count", "2")
        assert added.returncode == 0, added.stderr
        rule_id = added.stdout.strip()
        assert rule_id == "f1"
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", retries=5,
                                 retry_backoff_ms=50)
        meta = producer.send("T", b"v", partition=0).get(timeout=30)
        producer.close()
        assert meta.offset == 0
        waited = run_cli("fault", "--control", url, "wait", rule_id, "--hits", "2",
                         "--timeout", "30")
        assert waited.returncode == 0, waited.stderr
        listed = run_cli("fault", "--control", url, "list")
        rules = json.loads(listed.stdout)
        assert [(r["id"], r["hits"], r["active"]) for r in rules] == [("f1", 2, False)]
        assert rules[0]["rule"]["error"] == "NOT_LEADER_OR_FOLLOWER"
        not_yet = run_cli("fault", "--control", url, "wait", rule_id, "--hits", "3",
                          "--timeout", "0.2")
        assert not_yet.returncode == 1
        bad = run_cli("fault", "--control", url, "add", "--error", "NO_SUCH_ERROR")
        assert bad.returncode == 2 and "unknown error" in bad.stderr
        dead = run_cli("fault", "--control", url, "wait-group", "no group", "--state", "dead",
                       "--timeout", "5")
        assert dead.returncode == 0, dead.stderr
        not_stable = run_cli("fault", "--control", url, "wait-group", "no group", "--state",
                             "Stable", "--timeout", "0.2")
        assert not_stable.returncode == 1
        cleared = run_cli("fault", "--control", url, "clear")
        assert cleared.returncode == 0
        assert json.loads(run_cli("fault", "--control", url, "list").stdout) == []


def test_the_control_endpoint_serves_loopback_only_unless_configured():
    assert control.allowed("127.0.0.1", ())
    assert control.allowed("::1", ())
    assert control.allowed("::ffff:127.0.0.1", ())
    assert not control.allowed("10.1.2.3", ())
    assert control.allowed("10.1.2.3", ("10.1.2.3",))
    assert control.allowed("192.0.2.7", ("*",))


def _non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))           # no packet is sent (UDP, no data)
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_another_host_is_refused_by_a_real_listener():
    address = _non_loopback_address()
    if address is None:
        pytest.fail("this test needs a non-loopback IPv4 address on the machine")
    import urllib.error
    import urllib.request
    with kafka_net.Broker({"metrics.listener": "http://0.0.0.0:0"}) as broker:
        port = broker.server.metrics_http.port
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://{address}:{port}/faults", timeout=10)
        assert refused.value.code == 403
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/faults", timeout=10) as ok:
            assert json.loads(ok.read()) == {"faults": []}
