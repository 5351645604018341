"""``kafka-net fault`` against a real ``kafka-net serve`` process, and the
control endpoint's refusal of other hosts."""

from __future__ import annotations

import json

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


def test_another_host_is_refused_with_403_and_the_reason():
    """The endpoint's answer to a peer by address (tests talk to 127.0.0.1 only,
    so the other host is given, not connected from)."""
    with kafka_net.Broker({"metrics.listener": "http://127.0.0.1:0",
                           "faults.control.allowed.hosts": "192.0.2.9"}) as broker:
        registry = broker.faults
        allowed = broker.server.config.faults_control_allowed_hosts
        status, answer = control.handle(registry, "POST", "/faults",
                                        b'{"api": "Produce", "drop": true}', "10.1.2.3", allowed)
        assert status == 403 and "10.1.2.3" in answer["error"]
        assert registry.list() == []                   # nothing was added
        status, answer = control.handle(registry, "POST", "/faults",
                                        b'{"api": "Produce", "drop": true}', "192.0.2.9", allowed)
        assert (status, answer) == (200, {"id": "f1"})
        status, answer = control.handle(registry, "POST", "/faults", b'{"api": "Produs"}',
                                        "127.0.0.1", allowed)
        assert status == 400 and "unknown API" in answer["error"]
        import urllib.request
        with urllib.request.urlopen(f"{broker.metrics_url}/faults", timeout=10) as ok:
            assert [r["id"] for r in json.loads(ok.read())["faults"]] == ["f1"]
