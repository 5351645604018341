"""BrokerTopicStats: Kafka's per-topic meters, counted where Kafka's ReplicaManager counts them."""

from __future__ import annotations

import threading
import uuid

from kafka_net.protocol.records import build_batch
from kafka_net.server.broker_topic_stats import GROUP, BrokerTopicStats
from kafka_net.server.replica_manager import ReplicaManager


def meter(snapshot: dict, name: str, topic: str | None = None) -> int:
    return snapshot[f"{GROUP},name={name}" + (f",topic={topic}" if topic else "")]


def test_a_produce_counts_bytes_and_messages_and_a_failure_only_the_request():
    rm = ReplicaManager()
    rm.ensure_partitions("orders", uuid.uuid4(), 1)
    batch = build_batch([(b"k", b"v1"), (b"k", b"v2"), (None, b"v3")])
    assert rm.append_records("orders", 0, batch, 9).error_code == 0
    assert rm.append_records("orders", 0, b"\x00" * 70, 9).error_code != 0   # corrupt
    snap = rm.topic_stats.snapshot()
    assert meter(snap, "BytesInPerSec", "orders") == len(batch)
    assert meter(snap, "MessagesInPerSec", "orders") == 3
    assert meter(snap, "TotalProduceRequestsPerSec", "orders") == 2
    assert meter(snap, "FailedProduceRequestsPerSec", "orders") == 1
    assert meter(snap, "MessagesInPerSec") == 3   # the all-topics meter


def test_a_fetch_counts_bytes_out_and_an_out_of_range_offset_fails():
    rm = ReplicaManager()
    rm.ensure_partitions("orders", uuid.uuid4(), 1)
    batch = build_batch([(b"k", b"v")])
    rm.append_records("orders", 0, batch, 9)
    assert rm.read("orders", 0, 0, 1 << 20, True)[0] == 0
    assert rm.read("orders", 0, 99, 1 << 20, True)[0] != 0
    snap = rm.topic_stats.snapshot()
    assert meter(snap, "BytesOutPerSec", "orders") == len(batch)
    assert (meter(snap, "TotalFetchRequestsPerSec", "orders"),
            meter(snap, "FailedFetchRequestsPerSec", "orders")) == (2, 1)


def test_unknown_topics_grow_no_meters_and_deleted_ones_leave_theirs_in_the_total():
    rm = ReplicaManager()
    for i in range(100):
        rm.append_records(f"no-such-topic-{i}", 0, build_batch([(b"k", b"v")]), 9)
    assert not [k for k in rm.topic_stats.snapshot() if "topic=" in k]
    rm.ensure_partitions("gone", uuid.uuid4(), 1)
    rm.append_records("gone", 0, build_batch([(b"k", b"v")]), 9)
    rm.delete_topic("gone")
    snap = rm.topic_stats.snapshot()
    assert not [k for k in snap if "topic=gone" in k]
    assert meter(snap, "MessagesInPerSec") == 1


def test_threads_marking_one_topic_lose_no_count():
    stats = BrokerTopicStats()

    def produce():
        for _ in range(10_000):
            stats.produced("t", 10, 2)

    threads = [threading.Thread(target=produce) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = stats.snapshot()
    assert meter(snap, "TotalProduceRequestsPerSec", "t") == 40_000
    assert meter(snap, "MessagesInPerSec", "t") == 80_000
