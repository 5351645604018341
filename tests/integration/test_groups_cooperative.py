"""Cooperative (incremental) rebalancing, KIP-429, with the classic group protocol.

The broker's side of cooperative-sticky is the classic JoinGroup/SyncGroup
rebalance run twice: the members' assignor revokes only the partitions that
move in the first round, and hands them out in the second.  What a broker
can break is the second round (a member rejoining right after SyncGroup, its
owned partitions in the subscription metadata), so the tests watch each
member's callbacks: a member that keeps a partition must never see it
revoked.

Client: confluent-kafka (``partition.assignment.strategy=cooperative-sticky``).
aiokafka has no cooperative assignor.  kafka-python 3.0.12's
``CooperativeStickyAssignor`` is not used: with three members its leader
sometimes rejoins right after every SyncGroup, while the group is Stable and
nothing moved (the broker sees a JoinGroup it did not ask for), for as many
generations as the test allows; that is the client's loop, not the broker's.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from tests.integration.client_support import bootstrap, fast_group_config, poll_until
from tests.support import server_fixture

pytestmark = pytest.mark.interop

TOPIC, PARTITIONS, N = "coop", 6, 60

server = server_fixture(fast_group_config, scope="module")


@pytest.fixture(scope="module", autouse=True)
def topic(server):
    server.apis.create_topic(TOPIC, PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    for i in range(N):
        producer.produce(TOPIC, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(10) == 0


class Member:
    """A confluent-kafka (librdkafka) member."""

    def __init__(self, server, name: str) -> None:
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap(server), "group.id": "coop-librdkafka",
            "partition.assignment.strategy": "cooperative-sticky",
            "auto.offset.reset": "earliest", "client.id": name, "enable.auto.commit": False,
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 200})
        self.owned: set[int] = set()
        self.revoked: list[int] = []
        self.consumer.subscribe([TOPIC], on_assign=self._assign, on_revoke=self._revoke)

    def _assign(self, consumer, partitions) -> None:
        # Incremental: the callback lists only what is added.
        self.owned |= {p.partition for p in partitions}

    def _revoke(self, consumer, partitions) -> None:
        gone = {p.partition for p in partitions}
        self.revoked.extend(sorted(gone))
        self.owned -= gone

    def poll(self) -> list:
        msg = self.consumer.poll(0.05)
        if msg is None:
            return []
        if msg.error():
            assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
            return []
        return [(msg.partition(), msg.value())]


def balanced(members) -> bool:
    sizes = [len(m.owned) for m in members]
    owned = [p for m in members for p in m.owned]
    return sorted(owned) == list(range(PARTITIONS)) and max(sizes) - min(sizes) <= 1


def test_a_joining_member_takes_partitions_without_revoking_the_rest(server):
    a, b = Member(server, "a"), Member(server, "b")
    c = None
    try:
        first = poll_until(lambda m: m.poll(), [a, b], lambda _: balanced([a, b]))
        assert balanced([a, b])
        kept_a, kept_b = set(a.owned), set(b.owned)
        a.revoked.clear()
        b.revoked.clear()

        c = Member(server, "c")
        more = poll_until(lambda m: m.poll(), [a, b, c], lambda _: balanced([a, b, c]))
        assert balanced([a, b, c])
        # Only partitions that moved to c were revoked, each from its old owner.
        assert set(a.revoked) == kept_a - a.owned
        assert set(b.revoked) == kept_b - b.owned
        assert set(a.revoked) | set(b.revoked) == c.owned
        assert len(a.revoked) + len(b.revoked) == 2

        def seen(*results) -> set:
            return {v for d in results for got in d.values() for _, v in got}

        rest = poll_until(lambda m: m.poll(), [a, b, c],
                          lambda r: len(seen(first, more, r)) >= N)
        values = seen(first, more, rest)
        # Nothing was committed, so a moved partition may be read again by its new
        # owner; every record was read, none invented.
        assert values == {f"v{i}".encode() for i in range(N)}
    finally:
        for m in (a, b, c):
            if m is not None:
                m.consumer.close()
