"""Faults against kafkajs: NOT_LEADER_OR_FOLLOWER twice, then REQUEST_TIMED_OUT
after the append, and its idempotent producer still stores the record once."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import kafka_net

HERE = Path(__file__).resolve().parent
JS_DIR = HERE.parent / "clients" / "js"


def test_kafkajs_retries_through_injected_errors_without_duplicating():
    assert shutil.which("node"), "node is not installed: run `make kafkajs`"
    assert (JS_DIR / "node_modules" / "kafkajs").is_dir(), \
        "kafkajs is not installed: run `make kafkajs` (npm ci in tests/clients/js)"
    with kafka_net.Broker() as broker:
        broker.create_topic("js-faults")
        not_leader = broker.faults.add(api="Produce", topic="js-faults", partitions=[0],
                                       error="NOT_LEADER_OR_FOLLOWER", count=2)
        timed_out = broker.faults.add(api="Produce", topic="js-faults",
                                      error="REQUEST_TIMED_OUT", when="after", once=True)
        result = subprocess.run(
            ["node", str(HERE / "kafkajs_faults.js"), broker.bootstrap_servers, "js-faults"],
            capture_output=True, text=True, timeout=90, cwd=HERE)
        assert result.returncode == 0, (result.stdout, result.stderr)
        assert (not_leader.hits, timed_out.hits) == (2, 1)
        from kafka import KafkaConsumer, TopicPartition
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
        tp = TopicPartition("js-faults", 0)
        end = consumer.end_offsets([tp])[tp]
        consumer.close()
    assert end == 1                        # one record in the log, not two
    [line] = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
    out = json.loads(line[len("RESULT "):])
    assert out["values"] == ["once"]       # appended by the timed-out try, not again
    assert out["offset"] == "0"
