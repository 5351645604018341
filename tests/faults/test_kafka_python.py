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


def test_a_dropped_offset_commit_answer_is_retried(broker):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    broker.create_topic("jobs")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    for i in range(3):
        producer.send("jobs", f"j{i}".encode()).get(timeout=30)
    producer.close()
    tp = TopicPartition("jobs", 0)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="workers",
                             enable_auto_commit=False, session_timeout_ms=6000,
                             heartbeat_interval_ms=2000, request_timeout_ms=6500)
    consumer.assign([tp])
    with broker.faults.add(api="OffsetCommit", group="workers", drop=True,
                           once=True) as fault:
        # The first answer never comes: the request times out (6.5 s), and the
        # commit, given longer than that, is sent again.
        consumer.commit({tp: _offset(3)}, timeout_ms=30000)
        assert fault.hits == 1
    assert consumer.committed(tp) == 3
    consumer.close()
    commits = [r for r in requests_after(broker.capture_dir, 0)
               if r.api_key == ApiKey.OFFSET_COMMIT]
    assert len(commits) == 2


def _offset(n: int):
    from kafka.structs import OffsetAndMetadata
    try:
        return OffsetAndMetadata(n, "", -1)
    except TypeError:               # kafka-python before leader epochs
        return OffsetAndMetadata(n, "")


@pytest.mark.kafka_faults({"api": "CreateTopics", "error": "POLICY_VIOLATION", "once": True})
def test_the_marker_puts_a_top_level_error_on_the_tests_broker(kafka_broker_function,
                                                                 _kafka_faults_marker):
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import PolicyViolationError

    admin = KafkaAdminClient(bootstrap_servers=kafka_broker_function.bootstrap_servers)
    with pytest.raises(PolicyViolationError):
        admin.create_topics([NewTopic("refused", 1, 1)])
    admin.create_topics([NewTopic("accepted", 1, 1)])     # once: the next one is served
    admin.close()
    assert _kafka_faults_marker[0].hits == 1
    assert "refused" not in kafka_broker_function.topics()
    assert "accepted" in kafka_broker_function.topics()
