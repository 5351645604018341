"""__share_group_state is pruned (issue 30): after a share group worked through
a topic, the state topic starts at the latest snapshot of its share-partition,
so a restart replays that tail, not the group's whole history (a real
``kafka-net serve`` and confluent-kafka's ShareConsumer)."""

from __future__ import annotations

import os

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer  # noqa: E402

from kafka_net.protocol.api_keys import ApiKey  # noqa: E402
from kafka_net.server.storage.checkpoint import (  # noqa: E402
    LOG_START_OFFSET_CHECKPOINT, OffsetCheckpointFile)
from tests.storage.bad_day_support import running, stop_cleanly  # noqa: E402
from tests.support import RawClient, wait_until  # noqa: E402

RECORDS = 60   # 12 state snapshots at 5 updates each: enough to prune
TIMEOUT = 60.0


def share_state_starts(log_dir: str) -> dict[int, int]:
    entries = OffsetCheckpointFile(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT)).read()
    return {p: o for (t, p), o in entries.items() if t == "__share_group_state"}


def test_a_share_groups_history_is_pruned_from_the_state_topic(tmp_path):
    log_dir = str(tmp_path / "logs")
    every = "share.coordinator.snapshot.update.records.per.snapshot=5"
    with running(log_dir, every) as (broker, port):
        with RawClient(port) as client:   # the group reads from the start
            body = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
                "resource_type": 32, "resource_name": "sg", "configs": [{
                    "name": "share.auto.offset.reset", "config_operation": 0,
                    "value": "earliest"}]}], "validate_only": False})
            assert [r["error_code"] for r in body["responses"]] == [0], body
            client.call(ApiKey.CREATE_TOPICS, 5, {"topics": [{
                "name": "work", "num_partitions": 1, "replication_factor": 1,
                "assignments": [], "configs": []}], "timeout_ms": 5000,
                "validate_only": False})
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 0})
        for i in range(RECORDS):
            producer.produce("work", f"v{i}".encode())
        assert producer.flush(TIMEOUT) == 0
        consumer = ShareConsumer({"bootstrap.servers": f"127.0.0.1:{port}",
                                  "group.id": "sg", "share.acknowledgement.mode": "explicit"})
        consumer.subscribe(["work"])
        done: set[int] = set()
        try:
            def step() -> bool:
                messages = consumer.poll(0.2)
                for m in messages:   # one state write per record: a long history
                    assert not m.error(), m.error()
                    done.add(m.offset())
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                    consumer.commit_sync(TIMEOUT)
                return len(done) == RECORDS
            wait_until(step, TIMEOUT, interval=0)
        finally:
            consumer.close()
        stop_cleanly(broker)
    pruned = share_state_starts(log_dir)
    assert pruned and max(pruned.values()) > 0, pruned
    with running(log_dir, every) as (broker, port):
        broker.wait_for(r"Finished loading the state of 1 share-partition\(s\) from "
                        r"__share_group_state")
