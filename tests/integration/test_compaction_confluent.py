"""Log compaction seen by a real client (confluent-kafka / librdkafka).

An idempotent producer writes ten values for each of twenty keys, then
tombstones for five of them, to a topic created by the AdminClient with
``cleanup.policy=compact`` and small segments; the broker runs its
LogCleaner thread with a short ``log.cleaner.backoff.ms``.  A consumer
reading from the beginning then sees exactly one value per live key (the
last one, at the offset its delivery report gave), no deleted key, and
offsets that only increase.  A record without a key is refused with
INVALID_RECORD.

Rules kept: loopback only, every wait bounded, no assertion on elapsed time,
every client closed before its server stops.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_net.protocol.records import decode_records, split_batches
from tests.integration.client_support import bootstrap, poll_until
from tests.support import make_config, server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_S = 20
KEYS = [f"key-{n}".encode() for n in range(20)]
DELETED = KEYS[:5]
ROUNDS = 10

server = server_fixture(lambda: make_config(log_cleaner_backoff_ms=20), scope="module")


def create_compacted(server, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    futures = admin.create_topics([NewTopic(topic, 1, 1, config={
        "cleanup.policy": "compact", "internal.segment.bytes": "2048",
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0"})])
    futures[topic].result(TIMEOUT_S)


class Writer:
    """An idempotent producer keeping each delivered record's offset by key."""

    def __init__(self, server) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap(server),
                                  "enable.idempotence": True, "linger.ms": 5})
        self.offsets: dict[bytes, int] = {}
        self.errors: list = []

    def send(self, topic: str, key, value) -> None:
        def on_delivery(err, msg):
            if err is not None:
                self.errors.append(err)
            else:
                self.offsets[msg.key()] = msg.offset()
        self.producer.produce(topic, key=key, value=value, on_delivery=on_delivery)

    def flush(self) -> None:
        assert self.producer.flush(TIMEOUT_S) == 0


def stored(server, topic: str) -> list:
    error, result = server.replica_manager.read(topic, 0, 0, 1 << 30, True)
    assert error == 0
    return [r for b in split_batches(bytes(result.records)) for r in decode_records(b)]


def is_compacted(server, topic: str) -> bool:
    keys = [r.key for r in stored(server, topic) if r.key in KEYS]
    nulls = [r for r in stored(server, topic) if r.value is None]
    return len(keys) == len(set(keys)) == len(KEYS) - len(DELETED) and not nulls


def read_from_start(server, topic: str, until) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "compaction-reader",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

        def poll_once(c):
            msg = c.poll(0.2)
            if msg is None or msg.error():
                return []
            return [(msg.offset(), msg.key(), msg.value())]
        return poll_until(poll_once, [consumer], lambda got: until(got[consumer]),
                          timeout=TIMEOUT_S)[consumer]
    finally:
        consumer.close()


def test_a_compacted_topic_keeps_one_value_per_key_for_a_consumer(server):
    topic = "compacted-changelog"
    create_compacted(server, topic)
    writer = Writer(server)
    for round_ in range(ROUNDS):
        for key in KEYS:
            writer.send(topic, key, b"value %d of %s" % (round_, key))
        writer.flush()
    for key in DELETED:
        writer.send(topic, key, None)
    writer.flush()
    latest = {k: writer.offsets[k] for k in KEYS if k not in DELETED}
    # New records with keys of their own roll the segments, so the last values
    # leave the active segment, and give the cleaner new dirty data each time:
    # the tombstones (delete.retention.ms=0) go at the cleaning after the first.
    deadline = time.monotonic() + TIMEOUT_S
    filler = 0
    while not is_compacted(server, topic) and time.monotonic() < deadline:
        writer.send(topic, b"filler-%d" % filler, b"x" * 100)
        writer.flush()
        filler += 1
        time.sleep(0.02)
    writer.producer.flush(TIMEOUT_S)
    assert not writer.errors

    expected_count = len(latest) + filler
    got = read_from_start(server, topic, lambda got: len(got) >= expected_count)
    mine = [(offset, key, value) for offset, key, value in got if key in KEYS]
    assert sorted(key for _, key, _ in mine) == sorted(latest)          # one per live key
    assert all(value == b"value %d of %s" % (ROUNDS - 1, key) for _, key, value in mine)
    assert {key: offset for offset, key, _ in mine} == latest          # offsets unchanged
    assert [offset for offset, _, _ in got] == sorted({o for o, _, _ in got})
    assert len(got) == expected_count


def test_a_record_without_a_key_is_refused(server):
    topic = "compacted-keyless"
    create_compacted(server, topic)
    producer = Producer({"bootstrap.servers": bootstrap(server), "retries": 0})
    reports = []
    producer.produce(topic, value=b"no key", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(TIMEOUT_S) == 0
    producer.produce(topic, key=b"k", value=b"keyed",
                     on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(TIMEOUT_S) == 0
    assert reports[0] is not None and reports[0].code() == KafkaError.INVALID_RECORD
    assert reports[1] is None
