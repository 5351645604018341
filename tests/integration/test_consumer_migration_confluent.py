"""confluent-kafka (librdkafka) rolling upgrades and downgrades between
``group.protocol=classic`` and ``consumer``: KIP-848's online migration.

A group of two classic consumers is replaced one member at a time by
consumer-protocol consumers (the first of them converts the classic group,
the remaining classic member is then served inside the consumer group), and
the reverse (the last consumer-protocol member leaving converts the group
back to classic), while records are produced.  Every consumed record is
committed at once (synchronously): each offset must be committed exactly
once over the whole roll (two owners of one partition would commit it
twice), every record is committed, and at the end each partition has
exactly one owner.
"""

from __future__ import annotations

import itertools

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.client_support import bootstrap, fast_group_config, poll_until
from tests.support import running_server

pytestmark = pytest.mark.interop

PARTITIONS = 4

@pytest.fixture(scope="module")
def broker():
    with running_server(fast_group_config(group_consumer_heartbeat_interval_ms=300)) as s:
        yield s


class Member:
    """One consumer; commits every record it reads, remembers those committed."""

    def __init__(self, broker, group: str, topic: str, name: str, protocol: str,
                 strategy: str) -> None:
        conf = {"bootstrap.servers": bootstrap(broker), "group.id": group,
                "group.protocol": protocol, "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "client.id": name}
        if protocol == "classic":
            # Learn of a rebalance within a short heartbeat (the default is 3 s).
            conf.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 300,
                         "partition.assignment.strategy": strategy})
        self.name = name
        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic])

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def poll(self) -> list[tuple[int, int]]:
        m = self.consumer.poll(0.05)
        if m is None or m.error():
            return []
        try:
            self.consumer.commit(message=m, asynchronous=False)
        except KafkaException:
            # Not committed (a rebalance under way): read it again, here if the
            # partition stays, else its next owner reads it from the committed offset.
            try:
                self.consumer.seek(TopicPartition(m.topic(), m.partition(), m.offset()))
            except KafkaException:
                pass   # no longer assigned here
            return []
        return [(m.partition(), m.offset())]

    def close(self) -> None:
        self.consumer.close()


class Roll:
    """The group under test: its members, a producer, and what was committed."""

    def __init__(self, broker, group: str, strategy: str) -> None:
        self.broker, self.group, self.topic = broker, group, f"{group}-t"
        self.strategy = strategy
        broker.apis.create_topic(self.topic, PARTITIONS)
        self.producer = Producer({"bootstrap.servers": bootstrap(broker)})
        self.produced = 0
        self.committed: list[tuple[int, int]] = []
        self.members: list[Member] = []
        self._names = itertools.count()

    def add(self, protocol: str) -> Member:
        member = Member(self.broker, self.group, self.topic,
                        f"{protocol}-{next(self._names)}", protocol, self.strategy)
        self.members.append(member)
        return member

    def remove(self, member: Member) -> None:
        self.members.remove(member)
        member.close()

    def produce(self, n: int = 8) -> None:
        for _ in range(n):
            self.producer.produce(self.topic, value=b"v%d" % self.produced,
                                  partition=self.produced % PARTITIONS)
            self.produced += 1
        assert self.producer.flush(10) == 0

    def run_until_split(self) -> None:
        """Produce a little, then poll every member until each owns its share of the
        partitions, none twice, and every record produced so far is committed."""
        self.produce()

        def done(received) -> bool:
            owned = [m.partitions() for m in self.members]
            committed = set(self.committed).union(*received.values())
            return (set().union(*owned) == set(range(PARTITIONS))
                    and all(len(o) == PARTITIONS // len(owned) for o in owned)
                    and len(committed) >= self.produced)
        got = poll_until(lambda m: m.poll(), self.members, done, timeout=60)
        for records in got.values():
            self.committed.extend(records)
        assert done({}), (self.state(), len(set(self.committed)), self.produced)

    def state(self) -> dict:
        return {m.name: sorted(m.partitions()) for m in self.members}

    def check_exactly_once(self) -> None:
        per_partition = {p: sorted(o for q, o in self.committed if q == p)
                         for p in range(PARTITIONS)}
        for p, offsets in per_partition.items():
            expected = len(range(p, self.produced, PARTITIONS))
            assert offsets == list(range(expected)), (p, offsets)

    def settle(self):
        """Poll until the broker reports the group Stable (its members acknowledged
        their assignment); the description then."""
        described = []

        def stable(received) -> bool:
            for records in received.values():
                self.committed.extend(records)
                records.clear()
            described.append(self.describe())
            return described[-1].state.name == "STABLE"
        poll_until(lambda m: m.poll(), self.members, stable, timeout=30)
        return described[-1]

    def describe(self):
        admin = AdminClient({"bootstrap.servers": bootstrap(self.broker)})
        return admin.describe_consumer_groups([self.group])[self.group].result(timeout=10)

    def close(self) -> None:
        for m in list(self.members):
            self.remove(m)


# The classic members' assignors: eager (librdkafka's default) and cooperative.
STRATEGIES = pytest.mark.parametrize("strategy", ["range,roundrobin", "cooperative-sticky"])


@STRATEGIES
def test_a_rolling_upgrade_from_classic_to_consumer_consumes_every_record_once(broker, strategy):
    roll = Roll(broker, f"mig-up-{strategy[:4]}", strategy)
    try:
        c1, c2 = roll.add("classic"), roll.add("classic")
        roll.run_until_split()
        assert roll.describe().type.name == "CLASSIC"
        roll.remove(c1)
        roll.add("consumer")                  # converts the group; c2 stays, classic
        roll.run_until_split()
        upgraded = roll.describe()
        assert upgraded.type.name == "CONSUMER" and len(upgraded.members) == 2
        roll.remove(c2)
        roll.add("consumer")
        roll.run_until_split()
        roll.check_exactly_once()
        final = roll.settle()
        assert final.type.name == "CONSUMER" and final.state.name == "STABLE"
        owned = sorted(tp.partition for m in final.members for tp in m.assignment.topic_partitions)
        assert owned == list(range(PARTITIONS))
    finally:
        roll.close()


@STRATEGIES
def test_a_rolling_downgrade_from_consumer_to_classic_consumes_every_record_once(broker,
                                                                               strategy):
    roll = Roll(broker, f"mig-down-{strategy[:4]}", strategy)
    try:
        k1, k2 = roll.add("consumer"), roll.add("consumer")
        roll.run_until_split()
        assert roll.describe().type.name == "CONSUMER"
        roll.remove(k1)
        roll.add("classic")                   # a classic member inside the consumer group
        roll.run_until_split()
        mixed = roll.describe()
        assert mixed.type.name == "CONSUMER" and len(mixed.members) == 2
        roll.remove(k2)                       # the last consumer-protocol member: downgrade
        roll.add("classic")
        roll.run_until_split()
        roll.check_exactly_once()
        final = roll.settle()
        assert final.type.name == "CLASSIC" and final.state.name == "STABLE"
        owned = sorted(tp.partition for m in final.members for tp in m.assignment.topic_partitions)
        assert owned == list(range(PARTITIONS))
    finally:
        roll.close()
