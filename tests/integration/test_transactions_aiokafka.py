"""aiokafka transactions against a real kafka-net broker.

The same checks as test_transactions_confluent.py with aiokafka's
AIOKafkaProducer(transactional_id=...) and a read_committed AIOKafkaConsumer.
Before transactions were served, the producer's ``start()`` never returned
(FindCoordinator for a transaction answered COORDINATOR_NOT_AVAILABLE).

Each scenario runs in ``asyncio.run`` under ``asyncio.wait_for``, so a hang
fails instead of stalling the suite.
"""

from __future__ import annotations

import asyncio

import pytest

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import ProducerFenced

from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

SCENARIO_TIMEOUT_S = 60

as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, SCENARIO_TIMEOUT_S))


async def transactional(server, txn_id: str) -> AIOKafkaProducer:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap(server), transactional_id=txn_id)
    await producer.start()
    return producer


async def read(server, topic: str, n: int, isolation: str = "read_committed") -> list[tuple]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap(server), isolation_level=isolation,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = []
        while len(got) < n:   # bounded by wait_for
            batch = await consumer.getmany(timeout_ms=100)
            got.extend((r.offset, r.value) for records in batch.values() for r in records)
        return got
    finally:
        await consumer.stop()


def test_committed_messages_are_read_and_aborted_ones_never(server):
    topic = "aio-txn"

    async def scenario():
        producer = await transactional(server, "aio-txn-id")
        try:
            async with producer.transaction():
                for value in (b"c0", b"c1", b"c2"):
                    await producer.send(topic, value)
            await producer.begin_transaction()
            for value in (b"a0", b"a1"):
                await producer.send_and_wait(topic, value)
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send(topic, b"c3")
        finally:
            await producer.stop()
        return await read(server, topic, 4), await read(server, topic, 6, "read_uncommitted")

    committed, everything = run(scenario())
    assert committed == [(0, b"c0"), (1, b"c1"), (2, b"c2"), (7, b"c3")]
    assert everything == [
        (0, b"c0"), (1, b"c1"), (2, b"c2"), (4, b"a0"), (5, b"a1"), (7, b"c3")]


def test_consume_transform_produce_commits_offsets_only_with_the_transaction(server):
    source, sink, group = "aio-ctp-in", "aio-ctp-out", "aio-ctp"
    partition = TopicPartition(source, 0)

    async def scenario():
        plain = AIOKafkaProducer(bootstrap_servers=bootstrap(server))
        await plain.start()
        for i in range(4):
            await plain.send_and_wait(source, b"m%d" % i)
        await plain.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap(server), group_id=group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    isolation_level="read_committed")
        await consumer.start()
        producer = await transactional(server, "aio-ctp-id")
        committed = []
        try:
            consumer.assign([partition])
            inputs = []
            while len(inputs) < 4:
                batch = await consumer.getmany(timeout_ms=100)
                inputs.extend(r for records in batch.values() for r in records)
            for commit in (False, True):
                await producer.begin_transaction()
                for r in inputs:
                    await producer.send_and_wait(sink, r.value.upper())
                await producer.send_offsets_to_transaction(
                    {partition: await consumer.position(partition)}, group)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
                committed.append(await consumer.committed(partition))
        finally:
            await producer.stop()
            await consumer.stop()
        return committed, await read(server, sink, 4)

    committed, output = run(scenario())
    assert committed == [None, 4]
    assert output == [(5, b"M0"), (6, b"M1"), (7, b"M2"), (8, b"M3")]


def test_a_second_producer_fences_the_first(server):
    topic = "aio-fence"

    async def scenario():
        first = await transactional(server, "aio-fence-id")
        await first.begin_transaction()
        await first.send_and_wait(topic, b"zombie")
        second = await transactional(server, "aio-fence-id")   # aborts first's transaction
        try:
            async with second.transaction():
                await second.send(topic, b"winner")
            with pytest.raises(ProducerFenced):
                await first.commit_transaction()
        finally:
            await first.stop()
            await second.stop()
        return await read(server, topic, 1)

    assert run(scenario()) == [(2, b"winner")]
