"""Faults against kafka-python: each fault fires where it was asked, the client
reacts as against a real broker's bad day, and the capture shows it."""

from __future__ import annotations

import pytest

import kafka_net
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.faults.support import fault_notes, requests_after


@pytest.fixture
def broker():
    with kafka_net.Broker(captures=True) as b:
        yield b


def test_not_leader_twice_on_one_partition_then_success(broker):
    from kafka import KafkaProducer

    broker.create_topic("orders", partitions=2)
    with broker.faults.add(api="Produce", topic="orders", partitions=[1],
                           error="NOT_LEADER_OR_FOLLOWER", count=2) as fault:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, retries=5,
                                 retry_backoff_ms=50, linger_ms=0)
        first = producer.send("orders", b"p0", partition=0).get(timeout=30)
        meta = producer.send("orders", b"p1", partition=1).get(timeout=30)
        producer.close()
        assert fault.hits == 2
    assert (first.partition, first.offset) == (0, 0)
    assert (meta.partition, meta.offset) == (1, 0)       # stored once, after the faults
    notes = fault_notes(broker.capture_dir)
    assert [n["error_code"] for _, n in notes] == [ErrorCode.NOT_LEADER_OR_FOLLOWER] * 2
    assert all(n["topic"] == "orders" and n["partitions"] == [1] for _, n in notes)
    # NOT_LEADER_OR_FOLLOWER makes a client look the leader up again: its next
    # requests after the first fault include a Metadata request.
    record, _ = notes[0]
    later = requests_after(broker.capture_dir, record.timestamp_ns)
    assert ApiKey.METADATA in [r.api_key for r in later]


def test_an_error_after_the_append_is_not_duplicated_by_the_idempotent_producer(broker):
    from kafka import KafkaConsumer, KafkaProducer

    broker.create_topic("payments")
    with broker.faults.add(api="Produce", topic="payments", error="REQUEST_TIMED_OUT",
                           when="after", once=True) as fault:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers,
                                 enable_idempotence=True, acks="all", retries=5,
                                 retry_backoff_ms=50)
        meta = producer.send("payments", b"once").get(timeout=30)
        producer.close()
        assert fault.hits == 1
    assert meta.offset == 0
    consumer = KafkaConsumer("payments", bootstrap_servers=broker.bootstrap_servers,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    values = [r.value for r in consumer]
    consumer.close()
    assert values == [b"once"]          # appended by the first try, acknowledged by the retry


def test_a_rule_never_fires_outside_its_selectors(broker):
    from kafka import KafkaProducer

    broker.create_topic("a")
    broker.create_topic("b")
    with broker.faults.add(api="Produce", topic="b", error="NOT_LEADER_OR_FOLLOWER",
                           client_id="someone-else") as fault:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers,
                                 client_id="me", retries=0)
        producer.send("a", b"x").get(timeout=30)
        producer.send("b", b"y").get(timeout=30)
        producer.close()
        assert fault.hits == 0
        assert broker.faults.list()[0]["matched"] == 0
