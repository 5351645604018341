"""Static membership (KIP-345) with confluent-kafka consumers that set
``group.instance.id``.

Two static members split a 4-partition topic.  One is closed and started
again with the same instance id: librdkafka sends no LeaveGroup for a static
member on close, so the group keeps its place; the restarted consumer's
JoinGroup (instance id, no member id) is answered at once with its old
partitions, and the other member sees no revocation and no new assignment.
Before KIP-345 support the restart waited out the session timeout and both
members were revoked and reassigned.  Then the restarted member is closed
for good: its session timeout removes it, and the survivor takes every
partition.  Assertions are on assignment callbacks, never on time.
"""

from __future__ import annotations

import pytest

from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_net.protocol.api_keys import ApiKey
from tests.integration.client_support import bootstrap, fast_group_config, poll_until
from tests.support import server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_S = 20
SESSION_MS = 3000      # short, so that the final session expiry comes soon
TOPIC, GROUP = "static-t", "static-g"

server = server_fixture(lambda: fast_group_config(group_min_session_timeout_ms=1000),
                        scope="module")


class StaticMember:
    """A consumer with group.instance.id that records its rebalance callbacks."""

    def __init__(self, server, instance_id: str) -> None:
        self.events: list[tuple[str, frozenset[int]]] = []
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap(server), "group.id": GROUP,
            "group.instance.id": instance_id, "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": 300, "partition.assignment.strategy": "range",
            "enable.auto.commit": False})
        self.consumer.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke)

    def _on_assign(self, consumer, partitions):
        self.events.append(("assign", frozenset(p.partition for p in partitions)))

    def _on_revoke(self, consumer, partitions):
        self.events.append(("revoke", frozenset(p.partition for p in partitions)))

    def assigned(self) -> frozenset[int]:
        return frozenset(p.partition for p in self.consumer.assignment())


def poll(*members, until) -> None:
    def poll_once(member):
        member.consumer.poll(0.1)
        return []
    poll_until(poll_once, list(members), lambda _: until(), timeout=TIMEOUT_S)


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(server):
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(TIMEOUT_S)
    a, b = StaticMember(server, "instance-a"), StaticMember(server, "instance-b")
    poll(a, b, until=lambda: a.assigned() | b.assigned() == {0, 1, 2, 3}
         and a.assigned() and b.assigned() and not a.assigned() & b.assigned())
    a_before, b_before = a.assigned(), b.assigned()
    [described] = admin.describe_consumer_groups([GROUP]).values()
    members = described.result(TIMEOUT_S).members
    assert sorted((m.group_instance_id, frozenset(p.partition for p in m.assignment.topic_partitions))
                  for m in members) == [("instance-a", a_before), ("instance-b", b_before)]
    a_events = list(a.events)
    group = server.group_coordinator.group(GROUP)
    generation = group.generation_id
    old_b_member = group.static_member_id("instance-b")

    b.consumer.close()
    assert server.apis.metrics.requests_seen(ApiKey.LEAVE_GROUP) == []   # static: no leave
    restarted = StaticMember(server, "instance-b")
    poll(a, restarted, until=lambda: restarted.assigned() == b_before)
    assert restarted.events == [("assign", b_before)]
    # Poll on for a few heartbeat intervals: nothing may reach a (a rebalance would
    # revoke it first).
    rounds = iter(range(20))
    poll(a, restarted, until=lambda: len(a.events) > len(a_events) or next(rounds, None) is None)
    assert a.events == a_events and a.assigned() == a_before
    assert group.generation_id == generation
    new_b_member = group.static_member_id("instance-b")
    assert new_b_member != old_b_member and new_b_member.startswith("instance-b-")

    # Closed for good: the session timeout removes it and a takes everything.
    restarted.consumer.close()
    poll(a, until=lambda: a.assigned() == {0, 1, 2, 3})
    assert a.events[len(a_events):] == [("revoke", a_before), ("assign", frozenset(range(4)))]
    assert group.generation_id > generation
    a.consumer.close()



def test_a_duplicate_instance_id_fences_the_older_consumer(server):
    """Two live consumers with one group.instance.id: the newer replaces the older,
    whose next heartbeat gets FENCED_INSTANCE_ID, which librdkafka makes fatal."""
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    admin.create_topics([NewTopic("static-dup", 2, 1)])["static-dup"].result(TIMEOUT_S)
    errors = []

    def member() -> Consumer:
        consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "static-dup",
                             "group.instance.id": "twin", "session.timeout.ms": SESSION_MS,
                             "heartbeat.interval.ms": 300})
        consumer.subscribe(["static-dup"])
        return consumer

    def poll_once(consumer):
        msg = consumer.poll(0.1)
        if msg is not None and msg.error():
            errors.append((consumer, msg.error()))
        return []

    older = member()
    newer = None
    try:
        poll_until(poll_once, [older], lambda _: bool(older.assignment()), timeout=TIMEOUT_S)
        newer = member()
        poll_until(poll_once, [older, newer], lambda _: bool(errors and newer.assignment()),
                   timeout=TIMEOUT_S)
        [(fenced, error)] = errors
        assert fenced is older and error.code() == KafkaError._FATAL
        assert ("Static consumer fenced by other consumer with same group.instance.id"
                in error.str())
        assert {p.partition for p in newer.assignment()} == {0, 1}
    finally:
        older.close()
        if newer is not None:
            newer.close()
