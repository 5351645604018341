"""Static membership (KIP-345) with kafka-python consumers that set
``group_instance_id``: like the Java client, kafka-python sends no LeaveGroup
when a static member closes, so the restarted member (same instance id, new
process state) rejoins, is answered with its old assignment at once, and the
other member's listener hears nothing: no rebalance, same generation."""

from __future__ import annotations

import pytest
from kafka import ConsumerRebalanceListener, KafkaConsumer

from tests.integration.client_support import bootstrap, fast_group_config, poll_in_threads
from tests.support import server_fixture

pytestmark = pytest.mark.interop

TOPIC, GROUP, PARTITIONS = "kp-static-t", "kp-static-g", 4

server = server_fixture(fast_group_config, scope="module")


class Member(ConsumerRebalanceListener):
    def __init__(self, server, instance: str) -> None:
        self.events: list[tuple[str, frozenset[int]]] = []
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap(server), group_id=GROUP, group_instance_id=instance,
            client_id=instance, auto_offset_reset="earliest", session_timeout_ms=30000,
            heartbeat_interval_ms=200)
        self.consumer.subscribe([TOPIC], listener=self)
        # The topic's partitions in the member's metadata before its first join,
        # or kafka-python may keep an empty assignment for good (see
        # client_support.kafka_python_member).
        assert self.consumer.partitions_for_topic(TOPIC), TOPIC

    def on_partitions_revoked(self, revoked) -> None:
        self.events.append(("revoke", frozenset(tp.partition for tp in revoked)))

    def on_partitions_assigned(self, assigned) -> None:
        self.events.append(("assign", frozenset(tp.partition for tp in assigned)))

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def poll(self) -> list:
        self.consumer.poll(timeout_ms=50)
        return []


def generation(server) -> int:
    return server.group_coordinator.group(GROUP).generation_id


def split(a, b) -> bool:
    return (len(a.partitions()) == len(b.partitions()) == PARTITIONS // 2
            and not a.partitions() & b.partitions())


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(server):
    server.apis.create_topic(TOPIC, PARTITIONS)
    a, b = Member(server, "kp-a"), Member(server, "kp-b")
    try:
        poll_in_threads(lambda m: m.poll(), [a, b], lambda _: split(a, b))
        assert split(a, b)
        before_a, before_b, gen = a.partitions(), b.partitions(), generation(server)
        b.events.clear()

        a.consumer.close()           # a static member: no LeaveGroup
        assert len(server.group_coordinator.group(GROUP).members) == 2
        a = Member(server, "kp-a")
        poll_in_threads(lambda m: m.poll(), [a, b], lambda _: a.partitions() == before_a)

        assert a.partitions() == before_a
        assert b.partitions() == before_b
        assert b.events == []        # the other member heard of no rebalance
        assert generation(server) == gen
    finally:
        a.consumer.close()
        b.consumer.close()
