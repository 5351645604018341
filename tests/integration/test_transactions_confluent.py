"""confluent-kafka (librdkafka) transactions against a real kafka-net broker.

* a transactional Producer commits and aborts; a read_committed Consumer
  gets exactly the committed messages (a read_uncommitted one gets the aborted
  ones too), and the log holds a COMMIT or ABORT control batch after each;
* consume-transform-produce: offsets sent with send_offsets_to_transaction
  are not committed after an abort, and are after a commit;
* a second producer with the same transactional.id fences the first, whose
  commit then fails with a fatal fenced error;
* a transaction open past its transaction.timeout.ms is aborted by the
  broker's periodic check, and its producer is fenced.

Rules kept: loopback only, every wait bounded, no assertion on elapsed time.
"""

from __future__ import annotations

import pytest

from confluent_kafka import (
    OFFSET_BEGINNING, OFFSET_INVALID, Consumer, KafkaError, KafkaException, Producer,
    TopicPartition)

from tests.integration.client_support import (
    bootstrap, fast_group_config, read_all, stored_batches)
from tests.support import as_version_fixture, running_server, server_fixture, wait_until

pytestmark = pytest.mark.interop

TIMEOUT_S = 20

as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


def poll_once(consumer) -> list:
    msg = consumer.poll(0.1)
    if msg is None:
        return []
    if msg.error():
        raise AssertionError(f"consumer error: {msg.error()}")
    return [msg]


def transactional(server, txn_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap(server), "transactional.id": txn_id})
    producer.init_transactions(TIMEOUT_S)
    return producer


def read(server, topic: str, n: int, isolation: str = "read_committed") -> list[tuple]:
    """(offset, value) of ``n`` messages from the start of partition 0."""
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": f"{topic}-read",
                         "enable.auto.commit": False, "isolation.level": isolation})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        return [(m.offset(), m.value()) for m in read_all(poll_once, consumer, n)]
    finally:
        consumer.close()


def control_offsets(server, topic: str) -> list[int]:
    return [b.base_offset for b in stored_batches(server, topic) if b.is_control]


def test_committed_messages_are_read_and_aborted_ones_never(server):
    topic = "ck-txn"
    producer = transactional(server, "ck-txn-id")
    producer.begin_transaction()
    for value in (b"c0", b"c1", b"c2"):
        producer.produce(topic, value=value)
    producer.commit_transaction(TIMEOUT_S)
    producer.begin_transaction()
    for value in (b"a0", b"a1"):
        producer.produce(topic, value=value)
    assert producer.flush(TIMEOUT_S) == 0       # written, then aborted
    producer.abort_transaction(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, value=b"c3")
    producer.commit_transaction(TIMEOUT_S)

    assert control_offsets(server, topic) == [3, 6, 8]
    assert read(server, topic, 4) == [(0, b"c0"), (1, b"c1"), (2, b"c2"), (7, b"c3")]
    assert read(server, topic, 6, "read_uncommitted") == [
        (0, b"c0"), (1, b"c1"), (2, b"c2"), (4, b"a0"), (5, b"a1"), (7, b"c3")]


def test_consume_transform_produce_commits_offsets_only_with_the_transaction(server):
    source, sink, group = "ck-ctp-in", "ck-ctp-out", "ck-ctp"
    plain = Producer({"bootstrap.servers": bootstrap(server)})
    for i in range(4):
        plain.produce(source, value=b"m%d" % i)
    assert plain.flush(TIMEOUT_S) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    producer = transactional(server, "ck-ctp-id")
    try:
        consumer.subscribe([source])
        inputs = read_all(poll_once, consumer, 4)

        def transform(commit: bool) -> None:
            producer.begin_transaction()
            for m in inputs:
                producer.produce(sink, value=m.value().upper())
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(),
                TIMEOUT_S)
            if commit:
                producer.commit_transaction(TIMEOUT_S)
            else:
                assert producer.flush(TIMEOUT_S) == 0
                producer.abort_transaction(TIMEOUT_S)

        def committed() -> int:
            [tp] = consumer.committed([TopicPartition(source, 0)], TIMEOUT_S)
            return tp.offset

        transform(commit=False)
        assert committed() == OFFSET_INVALID
        transform(commit=True)
        assert committed() == 4
    finally:
        consumer.close()
    assert read(server, sink, 4) == [(5, b"M0"), (6, b"M1"), (7, b"M2"), (8, b"M3")]


def test_a_second_producer_fences_the_first(server):
    topic = "ck-fence"
    first = transactional(server, "ck-fence-id")
    first.begin_transaction()
    first.produce(topic, value=b"zombie")
    assert first.flush(TIMEOUT_S) == 0
    second = transactional(server, "ck-fence-id")   # aborts the first one's transaction
    second.begin_transaction()
    second.produce(topic, value=b"winner")
    second.commit_transaction(TIMEOUT_S)

    with pytest.raises(KafkaException) as info:
        first.commit_transaction(TIMEOUT_S)
    error = info.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED, error
    assert read(server, topic, 1) == [(2, b"winner")]


def test_a_transaction_past_its_timeout_is_aborted_and_the_producer_fenced():
    """transaction.timeout.ms=1000 and a 50 ms check: the broker aborts the open
    transaction by itself; the producer's commit then fails, fenced."""
    topic = "ck-timeout"
    config = fast_group_config(transaction_abort_timed_out_transaction_cleanup_interval_ms=50)
    with running_server(config) as broker:
        producer = Producer({"bootstrap.servers": bootstrap(broker),
                             "transactional.id": "ck-timeout-id",
                             "transaction.timeout.ms": 1000})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        producer.produce(topic, value=b"late")
        assert producer.flush(TIMEOUT_S) == 0
        coordinator = broker.transaction_coordinator
        assert wait_until(
            lambda: coordinator.describe("ck-timeout-id").state.value == "CompleteAbort",
            TIMEOUT_S)
        with pytest.raises(KafkaException) as info:
            producer.commit_transaction(TIMEOUT_S)
        error = info.value.args[0]
        assert error.fatal() and error.code() == KafkaError._FENCED, error

        after = transactional(broker, "ck-timeout-id")
        after.begin_transaction()
        after.produce(topic, value=b"after")
        after.commit_transaction(TIMEOUT_S)
        assert control_offsets(broker, topic) == [1, 3]
        assert read(broker, topic, 1) == [(2, b"after")]
