"""__consumer_offsets and __transaction_state seen by real clients.

* Burrow-style lag checking: after a kafka-python consumer group commits, a
  plain consumer reads every partition of __consumer_offsets from the start
  and, decoding the records with Kafka's key and value schemas
  (kafka_net/protocol/coordinator_records.py), finds the group's committed
  offsets and its member, in the partition Kafka's partitionFor names;
* Metadata (kafka-python's describe_topics) flags both topics internal, with
  50 partitions each, once a group and a transactional producer (confluent-kafka)
  have looked up their coordinators;
* confluent-kafka's AdminClient cannot create or delete them, and its Producer
  cannot write to them: Kafka's errors.

Rules kept: loopback only, every wait bounded, no assertion on elapsed time.
"""

from __future__ import annotations

import time

import pytest

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from kafka_net.protocol.coordinator_records import (
    GroupMetadataRecord, OffsetCommitRecord, decode_group_record, partition_for)
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME as OFFSETS, TRANSACTION_STATE_TOPIC_NAME as TXN_STATE)
from tests.integration.client_support import bootstrap, fast_group_config, kafka_python_member
from tests.support import server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_MS = 20000
TOPIC, GROUP = "burrow-t", "burrow-group"

server = server_fixture(fast_group_config, scope="module")


@pytest.fixture(scope="module")
def committed_group(server):
    """GROUP consumed TOPIC (2 partitions, 3 + 2 records) and committed its position."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(server), request_timeout_ms=TIMEOUT_MS)
    admin.create_topics({TOPIC: {"num_partitions": 2, "replication_factor": 1}})
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap(server))
    for partition, count in ((0, 3), (1, 2)):
        for i in range(count):
            producer.send(TOPIC, f"v{i}".encode(), partition=partition)
    producer.flush(timeout=TIMEOUT_MS / 1000)
    producer.close()
    consumer = kafka_python_member(TOPIC, bootstrap_servers=bootstrap(server), group_id=GROUP,
                                   enable_auto_commit=False, auto_offset_reset="earliest",
                                   client_id="burrow-client", request_timeout_ms=TIMEOUT_MS)
    seen = 0
    for _ in range(100):   # bounded: 100 short polls
        seen += sum(len(v) for v in consumer.poll(timeout_ms=200).values())
        if seen >= 5:
            break
    assert seen == 5
    consumer.commit()
    yield consumer
    consumer.close()


def read_offsets_topic(server) -> list:
    """Every record of __consumer_offsets, decoded, as Burrow reads it: a consumer
    with no group, assigned all partitions from the beginning."""
    reader = KafkaConsumer(bootstrap_servers=bootstrap(server), enable_auto_commit=False,
                           request_timeout_ms=TIMEOUT_MS)
    partitions = [TopicPartition(OFFSETS, p) for p in range(50)]
    reader.assign(partitions)
    reader.seek_to_beginning()
    ends = reader.end_offsets(partitions)
    decoded = []
    deadline = time.monotonic() + 20
    while any(reader.position(tp) < ends[tp] for tp in partitions) \
            and time.monotonic() < deadline:
        for tp, messages in reader.poll(timeout_ms=200).items():
            decoded.extend((tp.partition, decode_group_record(m.key, m.value))
                           for m in messages)
    reader.close()
    return decoded


def test_a_lag_checker_reading_consumer_offsets_finds_the_group(server, committed_group):
    records = read_offsets_topic(server)
    mine = [(p, r) for p, r in records if r.group == GROUP]
    assert {p for p, _ in mine} == {partition_for(GROUP, 50)}
    offsets = {(r.topic, r.partition): r.value["offset"] for _, r in mine
               if isinstance(r, OffsetCommitRecord)}
    assert offsets == {(TOPIC, 0): 3, (TOPIC, 1): 2}
    # One record per generation (the client may rebalance once): the last one counts.
    group = [r for _, r in mine if isinstance(r, GroupMetadataRecord)][-1]
    assert group.value["protocol_type"] == "consumer"
    [member] = group.value["members"]
    assert member["client_id"] == "burrow-client"
    assert member["member_id"] == group.value["leader"]


def test_metadata_flags_both_topics_internal(server, committed_group):
    producer = Producer({"bootstrap.servers": bootstrap(server), "transactional.id": "it-tx"})
    producer.init_transactions(TIMEOUT_MS / 1000)   # FindCoordinator(transaction)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(server), request_timeout_ms=TIMEOUT_MS)
    described = {t["name"]: t for t in admin.describe_topics([OFFSETS, TXN_STATE, TOPIC])}
    admin.close()
    for name in (OFFSETS, TXN_STATE):
        assert described[name]["error_code"] == 0
        assert described[name]["is_internal"] is True
        assert len(described[name]["partitions"]) == 50
    assert described[TOPIC]["is_internal"] is False


def test_clients_cannot_create_delete_or_produce_to_them(server, committed_group):
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    futures = admin.create_topics([NewTopic(OFFSETS, 1, 1)], operation_timeout=10)
    with pytest.raises(KafkaException) as created:
        futures[OFFSETS].result(timeout=TIMEOUT_MS / 1000)
    assert created.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    futures = admin.delete_topics([OFFSETS], operation_timeout=10)
    with pytest.raises(KafkaException) as deleted:
        futures[OFFSETS].result(timeout=TIMEOUT_MS / 1000)
    assert deleted.value.args[0].code() == KafkaError.INVALID_REQUEST
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    reports = []
    producer.produce(OFFSETS, b"evil", key=b"k", partition=0,
                     on_delivery=lambda err, msg: reports.append(err))
    producer.flush(TIMEOUT_MS / 1000)
    assert [e.code() for e in reports] == [KafkaError.TOPIC_EXCEPTION]
    # ... and what they could read is still only the coordinator's records.
    assert all(r.group for _, r in read_offsets_topic(server))
