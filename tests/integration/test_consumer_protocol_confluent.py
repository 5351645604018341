"""confluent-kafka (librdkafka) with ``group.protocol=consumer``: KIP-848 groups
against kafka-net.

librdkafka sends ConsumerGroupHeartbeat v1 (member ids made by the client),
commits with its member epoch (OffsetCommit v9) and describes groups with
ConsumerGroupDescribe.  The broker's heartbeat interval is 300 ms here (the
default, 5 s, would only slow the test down: members learn of new
assignments at their next heartbeat).  It runs at the default and as Kafka 4.2;
before 4.0 the protocol is off (tests/server/test_as_version.py).
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.client_support import bootstrap, poll_until
from tests.support import as_version_fixture, make_config, server_fixture

pytestmark = pytest.mark.interop

TOPIC, N = "kip848", 40

# KIP-848 is GA from Kafka 4.0 (group.version 1): the matrix's releases with it.
as_version = as_version_fixture((None, "4.2"))
server = server_fixture(lambda: make_config(group_consumer_heartbeat_interval_ms=300),
                        scope="module", as_version=True)


@pytest.fixture(scope="module", autouse=True)
def topic(server):
    server.apis.create_topic(TOPIC, 4)
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    for i in range(N):
        producer.produce(TOPIC, value=f"v{i}".encode(), partition=i % 4)
    assert producer.flush(10) == 0


class Member:
    """A consumer-protocol member; records the partitions it is given and revoked."""

    def __init__(self, server, group: str, name: str, instance: str | None = None) -> None:
        conf = {"bootstrap.servers": bootstrap(server), "group.id": group,
                "group.protocol": "consumer", "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "client.id": name}
        if instance:
            conf["group.instance.id"] = instance
        self.consumer = Consumer(conf)
        self.revoked: list[int] = []
        self.consumer.subscribe([TOPIC], on_revoke=self._on_revoke)

    def _on_revoke(self, consumer, partitions) -> None:
        self.revoked.extend(p.partition for p in partitions)

    def partitions(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment())

    def poll(self) -> list:
        m = self.consumer.poll(0.05)
        return [] if m is None or m.error() else [(m.partition(), m.value())]


def settle(members, done, timeout=20.0) -> dict:
    return poll_until(lambda m: m.poll(), members, lambda _: done(), timeout)


def test_two_members_split_the_partitions_and_read_every_record(server):
    a, b = Member(server, "g-split", "a"), Member(server, "g-split", "b")
    try:
        got = settle([a, b], lambda: len(a.partitions()) == len(b.partitions()) == 2)
        assert sorted(a.partitions() + b.partitions()) == [0, 1, 2, 3]
        def values(*results) -> set:
            return {v for d in results for m in (a, b) for _, v in d[m]}

        more = poll_until(lambda m: m.poll(), [a, b], lambda r: len(values(got, r)) >= N)
        # Nothing is committed while the partitions move, so a moved partition may
        # be read again by its new owner: every record is read, none invented.
        assert values(got, more) == {f"v{i}".encode() for i in range(N)}
        for m in (a, b):   # each read only its own partitions (after the move)
            assert {p for p, _ in more[m]} <= set(m.partitions())

        a.consumer.commit(asynchronous=False)
        committed = a.consumer.committed([TopicPartition(TOPIC, p) for p in a.partitions()],
                                         timeout=10)
        assert all(tp.offset == N // 4 for tp in committed)

        admin = AdminClient({"bootstrap.servers": bootstrap(server)})
        description = admin.describe_consumer_groups(["g-split"])["g-split"].result(timeout=10)
        assert description.type.name == "CONSUMER"
        assert description.state.name == "STABLE"
        assert sorted(m.client_id for m in description.members) == ["a", "b"]
    finally:
        a.consumer.close()
        b.consumer.close()


def test_a_restarted_static_member_gets_its_partitions_back_and_the_other_keeps_its(server):
    a = Member(server, "g-static", "a", instance="inst-a")
    b = Member(server, "g-static", "b", instance="inst-b")
    try:
        settle([a, b], lambda: len(a.partitions()) == len(b.partitions()) == 2)
        before_a, before_b = a.partitions(), b.partitions()
        b.revoked.clear()

        a.consumer.close()          # a static member leaves with epoch -2: kept for it
        a = Member(server, "g-static", "a2", instance="inst-a")
        settle([a, b], lambda: a.partitions() == before_a)
        assert a.partitions() == before_a
        assert b.partitions() == before_b
        assert b.revoked == []      # no rebalance reached the other member
    finally:
        a.consumer.close()
        b.consumer.close()
