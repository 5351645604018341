"""aiokafka's AIOKafkaAdminClient against a real kafka-net broker: describe_configs,
alter_configs, delete_records and the consumer's offsets_for_times."""

from __future__ import annotations

import asyncio

import pytest

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.integration.client_support import bootstrap, recent_timestamps, stored_batches
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

SCENARIO_TIMEOUT_S = 30
T = recent_timestamps()


as_version = as_version_fixture()
server = server_fixture(scope="module", as_version=True)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, SCENARIO_TIMEOUT_S))


async def with_admin(server, action):
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap(server))
    await admin.start()
    try:
        return await action(admin)
    finally:
        await admin.close()


def configs_of(response) -> dict[str, tuple[str, int]]:
    """{name: (value, config_source)} from a DescribeConfigsResponse (v1+)."""
    [resource] = response.resources
    error_code, _, _, _, entries = resource[:5]
    assert error_code == 0
    return {e[0]: (e[1], e[3]) for e in entries}


def test_describe_and_alter_configs(server):
    async def scenario(admin):
        await admin.create_topics([NewTopic("aio-configs", 1, 1,
                                            topic_configs={"retention.ms": "86400000"})])
        resource = ConfigResource(ConfigResourceType.TOPIC, "aio-configs")
        [described] = await admin.describe_configs([resource])
        before = configs_of(described)
        await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "aio-configs",
                                                  {"cleanup.policy": "compact"})])
        [described] = await admin.describe_configs([resource])
        return before, configs_of(described)

    before, after = run(with_admin(server, scenario))
    assert before["retention.ms"] == ("86400000", 1)       # DYNAMIC_TOPIC_CONFIG
    assert before["cleanup.policy"] == ("delete", 5)       # DEFAULT_CONFIG
    assert after["cleanup.policy"] == ("compact", 1)
    assert after["retention.ms"] == ("604800000", 5)       # AlterConfigs replaces the set


def test_delete_records_and_offsets_for_times(server):
    async def scenario(admin):
        await admin.create_topics([NewTopic("aio-records", 1, 1)])
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap(server), linger_ms=500)
        await producer.start()
        try:
            sent = [await producer.send("aio-records", b"v%d" % i, timestamp_ms=ts)
                    for i, ts in enumerate(T)]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()
        [batch] = stored_batches(server, "aio-records")
        assert batch.records_count == 10       # one batch: the lookup must look inside it
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap(server))
        await consumer.start()
        tp = TopicPartition("aio-records", 0)
        try:
            found = (await consumer.offsets_for_times({tp: T[5]}))[tp]
            low = await admin.delete_records({tp: RecordsToDelete(before_offset=4)})
            earliest = await consumer.beginning_offsets([tp])
        finally:
            await consumer.stop()
        return found, low[tp], earliest[tp]

    found, low, earliest = run(with_admin(server, scenario))
    assert (found.offset, found.timestamp) == (5, T[5])
    assert (low, earliest) == (4, 4)
