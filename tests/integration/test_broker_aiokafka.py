"""aiokafka against a real kafka-net broker: produce, fetch and consumer groups.

Issue 3's "Done when", for aiokafka 0.14 (reference section 5): its default
producer (acks=1, not idempotent) produces keyed messages with headers,
compressed with gzip, lz4, zstd and snappy (aiokafka compresses through
cramjam), and every one is read back in order, offsets dense from 0, by an
assigned consumer that seeks to the beginning and by a consumer group
(``auto_offset_reset='earliest'``); acks 0, 1 and all each land; two
consumers in one group split a 4-partition topic, the survivor takes over
when the other stops, and a restarted member resumes from the committed
offsets.  aiokafka speaks only non-flexible versions (ApiVersions v0,
Metadata <= 5, JoinGroup <= 5, ...), so this is the classic encoding path.

Each scenario runs in ``asyncio.run`` under ``asyncio.wait_for``, so a hang
fails the test instead of blocking the run.
"""

from __future__ import annotations

import asyncio

import pytest

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration.client_support import (
    CODECS, bootstrap, fast_group_config, is_split, messages, partitions_of, stored_batches)
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

SCENARIO_TIMEOUT_S = 30
N = 30
CLIENT = b"aiokafka"  # the "client" header of every message


as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, SCENARIO_TIMEOUT_S))


async def produce(server, topic: str, items, **config) -> list:
    """Send all items (batched by the client), wait for every ack; the record
    metadata (None for acks=0, which gets no response)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap(server), **config)
    await producer.start()
    try:
        futures = [await producer.send(topic, key=k, value=v, headers=h) for k, v, h in items]
        return [await f for f in futures]
    finally:
        await producer.stop()


async def read_all(consumer, n: int) -> list:
    got = []
    while len(got) < n:   # bounded by the scenario's wait_for
        for records in (await consumer.getmany(timeout_ms=500)).values():
            got.extend(records)
    assert len(got) == n, f"read {len(got)} of {n} records"
    return got


async def read_assigned(server, topic: str, n: int) -> list:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap(server))
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        return await read_all(consumer, n)
    finally:
        await consumer.stop()


async def read_as_group(server, topic: str, group: str, n: int) -> list:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap(server), group_id=group,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        return await read_all(consumer, n)
    finally:
        await consumer.stop()


def check_read_back(records, expected) -> None:
    assert [r.offset for r in records] == list(range(len(expected)))
    assert [(r.key, r.value, [tuple(h) for h in r.headers]) for r in records] == expected


@pytest.mark.parametrize("codec", list(CODECS))
def test_compressed_messages_with_keys_and_headers_read_back(server, codec):
    topic = f"aio-{codec}"
    expected = messages(topic, CLIENT, N)

    async def scenario():
        acks = await produce(server, topic, expected, compression_type=codec)
        assert [m.offset for m in acks] == list(range(N))
        assert {b.compression for b in stored_batches(server, topic)} == {CODECS[codec]}
        check_read_back(await read_assigned(server, topic, N), expected)
        check_read_back(await read_as_group(server, topic, f"{topic}-group", N), expected)

    run(scenario())


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_each_acks_setting_lands(server, acks):
    topic = f"aio-acks-{acks}"
    expected = messages(topic, CLIENT, N)

    async def scenario():
        metadata = await produce(server, topic, expected, acks=acks)
        if acks == 0:   # no response: aiokafka resolves each send with None
            assert metadata == [None] * N
        else:
            assert [m.offset for m in metadata] == list(range(N))
        check_read_back(await read_assigned(server, topic, N), expected)

    run(scenario())


# -- consumer groups ------------------------------------------------------------------

def group_consumer(server, topic: str, group: str) -> AIOKafkaConsumer:
    # heartbeat_interval_ms: members learn of a rebalance from their heartbeat
    # (every 3 s by default); 100 ms keeps the test short.
    return AIOKafkaConsumer(topic, bootstrap_servers=bootstrap(server), group_id=group,
                            auto_offset_reset="earliest", heartbeat_interval_ms=100)


async def produce_to_partitions(server, topic: str, tag: str, per_partition: int,
                                partitions: int = 4) -> set[tuple[int, bytes]]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap(server))
    await producer.start()
    try:
        sent = {(p, f"{tag}-{p}-{i}".encode())
                for p in range(partitions) for i in range(per_partition)}
        futures = [await producer.send(topic, value=v, partition=p) for p, v in sorted(sent)]
        for f in futures:
            await f
        return sent
    finally:
        await producer.stop()


async def until(predicate) -> None:
    while not predicate():   # bounded by the scenario's wait_for
        await asyncio.sleep(0.02)


async def receive(consumers, count: int) -> dict:
    """Fetch from every consumer until ``count`` records arrived in all."""
    received = {c: [] for c in consumers}
    while sum(len(r) for r in received.values()) < count:   # bounded by wait_for
        for c in consumers:
            for records in (await c.getmany(timeout_ms=100)).values():
                received[c].extend(records)
    return received


def test_group_splits_partitions_fails_over_and_resumes_from_commits(server):
    topic, group = "aio-group-split", "aio-split-group"

    async def scenario():
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap(server))
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])
        finally:
            await admin.close()

        first = group_consumer(server, topic, group)
        second = group_consumer(server, topic, group)
        await first.start()
        await second.start()
        try:
            await until(lambda: is_split(first, second))
            a, b = partitions_of(first), partitions_of(second)

            sent = await produce_to_partitions(server, topic, "split", per_partition=5)
            got = await receive([first, second], len(sent))
            assert {(r.partition, r.value) for r in got[first]} == {m for m in sent if m[0] in a}
            assert {(r.partition, r.value) for r in got[second]} == {m for m in sent if m[0] in b}

            # stop() commits the consumed offsets and leaves the group.
            await second.stop()
            await until(lambda: partitions_of(first) == {0, 1, 2, 3})
            sent = await produce_to_partitions(server, topic, "takeover", per_partition=3)
            got = await receive([first], len(sent))
            assert sorted((r.partition, r.value) for r in got[first]) == sorted(sent)

            await first.commit()
            committed = {p: await first.committed(TopicPartition(topic, p)) for p in range(4)}
            assert committed == {p: 5 + 3 for p in range(4)}
        finally:
            await first.stop()
            await second.stop()

        sent = await produce_to_partitions(server, topic, "restart", per_partition=2)
        restarted = group_consumer(server, topic, group)
        await restarted.start()
        try:
            got = (await receive([restarted], len(sent)))[restarted]
        finally:
            await restarted.stop()
        assert sorted((r.partition, r.value) for r in got) == sorted(sent)
        assert {r.partition: r.offset for r in got if r.value.endswith(b"-0")} == committed

    run(scenario())
