"""confluent-kafka (librdkafka) against a real kafka-net broker.

Issue 3's "Done when", for confluent-kafka 2.16 (reference section 5):

* its default producer (acks=all, not idempotent) produces keyed messages
  with headers, compressed with gzip, lz4, zstd and snappy, and every one is
  read back in order, offsets dense from 0, by an assigned consumer starting
  at the beginning and by a consumer group (``auto.offset.reset=earliest``);
* acks 0, 1 and all each land;
* two consumers in one group split a 4-partition topic (created with the
  AdminClient), the survivor takes over when the other closes, and a
  restarted member resumes from the committed offsets;
* librdkafka negotiates flexible versions where it has them (Metadata,
  Produce, Fetch, ListOffsets, OffsetCommit, OffsetFetch, ApiVersions v3).

Rules kept: loopback only, every wait bounded, no assertion on elapsed time,
every client closed before its server stops.
"""

from __future__ import annotations


import pytest

from confluent_kafka import (
    OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.client_support import (
    CODECS, bootstrap, fast_group_config, is_split, messages, partitions_of, poll_until, read_all,
    stored_batches)
from tests.support import as_version_fixture, playing, running_server, server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_S = 20
N = 30
CLIENT = b"librdkafka"  # the "client" header of every message

# First flexible version (flexibleVersions in Kafka's <Api>Request.json) of
# the APIs for which librdkafka's own range reaches it (reference 5.4).
FLEXIBLE_FROM = {18: 3, 3: 9, 0: 9, 1: 12, 2: 6, 8: 8, 9: 6}


# -- fixtures and helpers -------------------------------------------------------------

as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


def produce(server, topic: str, items, **config) -> list[tuple]:
    """Produce every item, flush; the delivery reports as (error, partition, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap(server), **config})
    reports = []

    def on_delivery(err, msg):
        reports.append((err, msg.partition(), msg.offset()))

    for key, value, headers in items:
        producer.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
    assert producer.flush(TIMEOUT_S) == 0, "messages still queued after flush"
    return reports


def poll_once(consumer) -> list:
    """One short poll: the message, if any; every message error but EOF fails."""
    msg = consumer.poll(0.1)
    if msg is None:
        return []
    if msg.error():
        if msg.error().code() == KafkaError._PARTITION_EOF:
            return []
        raise AssertionError(f"consumer error: {msg.error()}")
    return [msg]


def check_read_back(msgs, expected) -> None:
    assert [m.offset() for m in msgs] == list(range(len(expected)))
    assert [(m.key(), m.value(), list(m.headers() or [])) for m in msgs] == expected


def read_assigned(server, topic: str, n: int) -> list:
    # librdkafka wants a group.id even for assign(); nothing is committed.
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": f"{topic}-assign",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        return read_all(poll_once, consumer, n)
    finally:
        consumer.close()


def group_consumer(server, group: str, **config) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap(server), "group.id": group,
                     "auto.offset.reset": "earliest", **config})


def read_as_group(server, topic: str, group: str, n: int) -> list:
    consumer = group_consumer(server, group)
    try:
        consumer.subscribe([topic])
        return read_all(poll_once, consumer, n)
    finally:
        consumer.close()


# -- produce and read back ------------------------------------------------------------

@pytest.mark.parametrize("codec", list(CODECS))
def test_compressed_messages_with_keys_and_headers_read_back(server, codec):
    topic = f"ck-{codec}"
    expected = messages(topic, CLIENT, N)

    reports = produce(server, topic, expected, **{"compression.type": codec})

    assert [err for err, _, _ in reports] == [None] * N
    assert sorted(offset for _, _, offset in reports) == list(range(N))
    assert {b.compression for b in stored_batches(server, topic)} == {CODECS[codec]}
    check_read_back(read_assigned(server, topic, N), expected)
    check_read_back(read_as_group(server, topic, f"{topic}-group", N), expected)


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_each_acks_setting_lands(server, acks):
    topic = f"ck-acks-{acks}"
    expected = messages(topic, CLIENT, N)

    reports = produce(server, topic, expected, acks=acks)

    assert [err for err, _, _ in reports] == [None] * N
    if acks != "0":   # acks=0 gets no response: the client never learns the offsets
        assert sorted(offset for _, _, offset in reports) == list(range(N))
    check_read_back(read_assigned(server, topic, N), expected)


# -- consumer groups ------------------------------------------------------------------

def produce_to_partitions(server, topic: str, tag: str, per_partition: int,
                          partitions: int = 4) -> set[tuple[int, bytes]]:
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    errors = []
    sent = set()
    for p in range(partitions):
        for i in range(per_partition):
            value = f"{tag}-{p}-{i}".encode()
            producer.produce(topic, value=value, partition=p,
                             on_delivery=lambda err, msg: errors.append(err) if err else None)
            sent.add((p, value))
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors
    return sent


def test_group_splits_partitions_fails_over_and_resumes_from_commits(server):
    topic, group = "ck-group-split", "ck-split-group"
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    for future in admin.create_topics([NewTopic(topic, num_partitions=4,
                                                replication_factor=1)]).values():
        future.result(timeout=TIMEOUT_S)

    # heartbeat.interval.ms: members learn of a rebalance from their heartbeat
    # (every 3 s by default); 100 ms keeps the test short.
    first = group_consumer(server, group, **{"heartbeat.interval.ms": 100})
    second = group_consumer(server, group, **{"heartbeat.interval.ms": 100})
    closed = set()
    try:
        first.subscribe([topic])
        second.subscribe([topic])
        poll_until(poll_once, [first, second], lambda _: is_split(first, second))
        a, b = partitions_of(first), partitions_of(second)
        assert is_split(first, second), (a, b)

        sent = produce_to_partitions(server, topic, "split", per_partition=5)
        got = poll_until(poll_once, [first, second],
                         lambda r: len(r[first]) + len(r[second]) >= len(sent))
        assert {(m.partition(), m.value()) for m in got[first]} == {m for m in sent if m[0] in a}
        assert {(m.partition(), m.value()) for m in got[second]} == {m for m in sent if m[0] in b}

        # close() commits the consumed offsets and leaves the group.
        second.close()
        closed.add(second)
        poll_until(poll_once, [first], lambda _: partitions_of(first) == {0, 1, 2, 3})
        assert partitions_of(first) == {0, 1, 2, 3}
        sent = produce_to_partitions(server, topic, "takeover", per_partition=3)
        got = poll_until(poll_once, [first], lambda r: len(r[first]) >= len(sent))
        assert sorted((m.partition(), m.value()) for m in got[first]) == sorted(sent)

        first.commit(asynchronous=False)
        committed = {tp.partition: tp.offset for tp in first.committed(
            [TopicPartition(topic, p) for p in range(4)], timeout=TIMEOUT_S)}
        assert committed == {p: 5 + 3 for p in range(4)}
    finally:
        for c in (first, second):
            if c not in closed:
                c.close()

    sent = produce_to_partitions(server, topic, "restart", per_partition=2)
    restarted = group_consumer(server, group)
    try:
        restarted.subscribe([topic])
        got = poll_until(poll_once, [restarted],
                         lambda r: len(r[restarted]) >= len(sent))[restarted]
    finally:
        restarted.close()
    assert sorted((m.partition(), m.value()) for m in got) == sorted(sent)
    assert {m.partition(): m.offset() for m in got if m.value().endswith(b"-0")} == committed


# -- negotiated versions --------------------------------------------------------------

def test_negotiated_versions_are_flexible(as_version):
    """Produce, group-consume, commit and leave on a fresh broker: every
    request of the APIs librdkafka can send flexibly used a flexible version."""
    with running_server(playing(fast_group_config(), as_version)) as s:
        topic = "ck-flexible"
        expected = messages(topic, CLIENT, 5)
        assert [e for e, _, _ in produce(s, topic, expected)] == [None] * 5
        consumer = group_consumer(s, "ck-flexible-group")
        try:
            consumer.subscribe([topic])
            check_read_back(read_all(poll_once, consumer, 5), expected)
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()
        seen = {key: s.apis.metrics.requests_seen(key) for key in FLEXIBLE_FROM}
    assert all(seen.values()), {k: v for k, v in seen.items() if not v}
    not_flexible = {key: versions for key, versions in seen.items()
                    if min(versions) < FLEXIBLE_FROM[key]}
    assert not not_flexible, f"non-flexible versions used: {not_flexible} (all: {seen})"
