"""A 500,000-record share group run, shaped like franz-go's TestShareGroupETL at its
CI volume, with confluent-kafka's ShareConsumer (librdkafka 2.16): records on a
3-partition and a 1-partition topic, read by one share group whose consumers
follow franz-go's strategies (release every tenth key on its first delivery,
accept explicitly, release everything and leave after three polls, leave after
one or two polls), each accepted record produced downstream.

Every record is accepted exactly once, no record is handed to two consumers in
the same acquisition (a (partition, offset, delivery count) seen once), and at
the end every share-partition's start offset has reached the log end: nothing
is stuck in flight or archived unprocessed.  The consumers that leave close
holding records they never processed; those go back without spending a
delivery (Kafka's DeliveryCountOps.DECREASE), so churn alone archives nothing.

Found while looking into franz-go's 500,000-record runs (issue 32): with this
client no record gets stuck; what franz-go's run adds is its many short-lived
consumers, each closing with up to 10,000 buffered records, which spent a
delivery of each of them here (not in Kafka) until the limit archived some.
Rules kept: loopback only, every wait bounded (the loop ends at its deadline and
the assertions then fail), no assertion on elapsed time.
"""

from __future__ import annotations

import collections
import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from tests.integration.client_support import bootstrap
from tests.integration.test_share_groups_confluent import create_topic, set_group_config
from tests.support import make_config, running_server

pytestmark = [pytest.mark.interop, pytest.mark.slow]

RECORDS = 500_000
DEADLINE_S = 300          # franz-go's own limit for this run
RELEASE_EVERY = 10
# name -> (strategy, non-empty polls before it leaves; -1: stays)
CONSUMERS = {"selective": ("selective", -1), "explicit-1": ("accept", -1),
             "explicit-2": ("accept", -1), "pure-release": ("release", 3),
             "bail-after-1": ("accept", 1), "bail-after-2": ("accept", 2)}


def produce_all(server) -> None:
    producer = Producer({"bootstrap.servers": bootstrap(server), "linger.ms": 5})
    for i in range(RECORDS):
        while True:
            try:
                producer.produce("etl-a" if i % 2 == 0 else "etl-b", b"v", key=b"%d" % i)
                break
            except BufferError:     # the local queue is full: let it drain
                producer.poll(0.05)
    assert producer.flush(60) == 0


def share_consumer(server, name: str) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap(server), "group.id": "etl-g",
                              "share.acknowledgement.mode": "explicit", "client.id": name})
    consumer.subscribe(["etl-a", "etl-b"])
    return consumer


class Run:
    def __init__(self, server) -> None:
        self.accepted: collections.Counter = collections.Counter()
        self.deliveries: collections.Counter = collections.Counter()
        self.downstream = Producer({"bootstrap.servers": bootstrap(server), "linger.ms": 5})
        self.live = {name: [share_consumer(server, name), strategy, polls_left]
                     for name, (strategy, polls_left) in CONSUMERS.items()}

    def step(self) -> None:
        for name, entry in list(self.live.items()):
            consumer, strategy, polls_left = entry
            messages = consumer.poll(0.05)
            for m in messages:
                assert not m.error(), m.error()
                self.handle(consumer, strategy, m)
            if messages:
                consumer.commit_sync(30)
                entry[2] -= 1
                if entry[2] == 0:     # leaves, holding whatever else it fetched
                    consumer.close()
                    del self.live[name]
            self.downstream.poll(0)

    def handle(self, consumer, strategy: str, m) -> None:
        key, count = int(m.key()), m.delivery_count()
        self.deliveries[(m.topic(), m.partition(), m.offset(), count)] += 1
        if strategy == "release" or (
                strategy == "selective" and key % RELEASE_EVERY == 0 and count <= 1):
            consumer.acknowledge(m, AcknowledgeType.RELEASE)
            return
        consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        self.downstream.produce("etl-out", m.value(), key=m.key())
        self.accepted[key] += 1

    def close(self) -> None:
        for consumer, _, _ in self.live.values():
            consumer.close()
        assert self.downstream.flush(60) == 0


def test_500000_records_each_accepted_once_through_consumer_churn():
    with running_server(make_config()) as server:
        create_topic(server, "etl-a", 3)
        create_topic(server, "etl-b", 1)
        create_topic(server, "etl-out", 4)
        set_group_config(server, "etl-g", share_auto_offset_reset="earliest",
                         share_record_lock_duration_ms="15000")
        produce_all(server)
        run = Run(server)
        deadline = time.monotonic() + DEADLINE_S
        try:
            while len(run.accepted) < RECORDS and time.monotonic() < deadline:
                run.step()
        finally:
            run.close()
        share = server.apis.group_coordinator.share
        stuck = {}
        for sp in share.partitions.share_partitions("etl-g"):
            with sp.lock:
                if sp.start_offset != sp.end_offset or sp.in_flight():
                    stuck[(sp.topic, sp.partition)] = (sp.start_offset, sp.end_offset)
    assert len(run.accepted) == RECORDS, f"{RECORDS - len(run.accepted)} records not accepted"
    assert set(run.accepted.values()) == {1}
    assert max(run.deliveries.values()) == 1    # one consumer per acquisition
    assert stuck == {}
