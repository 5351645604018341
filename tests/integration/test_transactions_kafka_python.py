"""kafka-python (3.0) transactions against a real kafka-net broker.

The same checks as test_transactions_confluent.py with kafka-python's
transactional KafkaProducer (``transactional_id``) and a read_committed
KafkaConsumer: committed messages read and aborted ones never, a
consume-transform-produce loop whose offsets are committed only with its
transaction, and fencing by a second producer (ProducerFencedError, fatal).
"""

from __future__ import annotations

import pytest

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError, ProducerFencedError

from tests.integration.client_support import (
    bootstrap, fast_group_config, kafka_python_member, read_all)
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_S = 20

as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


def poll_once(consumer) -> list:
    return [r for records in consumer.poll(timeout_ms=100).values() for r in records]


def transactional(server, txn_id: str) -> KafkaProducer:
    producer = KafkaProducer(bootstrap_servers=bootstrap(server), transactional_id=txn_id)
    producer.init_transactions()
    return producer


def read(server, topic: str, n: int, isolation: str = "read_committed") -> list[tuple]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap(server), isolation_level=isolation,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        return [(r.offset, r.value) for r in read_all(poll_once, consumer, n)]
    finally:
        consumer.close()


def test_committed_messages_are_read_and_aborted_ones_never(server):
    topic = "kp-txn"
    producer = transactional(server, "kp-txn-id")
    try:
        producer.begin_transaction()
        for value in (b"c0", b"c1", b"c2"):
            producer.send(topic, value)
        producer.commit_transaction()
        producer.begin_transaction()
        for value in (b"a0", b"a1"):
            producer.send(topic, value)
        producer.flush(TIMEOUT_S)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"c3")
        producer.commit_transaction()
    finally:
        producer.close(TIMEOUT_S)
    assert read(server, topic, 4) == [(0, b"c0"), (1, b"c1"), (2, b"c2"), (7, b"c3")]
    assert read(server, topic, 6, "read_uncommitted") == [
        (0, b"c0"), (1, b"c1"), (2, b"c2"), (4, b"a0"), (5, b"a1"), (7, b"c3")]


def test_consume_transform_produce_commits_offsets_only_with_the_transaction(server):
    source, sink, group = "kp-ctp-in", "kp-ctp-out", "kp-ctp"
    plain = KafkaProducer(bootstrap_servers=bootstrap(server))
    for i in range(4):
        plain.send(source, b"m%d" % i)
    plain.close(TIMEOUT_S)
    consumer = kafka_python_member(source, bootstrap_servers=bootstrap(server), group_id=group,
                                   enable_auto_commit=False, auto_offset_reset="earliest",
                                   isolation_level="read_committed")
    producer = transactional(server, "kp-ctp-id")
    try:
        inputs = read_all(poll_once, consumer, 4)
        partition = TopicPartition(source, 0)

        def transform(commit: bool) -> None:
            producer.begin_transaction()
            for r in inputs:
                producer.send(sink, r.value.upper())
            producer.send_offsets_to_transaction(
                {partition: OffsetAndMetadata(consumer.position(partition), "", -1)},
                consumer.group_metadata())
            if commit:
                producer.commit_transaction()
            else:
                producer.flush(TIMEOUT_S)
                producer.abort_transaction()

        transform(commit=False)
        assert consumer.committed(partition) is None
        transform(commit=True)
        assert consumer.committed(partition) == 4
    finally:
        producer.close(TIMEOUT_S)
        consumer.close()
    assert read(server, sink, 4) == [(5, b"M0"), (6, b"M1"), (7, b"M2"), (8, b"M3")]


def test_a_second_producer_fences_the_first(server):
    topic = "kp-fence"
    first = transactional(server, "kp-fence-id")
    first.begin_transaction()
    first.send(topic, b"zombie")
    first.flush(TIMEOUT_S)
    second = transactional(server, "kp-fence-id")   # aborts the first one's transaction
    try:
        second.begin_transaction()
        second.send(topic, b"winner")
        second.commit_transaction()
        with pytest.raises(KafkaError) as info:
            first.commit_transaction()
        assert isinstance(info.value, ProducerFencedError), repr(info.value)
    finally:
        first.close(0)
        second.close(TIMEOUT_S)
    assert read(server, topic, 1) == [(2, b"winner")]
