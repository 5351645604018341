"""Faults against aiokafka: the group coordinator moves, and the consumer finds
it again; a produce answered NOT_LEADER_OR_FOLLOWER is retried."""

from __future__ import annotations

import asyncio

import pytest

import kafka_net
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.faults.support import fault_notes, requests_after

aiokafka = pytest.importorskip("aiokafka")
SCENARIO_TIMEOUT_S = 60


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, SCENARIO_TIMEOUT_S))


@pytest.fixture
def broker():
    with kafka_net.Broker(captures=True) as b:
        yield b


def test_coordinator_moved_until_the_client_looks_it_up_again(broker):
    broker.create_topic("work")
    fault = broker.faults.add(api="OffsetCommit", group="movers", coordinator_moved=True)

    async def scenario():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        for i in range(3):
            await producer.send_and_wait("work", f"w{i}".encode(), partition=0)
        await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers, group_id="movers",
            enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        tp = aiokafka.TopicPartition("work", 0)
        consumer.assign([tp])
        await consumer.getmany(tp, timeout_ms=2000)
        await consumer.commit({tp: 3})      # NOT_COORDINATOR, FindCoordinator, again
        committed = await consumer.committed(tp)
        await consumer.stop()
        return committed

    assert _run(scenario()) == 3
    assert fault.hits >= 1
    assert broker.faults.list()[0]["active"] is False        # disarmed by the lookup
    record, note = fault_notes(broker.capture_dir)[0]
    assert note["error_code"] == ErrorCode.NOT_COORDINATOR
    later = [r.api_key for r in requests_after(broker.capture_dir, record.timestamp_ns)]
    assert ApiKey.FIND_COORDINATOR in later
    assert later.index(ApiKey.FIND_COORDINATOR) < len(later) - 1 - \
        later[::-1].index(ApiKey.OFFSET_COMMIT)              # looked up before the retry


def test_not_leader_on_produce_is_retried(broker):
    broker.create_topic("logs", partitions=2)
    fault = broker.faults.add(api="Produce", topic="logs", partitions=[0],
                              error="NOT_LEADER_OR_FOLLOWER", count=2)

    async def scenario():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers,
                                             retry_backoff_ms=50)
        await producer.start()
        meta = await producer.send_and_wait("logs", b"l0", partition=0)
        await producer.stop()
        return meta

    meta = _run(scenario())
    assert (meta.partition, meta.offset) == (0, 0)
    assert fault.hits == 2


def test_wait_until_a_group_is_stable(broker):
    broker.create_topic("members")

    async def scenario():
        consumer = aiokafka.AIOKafkaConsumer(
            "members", bootstrap_servers=broker.bootstrap_servers, group_id="joiners")
        await consumer.start()
        try:
            await consumer.getmany(timeout_ms=200)      # joins the group
            stable = await asyncio.to_thread(broker.faults.wait_group, "joiners",
                                             "Stable", 30)
        finally:
            await consumer.stop()
        return stable

    assert broker.faults.group_state("joiners") == "Dead"
    assert _run(scenario()) is True
    assert broker.faults.wait_group("joiners", "Empty", 30)    # it left
