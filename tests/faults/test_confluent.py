"""Faults against confluent-kafka (librdkafka): the broker going away and back,
errors on fetched partitions, answers delayed, cut and throttled."""

from __future__ import annotations

import socket

import pytest

import kafka_net
from kafka_net.capture.format import RESPONSE
from kafka_net.protocol.api_keys import ApiKey
from tests.faults.support import capture_records, fault_notes
from tests.support import wait_until

confluent_kafka = pytest.importorskip("confluent_kafka")


@pytest.fixture
def broker():
    with kafka_net.Broker(captures=True) as b:
        yield b


def _producer(broker, **extra):
    return confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers,
                                     "enable.idempotence": True, "linger.ms": 5,
                                     "reconnect.backoff.ms": 50,
                                     "reconnect.backoff.max.ms": 200, **extra})


def _consume_all(broker, topic: str, expected: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": broker.bootstrap_servers, "group.id": f"check-{topic}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    for _ in range(200):                       # bounded: at most 200 polls of 0.2 s
        if len(values) >= expected:
            break
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            values.append(msg.value())
    consumer.close()
    return values


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def test_broker_down_two_seconds_keeps_every_acknowledged_record(broker):
    broker.create_topic("ledger", partitions=2)
    acked: list[bytes] = []
    producer = _producer(broker, **{"message.timeout.ms": 30000})

    def delivered(err, msg):
        if err is None:
            acked.append(msg.value())

    for i in range(50):
        producer.produce("ledger", f"before-{i}".encode(), partition=i % 2,
                         on_delivery=delivered)
    producer.flush(30)
    fault = broker.faults.add(unavailable_ms=2000)
    assert wait_until(lambda: _refused(broker.port), timeout=5)   # the listener refuses
    for i in range(50):                        # sent while the broker is away
        producer.produce("ledger", f"during-{i}".encode(), partition=i % 2,
                         on_delivery=delivered)
    assert wait_until(lambda: not _refused(broker.port), timeout=10)   # and accepts again
    assert producer.flush(30) == 0
    assert fault.hits == 1
    assert len(acked) == 100
    assert sorted(_consume_all(broker, "ledger", 100)) == sorted(acked)
    notes = [n for _, n in fault_notes(broker.capture_dir)]
    assert notes and all(n["action"] == "unavailable" for n in notes)   # each cut connection


def test_fetch_errors_on_one_partition_then_the_consumer_gets_everything(broker):
    broker.create_topic("events", partitions=2)
    producer = _producer(broker)
    for i in range(20):
        producer.produce("events", f"e{i}".encode(), partition=i % 2)
    producer.flush(30)
    with broker.faults.add(api="Fetch", topic="events", partitions=[1],
                           error="NOT_LEADER_OR_FOLLOWER", count=3) as fault:
        values = _consume_all(broker, "events", 20)
        assert fault.hits == 3
    assert sorted(values) == sorted(f"e{i}".encode() for i in range(20))


def test_a_delayed_and_a_throttled_answer_still_arrive(broker):
    broker.create_topic("slow")
    delay = broker.faults.add(api="Produce", delay_ms=300, once=True)
    throttle = broker.faults.add(api="Produce", throttle_ms=250, nth=2, once=True)
    producer = _producer(broker, **{"linger.ms": 0})
    for i in range(3):
        producer.produce("slow", f"s{i}".encode())
        assert producer.flush(30) == 0
    assert (delay.hits, throttle.hits) == (1, 1)

    def answers():
        return [r for r in capture_records(broker.capture_dir)
                if r.direction == RESPONSE and r.api_key == ApiKey.PRODUCE]
    # A response is recorded once fully written, which the client may see first.
    assert wait_until(lambda: len(answers()) == 3), answers()
    assert sorted(_consume_all(broker, "slow", 3)) == [b"s0", b"s1", b"s2"]


def test_a_connection_closed_after_the_answer_is_reopened(broker):
    broker.create_topic("cut")
    fault = broker.faults.add(api="Produce", close="after", once=True)
    producer = _producer(broker, **{"linger.ms": 0})
    for i in range(3):
        producer.produce("cut", f"c{i}".encode())
        assert producer.flush(30) == 0
    assert fault.hits == 1
    assert sorted(_consume_all(broker, "cut", 3)) == [b"c0", b"c1", b"c2"]


def test_a_seeded_chaos_soak_loses_and_duplicates_nothing(broker):
    broker.create_topic("soak", partitions=3)
    chaos = broker.faults.chaos(seed=31, probability=0.2, api="Produce")
    acked: list[bytes] = []
    producer = _producer(broker, **{"linger.ms": 0, "message.timeout.ms": 60000,
                                    "socket.timeout.ms": 3000})

    def delivered(err, msg):
        if err is None:
            acked.append(msg.value())

    for i in range(60):
        producer.produce("soak", f"m{i}".encode(), partition=i % 3, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert chaos.hits > 0
    chaos.remove()
    assert len(acked) == 60
    assert sorted(_consume_all(broker, "soak", 60)) == sorted(acked)   # once each
