"""Groups, offsets and transactions survive a real restart on the durable log.

A KafkaServer with ``log.store=disk`` under a tmp ``log.dirs``: confluent-kafka
consumers commit (one of them a static member, ``group.instance.id``), a
transactional producer commits a transaction with offsets
(``send_offsets_to_transaction``), another leaves one open.  The server is
shut down and a new one started over the same folders (new port).  The
metadata log brings __consumer_offsets and __transaction_state back, the
coordinators load them at startup, and clients find: the committed offsets,
the static member's group Stable with its member (which rejoins and resumes
where it committed), the committed transaction's offsets, and the open
transaction aborted by the broker at its timeout.

Rules kept: loopback only, every wait bounded, no assertion on elapsed time.
"""

from __future__ import annotations

import contextlib

import pytest

from confluent_kafka import (
    OFFSET_BEGINNING, Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_net.server.kafka_server import KafkaServer
from kafka_net.server.transaction import TransactionState
from tests.integration.client_support import bootstrap, fast_group_config, read_all
from tests.support import wait_until

pytestmark = pytest.mark.interop

TIMEOUT_S = 20
TOPIC = "rs-t"


@contextlib.contextmanager
def server_on(log_dir: str):
    server = KafkaServer(fast_group_config(
        log_store="disk", log_dirs=(log_dir,),
        transaction_abort_timed_out_transaction_cleanup_interval_ms=100))
    server.startup()
    try:
        yield server
    finally:
        server.shutdown()


def poll_once(consumer) -> list:
    msg = consumer.poll(0.1)
    if msg is None:
        return []
    assert not msg.error(), msg.error()
    return [msg]


def static_consumer(server) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "rs-static",
                         "group.instance.id": "instance-1", "session.timeout.ms": 30000,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    return consumer


def committed(admin: AdminClient, group: str) -> dict:
    [future] = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)]).values()
    return {(tp.topic, tp.partition): tp.offset
            for tp in future.result(TIMEOUT_S).topic_partitions}


def first_run(server) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result(TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    for i in range(6):
        producer.produce(TOPIC, f"v{i}".encode(), partition=i % 2)
    assert producer.flush(TIMEOUT_S) == 0
    # A static member reads everything and commits.
    consumer = static_consumer(server)
    read_all(poll_once, consumer, 6)
    consumer.commit(asynchronous=False)
    consumer.close()   # a static member does not leave the group on close
    # A committed transaction carrying offsets, and an open one.
    offsets_of = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "rs-txn-group"})
    done = Producer({"bootstrap.servers": bootstrap(server), "transactional.id": "rs-done"})
    done.init_transactions(TIMEOUT_S)
    done.begin_transaction()
    done.produce(TOPIC, b"committed", partition=0)
    done.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 7)],
                                     offsets_of.consumer_group_metadata(), TIMEOUT_S)
    done.commit_transaction(TIMEOUT_S)
    offsets_of.close()
    open_one = Producer({"bootstrap.servers": bootstrap(server), "transactional.id": "rs-open",
                         "transaction.timeout.ms": 2000})
    open_one.init_transactions(TIMEOUT_S)
    open_one.begin_transaction()
    open_one.produce(TOPIC, b"never committed", partition=1)
    assert open_one.flush(TIMEOUT_S) == 0
    assert server.core.transaction_coordinator.describe("rs-open").state == \
        TransactionState.ONGOING


def test_groups_offsets_and_transactions_survive_a_restart(tmp_path):
    with server_on(str(tmp_path)) as server:
        first_run(server)
    with server_on(str(tmp_path)) as server:
        admin = AdminClient({"bootstrap.servers": bootstrap(server)})
        assert committed(admin, "rs-static") == {(TOPIC, 0): 3, (TOPIC, 1): 3}
        assert committed(admin, "rs-txn-group") == {(TOPIC, 0): 7}
        [future] = admin.describe_consumer_groups(["rs-static"]).values()
        group = future.result(TIMEOUT_S)
        assert group.state.name == "STABLE"
        assert [m.group_instance_id for m in group.members] == ["instance-1"]
        # The open transaction came back Ongoing and is aborted at its timeout.
        coordinator = server.core.transaction_coordinator
        assert wait_until(lambda: coordinator.describe("rs-open").state
                          == TransactionState.COMPLETE_ABORT, TIMEOUT_S)
        reader = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "rs-reader",
                           "isolation.level": "read_committed"})
        reader.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in (0, 1)])
        values = sorted(m.value() for m in read_all(poll_once, reader, 7))
        reader.close()
        assert b"committed" in values and b"never committed" not in values
        # The static member comes back and carries on from its committed offsets.
        producer = Producer({"bootstrap.servers": bootstrap(server)})
        producer.produce(TOPIC, b"after the restart", partition=1)
        assert producer.flush(TIMEOUT_S) == 0
        consumer = static_consumer(server)
        got = read_all(poll_once, consumer, 2)   # the committed txn's record, and this one
        consumer.close()
        assert sorted(m.value() for m in got) == [b"after the restart", b"committed"]
