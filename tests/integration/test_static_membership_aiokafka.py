"""Static membership (KIP-345) with aiokafka consumers that set
``group_instance_id``: aiokafka sends no LeaveGroup when a static member
stops, and the restarted member gets its partitions back while the other
member's rebalance listener hears nothing and the generation stays."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from kafka_net.protocol.api_keys import ApiKey
from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import server_fixture

pytestmark = pytest.mark.interop

SCENARIO_TIMEOUT_S = 60
TOPIC, GROUP = "aio-static-t", "aio-static-g"

server = server_fixture(fast_group_config, scope="module")


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[int]]] = []

    async def on_partitions_revoked(self, revoked):
        self.events.append(("revoke", frozenset(tp.partition for tp in revoked)))

    async def on_partitions_assigned(self, assigned):
        self.events.append(("assign", frozenset(tp.partition for tp in assigned)))


async def static_member(server, instance_id: str, stack: contextlib.AsyncExitStack
                        ) -> tuple[AIOKafkaConsumer, Recorder]:
    """A started static consumer, stopped when ``stack`` closes (stop is idempotent)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap(server), group_id=GROUP,
                                group_instance_id=instance_id, session_timeout_ms=30000,
                                enable_auto_commit=False)
    recorder = Recorder()
    consumer.subscribe([TOPIC], listener=recorder)
    await consumer.start()
    stack.push_async_callback(consumer.stop)
    return consumer, recorder


def partitions(consumer) -> frozenset[int]:
    return frozenset(tp.partition for tp in consumer.assignment())


async def poll_until(consumers, done, rounds: int = 200) -> None:
    for _ in range(rounds):
        if done():
            return
        for c in consumers:
            await c.getmany(timeout_ms=50)


def test_a_restarted_static_member_keeps_its_partitions_and_the_other_is_untouched(server):
    async def scenario(stack):
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap(server))
        await admin.start()
        await admin.create_topics([NewTopic(TOPIC, 4, 1)])
        await admin.close()
        a, a_events = await static_member(server, "aio-a", stack)
        b, _ = await static_member(server, "aio-b", stack)
        # ... and a's listener has heard of its two: aiokafka updates assignment()
        # before it calls on_partitions_assigned.
        await poll_until([a, b], lambda: len(partitions(a)) == len(partitions(b)) == 2
                         and a_events.events[-1:] == [("assign", partitions(a))])
        a_before, b_before, seen = partitions(a), partitions(b), list(a_events.events)
        group = server.group_coordinator.group(GROUP)
        generation = group.generation_id

        await b.stop()
        assert server.apis.metrics.requests_seen(ApiKey.LEAVE_GROUP) == []
        b, b_events = await static_member(server, "aio-b", stack)
        await poll_until([a, b], lambda: partitions(b) == b_before)
        # (aiokafka calls on_partitions_revoked with nothing before every join.)
        assert b_events.events == [("revoke", frozenset()), ("assign", b_before)]
        await poll_until([a, b], lambda: False, rounds=10)   # a while longer: nothing for a
        assert a_events.events == seen and partitions(a) == a_before
        assert group.generation_id == generation

    async def main():
        async with contextlib.AsyncExitStack() as stack:
            await scenario(stack)

    asyncio.run(asyncio.wait_for(main(), SCENARIO_TIMEOUT_S))
