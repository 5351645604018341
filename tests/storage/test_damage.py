"""Damage is loud (issue 30): a damaged batch header in an old segment, a
segment file gone, garbled checkpoints and meta.properties, a damaged metadata
log -- each met by a real ``kafka-net serve`` and a real client, each with the
answer Kafka gives (or, where Kafka is silent, a refusal that says what is
wrong)."""

from __future__ import annotations

import re

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.storage.bad_day_support import (  # noqa: E402
    TOPIC, batch_positions, flip, running, segment_files, stop_cleanly)

RECORDS = 24_000
VALUE = b"v" * 100   # ~24 records per 4 KiB batch: about 3 segments of 1 MiB
TIMEOUT = 60.0


def fill(port: int, records: int = RECORDS) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=TIMEOUT)
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 5,
                         "batch.size": 4096, "acks": "all"})
    for i in range(records):
        producer.produce(TOPIC, VALUE, key=str(i).encode())
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(TIMEOUT) == 0


def consume_from(port: int, offset: int, until_offset: int) -> tuple[int, KafkaError | None]:
    """Read from ``offset``: (the next offset reached, the first error met)."""
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "reader",
                         "enable.auto.commit": False, "fetch.error.backoff.ms": 100})
    consumer.assign([TopicPartition(TOPIC, 0, offset)])
    position = offset
    try:
        for _ in range(200):
            for message in consumer.consume(1000, timeout=1.0):
                if message.error() is not None:
                    return position, message.error()
                assert message.offset() == position, "a record skipped"
                position += 1
            if position >= until_offset:
                return position, None
        return position, None
    finally:
        consumer.close()


@pytest.fixture
def filled(tmp_path):
    """A log dir holding RECORDS records in about 3 segments, the broker stopped."""
    log_dir = str(tmp_path / "logs")
    with running(log_dir) as (broker, port):
        fill(port)
        stop_cleanly(broker)
    assert len(segment_files(log_dir)) >= 3
    return log_dir


def test_damaged_header_in_an_old_segment_is_corrupt_message(filled):
    first = segment_files(filled)[0]
    batches = batch_positions(first)
    position, damaged_base, _ = batches[len(batches) // 2]
    flip(first, position)
    with running(filled) as (broker, port):
        reached, error = consume_from(port, 0, RECORDS)
        assert reached == damaged_base, "records before the damage are all served"
        # CORRUPT_MESSAGE (2), which librdkafka names INVALID_MSG
        assert error is not None and error.code() == KafkaError.INVALID_MSG, error
        broker.wait_for(rf"ERROR Error processing fetch at offset {damaged_base} on partition "
                        rf"{TOPIC}-0: Corrupt batch header at position {position} ")
        # The consumer retried: still one line per interval.
        assert len(re.findall("Corrupt batch header", broker.stderr)) == 1


def test_damaged_first_header_of_a_segment_is_corrupt_message(filled):
    second = segment_files(filled)[1]
    base = batch_positions(second)[0][1]
    flip(second, 0, 12)
    with running(filled) as (broker, port):
        reached, error = consume_from(port, base - 10, RECORDS)
        assert reached == base
        # CORRUPT_MESSAGE (2), which librdkafka names INVALID_MSG
        assert error is not None and error.code() == KafkaError.INVALID_MSG, error
        broker.wait_for("Corrupt batch header at position 0 ")
