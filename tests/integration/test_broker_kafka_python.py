"""kafka-python against a real kafka-net broker: produce, fetch and consumer groups.

Issue 3's "Done when", for kafka-python 3.0.12 (reference section 5):

* its default producer (idempotent, acks=all) produces keyed messages with
  headers, compressed with gzip, lz4, zstd and snappy, and every one is read
  back in order, offsets dense from 0, by an assigned consumer that seeks to
  the beginning and by a consumer group (``auto_offset_reset='earliest'``);
* acks 0, 1 and all each land (acks=0 gets no response, so it is checked by
  reading the messages back);
* the idempotent producer works unchanged: InitProducerId was served and the
  stored batches carry its producer id and sequences;
* two consumers in one group split a 4-partition topic, the survivor takes
  over all four when the other closes, and a restarted member resumes from
  the committed offsets;
* the versions it negotiates are the flexible ones (compact encoding, header v2).

Rules kept: loopback only, every wait bounded, no assertion on elapsed time,
every client closed before its server stops (fixtures: server first).
"""

from __future__ import annotations


import pytest

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from tests.integration.client_support import (
    CODECS, bootstrap, fast_group_config, is_split, kafka_python_member, messages, partitions_of,
    poll_in_threads, poll_until, read_all, stored_batches)
from tests.support import as_version_fixture, playing, running_server, server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_S = 20          # bound on any single wait for the client
N = 30                  # messages per produce test
CLIENT = b"kafka-python"  # the "client" header of every message

# First flexible version of each API (``flexibleVersions`` in Kafka's
# clients/src/main/resources/common/message/<Api>Request.json).
FLEXIBLE_FROM = {
    18: 3,   # ApiVersions
    3: 9,    # Metadata
    0: 9,    # Produce
    1: 12,   # Fetch
    2: 6,    # ListOffsets
    8: 8,    # OffsetCommit
    9: 6,    # OffsetFetch
    10: 3,   # FindCoordinator
    11: 6,   # JoinGroup
    13: 4,   # LeaveGroup
    14: 4,   # SyncGroup
    22: 2,   # InitProducerId
}


# -- fixtures and helpers -------------------------------------------------------------

# One broker for the module; each test uses its own topics and groups.
as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


def as_triples(records) -> list[tuple[bytes, bytes, list]]:
    return [(r.key, r.value, [tuple(h) for h in r.headers]) for r in records]


def request_count(server, api_name: str) -> int:
    """Requests of one API answered so far (Kafka's RequestsPerSec count, all versions)."""
    return sum(n for name, n in server.apis.metrics.snapshot().items()
               if name.startswith("kafka.network:type=RequestMetrics,name=RequestsPerSec,")
               and f",request={api_name}," in name)


def produce(server, topic: str, items, **producer_config) -> list[int]:
    """Send every item with one producer, flush, close; the acknowledged offsets."""
    producer = KafkaProducer(bootstrap_servers=bootstrap(server), **producer_config)
    try:
        futures = [producer.send(topic, key=k, value=v, headers=h) for k, v, h in items]
        producer.flush(timeout=TIMEOUT_S)
        return [f.get(timeout=TIMEOUT_S).offset for f in futures]
    finally:
        producer.close(timeout=5)


def poll_once(consumer) -> list:
    """One short poll: the records it returned, every partition's in order."""
    return [r for records in consumer.poll(timeout_ms=100).values() for r in records]


def check_read_back(records, expected) -> None:
    assert [r.offset for r in records] == list(range(len(expected)))
    assert as_triples(records) == expected


def read_assigned(server, topic: str, n: int) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap(server))
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return read_all(poll_once, consumer, n)
    finally:
        consumer.close()


def subscribed(server, topic: str, group: str, **config) -> KafkaConsumer:
    """A group member subscribed to ``topic``, with the topic in its metadata
    (see client_support.kafka_python_member for why)."""
    return kafka_python_member(topic, bootstrap_servers=bootstrap(server), group_id=group,
                               auto_offset_reset="earliest", **config)


def read_as_group(server, topic: str, group: str, n: int) -> list:
    consumer = subscribed(server, topic, group)
    try:
        return read_all(poll_once, consumer, n)
    finally:
        consumer.close()


# -- produce and read back ------------------------------------------------------------

@pytest.mark.parametrize("codec", list(CODECS))
def test_compressed_messages_with_keys_and_headers_read_back(server, codec):
    topic = f"kp-{codec}"
    expected = messages(topic, CLIENT, N)

    offsets = produce(server, topic, expected, compression_type=codec)

    assert offsets == list(range(N))
    # The client really compressed: every stored batch carries the codec
    # (the broker stores batches as they came).
    assert {b.compression for b in stored_batches(server, topic)} == {CODECS[codec]}
    check_read_back(read_assigned(server, topic, N), expected)
    check_read_back(read_as_group(server, topic, f"{topic}-group", N), expected)


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_each_acks_setting_lands(server, acks):
    topic = f"kp-acks-{acks}"
    expected = messages(topic, CLIENT, N)

    offsets = produce(server, topic, expected, acks=acks)

    # No response is sent for acks=0, so the client never learns the offsets
    # (kafka-python makes some up); reading back shows where the messages landed.
    if acks != 0:
        assert offsets == list(range(N))
    check_read_back(read_assigned(server, topic, N), expected)


def test_default_producer_is_idempotent_and_works_unchanged(server):
    topic = "kp-idempotent"
    expected = messages(topic, CLIENT, N)
    init_producer_ids_before = request_count(server, "InitProducerId")

    producer = KafkaProducer(bootstrap_servers=bootstrap(server))
    try:
        futures = [producer.send(topic, key=k, value=v, headers=h) for k, v, h in expected]
        producer.flush(timeout=TIMEOUT_S)
        offsets = [f.get(timeout=TIMEOUT_S).offset for f in futures]
        assert producer.config["enable_idempotence"] is True
        assert producer.config["acks"] == -1
    finally:
        producer.close(timeout=5)

    assert offsets == list(range(N))
    assert request_count(server, "InitProducerId") > init_producer_ids_before
    batches = stored_batches(server, topic)
    assert len({b.producer_id for b in batches}) == 1 and batches[0].has_producer_id
    # Sequences start at 0 and follow the records, batch after batch.
    assert [b.base_sequence for b in batches] == [b.base_offset for b in batches]
    check_read_back(read_assigned(server, topic, N), expected)


# -- consumer groups ------------------------------------------------------------------

def group_consumer(server, topic: str, group: str) -> KafkaConsumer:
    # heartbeat_interval_ms: a member learns of a rebalance from its heartbeat,
    # every 3 s by default; 100 ms keeps the test short without changing what
    # happens.
    return subscribed(server, topic, group, heartbeat_interval_ms=100)


def produce_to_partitions(server, topic: str, tag: str, per_partition: int,
                          partitions: int = 4) -> set[tuple[int, bytes]]:
    """``per_partition`` messages to each partition; {(partition, value)}."""
    producer = KafkaProducer(bootstrap_servers=bootstrap(server))
    try:
        futures = [producer.send(topic, value=f"{tag}-{p}-{i}".encode(), partition=p)
                   for p in range(partitions) for i in range(per_partition)]
        producer.flush(timeout=TIMEOUT_S)
        for f in futures:
            f.get(timeout=TIMEOUT_S)
    finally:
        producer.close(timeout=5)
    return {(p, f"{tag}-{p}-{i}".encode())
            for p in range(partitions) for i in range(per_partition)}


def test_group_splits_partitions_fails_over_and_resumes_from_commits(server):
    topic, group = "kp-group-split", "kp-split-group"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(server))
    try:
        admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)],
                            timeout_ms=TIMEOUT_S * 1000)
    finally:
        admin.close()

    first = group_consumer(server, topic, group)
    second = group_consumer(server, topic, group)
    try:
        # Both members join: the four partitions are split between them.
        poll_in_threads(poll_once, [first, second], lambda _: is_split(first, second))
        a, b = partitions_of(first), partitions_of(second)
        assert is_split(first, second), (a, b)

        # Each member reads exactly its own partitions.
        sent = produce_to_partitions(server, topic, "split", per_partition=5)
        got = poll_until(poll_once, [first, second],
                         lambda r: len(r[first]) + len(r[second]) >= len(sent))
        assert {(r.partition, r.value) for r in got[first]} == {m for m in sent if m[0] in a}
        assert {(r.partition, r.value) for r in got[second]} == {m for m in sent if m[0] in b}

        # The second member leaves (close sends LeaveGroup after committing):
        # the survivor takes over all four partitions and continues from the
        # offsets the leaver committed, so it sees only the new messages.
        second.close()
        poll_until(poll_once, [first], lambda _: partitions_of(first) == {0, 1, 2, 3})
        assert partitions_of(first) == {0, 1, 2, 3}
        sent = produce_to_partitions(server, topic, "takeover", per_partition=3)
        got = poll_until(poll_once, [first], lambda r: len(r[first]) >= len(sent))
        assert sorted((r.partition, r.value) for r in got[first]) == sorted(sent)

        first.commit()
        committed = {p: first.committed(TopicPartition(topic, p)) for p in range(4)}
        assert committed == {p: 5 + 3 for p in range(4)}
    finally:
        first.close()
        second.close()

    # A restarted member resumes from the committed offsets: only new messages.
    sent = produce_to_partitions(server, topic, "restart", per_partition=2)
    restarted = group_consumer(server, topic, group)
    try:
        got = poll_until(poll_once, [restarted],
                         lambda r: len(r[restarted]) >= len(sent))[restarted]
    finally:
        restarted.close()
    assert sorted((r.partition, r.value) for r in got) == sorted(sent)
    assert {r.partition: r.offset for r in got if r.value.endswith(b"-0")} == committed


# -- negotiated versions --------------------------------------------------------------

def test_negotiated_versions_are_flexible(as_version):
    """A whole produce / group-consume / commit / leave cycle on a fresh broker:
    every request of these APIs used a flexible version."""
    with running_server(playing(fast_group_config(), as_version)) as s:
        topic = "kp-flexible"
        expected = messages(topic, CLIENT, 5)
        assert produce(s, topic, expected) == list(range(5))
        check_read_back(read_as_group(s, topic, "kp-flexible-group", 5), expected)

        seen = {key: s.apis.metrics.requests_seen(key) for key in FLEXIBLE_FROM}
    assert all(seen.values()), {k: v for k, v in seen.items() if not v}
    not_flexible = {key: versions for key, versions in seen.items()
                    if min(versions) < FLEXIBLE_FROM[key]}
    assert not not_flexible, f"non-flexible versions used: {not_flexible} (all: {seen})"
