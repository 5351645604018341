"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka 2.16).

Two share consumers in one share group read a topic as a queue: every record
is delivered to one of them per acquisition; a released record comes back, a
rejected one never does, a record whose acquisition lock lapsed is delivered
again (to the other consumer, from the same partition), the delivery count
limit archives a record released too often; and a broker restarted on its durable ``log.dirs`` keeps
the share state in ``__share_group_state``: accepted records are not delivered
again, the ones in flight at the stop are.

The group's ``share.auto.offset.reset`` is set to ``earliest`` with
IncrementalAlterConfigs on its GROUP resource (type 32) before the consumers
start, as ``kafka-configs --entity-type groups`` would.

Rules kept: loopback only, every wait bounded, no assertion on elapsed time.
"""

from __future__ import annotations

import contextlib

import pytest

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.server.kafka_server import KafkaServer
from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import RawClient, running_server, wait_until

pytestmark = pytest.mark.interop

TIMEOUT_S = 20
SET = 0


def set_group_config(server, group: str, **values: str) -> None:
    with RawClient(server.bound_port()) as client:
        body = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
            "resources": [{"resource_type": 32, "resource_name": group, "configs": [
                {"name": k.replace("_", "."), "config_operation": SET, "value": v}
                for k, v in values.items()]}],
            "validate_only": False})
    assert [r["error_code"] for r in body["responses"]] == [0], body


def produce(server, topic: str, n: int, start: int = 0, partitions: int = 1) -> None:
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    for i in range(start, start + n):
        producer.produce(topic, f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(TIMEOUT_S) == 0


def create_topic(server, topic: str, partitions: int) -> None:
    with RawClient(server.bound_port()) as client:
        body = client.call(ApiKey.CREATE_TOPICS, 5, {
            "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout_ms": 5000, "validate_only": False})
    assert body["topics"][0]["error_code"] == 0, body


def share_consumer(server, group: str, topic: str) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap(server), "group.id": group,
                              "share.acknowledgement.mode": "explicit",
                              "client.id": f"{group}-consumer"})
    consumer.subscribe([topic])
    return consumer


def poll(consumer, timeout: float = 0.2) -> list:
    out = []
    for message in consumer.poll(timeout):
        assert not message.error(), message.error()
        out.append(message)
    return out


def poll_until(consumers, done, handle, timeout: float = TIMEOUT_S) -> None:
    """Poll each consumer in turn, ``handle(consumer, messages)`` acknowledging,
    until ``done()``: bounded, never asserted on."""
    def step() -> bool:
        for consumer in consumers:
            handle(consumer, poll(consumer))
        return done()
    wait_until(step, timeout, interval=0)


@contextlib.contextmanager
def consumers(*made):
    try:
        yield made
    finally:
        for consumer in made:
            consumer.close()


@pytest.fixture
def server():
    with running_server(fast_group_config(group_share_record_lock_duration_ms=2000,
                                          group_share_min_record_lock_duration_ms=1000,
                                          group_share_delivery_count_limit=3)) as running:
        yield running


def test_two_share_consumers_split_a_topic_each_record_once(server):
    topic, group = "sq-split", "sq-split-g"
    create_topic(server, topic, 2)
    set_group_config(server, group, share_auto_offset_reset="earliest")
    produce(server, topic, 60, partitions=2)
    seen: dict = {}
    with consumers(share_consumer(server, group, topic),
                   share_consumer(server, group, topic)) as (a, b):
        def accept(consumer, messages):
            for m in messages:
                seen.setdefault((m.partition(), m.offset()), []).append(consumer)
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            if messages:
                consumer.commit_sync(TIMEOUT_S)
        poll_until((a, b), lambda: len(seen) == 60, accept)
        error, _, described = server.apis.group_coordinator.share.describe(group)
    assert sorted(seen) == [(p, o) for p in (0, 1) for o in range(30)]
    # Accepted at first delivery: none was ever delivered twice.
    assert all(len(who) == 1 for who in seen.values()), seen
    # Both are members; which of them reads which record is the client's timing
    # (the one that joined first may take everything before the other fetches).
    assert error == 0 and len(described.members) == 2


def test_offsets_altered_for_a_share_group_not_yet_joined_are_where_it_starts(server):
    """KAFKA-19662, as franz-go's TestShareGroupOffsetsAdmin runs it: AlterShareGroupOffsets
    on a share group nobody has joined creates the group, and the first share
    consumer starts at the offset set (not at share.auto.offset.reset's latest)."""
    topic, group = "sq-admin", "sq-admin-g"
    create_topic(server, topic, 1)
    produce(server, topic, 10)
    with RawClient(server.bound_port()) as client:
        body = client.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": group, "topics": [
            {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 6}]}]})
        assert body["error_code"] == 0, body
        assert body["responses"][0]["partitions"][0]["error_code"] == 0, body
        described = client.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [
            {"group_id": group, "topics": None}]})["groups"][0]
    assert described["error_code"] == 0
    assert described["topics"][0]["partitions"][0]["start_offset"] == 6
    seen = []
    with consumers(share_consumer(server, group, topic)) as (consumer,):
        def accept(consumer, messages):
            for m in messages:
                seen.append(m.offset())
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            if messages:
                consumer.commit_sync(TIMEOUT_S)
        poll_until((consumer,), lambda: len(seen) >= 4, accept)
    assert seen == [6, 7, 8, 9]


def test_released_records_come_back_and_rejected_ones_never(server):
    topic, group = "sq-ack", "sq-ack-g"
    set_group_config(server, group, share_auto_offset_reset="earliest")
    produce(server, topic, 10)
    deliveries: dict = {}
    with consumers(share_consumer(server, group, topic),
                   share_consumer(server, group, topic)) as (a, b):
        def judge(consumer, messages):
            for m in messages:
                deliveries.setdefault(m.offset(), []).append(consumer)
                if m.offset() % 3 == 0:
                    consumer.acknowledge(m, AcknowledgeType.REJECT)
                elif m.offset() % 3 == 1 and len(deliveries[m.offset()]) == 1:
                    consumer.acknowledge(m, AcknowledgeType.RELEASE)   # once
                else:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            if messages:
                consumer.commit_sync(TIMEOUT_S)
        released = [o for o in range(10) if o % 3 == 1]
        poll_until((a, b), lambda: all(len(deliveries.get(o, [])) == 2 for o in released),
                   judge)
        # A few more polls: nothing else may come (rejected and accepted are done).
        for _ in range(5):
            judge(a, poll(a))
            judge(b, poll(b))
    assert sorted(deliveries) == list(range(10))
    for offset, who in deliveries.items():
        assert len(who) == (2 if offset % 3 == 1 else 1), (offset, who)


def test_an_expired_lock_redelivers_to_the_other_consumer(server):
    topic, group = "sq-lock", "sq-lock-g"
    set_group_config(server, group, share_auto_offset_reset="earliest")
    produce(server, topic, 5)
    with consumers(share_consumer(server, group, topic),
                   share_consumer(server, group, topic)) as (holder, other):
        held: list = []
        wait_until(lambda: held.extend(poll(holder)) or len(held) == 5, TIMEOUT_S, interval=0)
        assert sorted(m.offset() for m in held) == list(range(5))
        # The holder never acknowledges nor polls again: its locks lapse (2 s).
        again: dict = {}

        def take(consumer, messages):
            for m in messages:
                again[m.offset()] = m
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            if messages:
                consumer.commit_sync(TIMEOUT_S)
        poll_until((other,), lambda: len(again) == 5, take)
        assert sorted(again) == list(range(5))
        assert [m.value() for m in sorted(again.values(), key=lambda m: m.offset())] == \
            [f"v{i}".encode() for i in range(5)]


def test_the_delivery_count_limit_archives_a_record_released_too_often(server):
    topic, group = "sq-limit", "sq-limit-g"
    set_group_config(server, group, share_auto_offset_reset="earliest")
    produce(server, topic, 1)
    deliveries: list = []
    with consumers(share_consumer(server, group, topic)) as (c,):
        def release(consumer, messages):
            for m in messages:
                deliveries.append(m.offset())
                consumer.acknowledge(m, AcknowledgeType.RELEASE)
            if messages:
                consumer.commit_sync(TIMEOUT_S)
        poll_until((c,), lambda: len(deliveries) >= 3, release)
        produce(server, topic, 1, start=1)   # a sentinel after it
        poll_until((c,), lambda: 1 in deliveries, release)
    # group.share.delivery.count.limit=3: three deliveries, then archived.
    assert deliveries.count(0) == 3 and deliveries.count(1) >= 1, deliveries


@contextlib.contextmanager
def durable_server(log_dir: str):
    server = KafkaServer(fast_group_config(log_store="disk", log_dirs=(log_dir,)))
    server.startup()
    try:
        yield server
    finally:
        server.shutdown()


def test_share_state_survives_a_broker_restart_on_the_durable_log(tmp_path):
    topic, group = "sq-restart", "sq-restart-g"
    log_dir = str(tmp_path / "logs")
    with durable_server(log_dir) as server:
        set_group_config(server, group, share_auto_offset_reset="earliest")
        produce(server, topic, 10)
        consumer = share_consumer(server, group, topic)
        got: list = []
        wait_until(lambda: got.extend(poll(consumer)) or len(got) == 10, TIMEOUT_S,
                   interval=0)
        assert sorted(m.offset() for m in got) == list(range(10))
        for m in got:
            if m.offset() < 4:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            elif m.offset() == 4:
                consumer.acknowledge(m, AcknowledgeType.REJECT)
        # 5-9 are left in flight: the broker stops with their locks held.
        result = consumer.commit_sync(TIMEOUT_S)
        assert all(error is None for error in result.values()), result
    # (the consumer of the stopped broker is dropped unclosed: it cannot reach it)
    with durable_server(log_dir) as server:
        again = share_consumer(server, group, topic)
        redelivered: dict = {}
        try:
            def take(consumer, messages):
                for m in messages:
                    redelivered[m.offset()] = m.value()
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                if messages:
                    consumer.commit_sync(TIMEOUT_S)
            poll_until((again,), lambda: len(redelivered) >= 5, take)
            for _ in range(3):
                take(again, poll(again))
        finally:
            again.close()
        assert redelivered == {i: f"v{i}".encode() for i in range(5, 10)}
        offsets = server.apis.group_coordinator.share.start_offsets(group)
        assert [start for start, _ in offsets.values()] == [10]


def read_all(server, topic: str, count: int) -> list:
    """The first ``count`` records of partition 0 of ``topic``, with a plain consumer."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": f"{topic}-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list = []
    try:
        def more() -> bool:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got.append(message)
            return len(got) >= count
        wait_until(more, TIMEOUT_S, interval=0)
    finally:
        consumer.close()
    return got


def create_dead_letter_topic(server, topic: str) -> None:
    with RawClient(server.bound_port()) as client:
        body = client.call(ApiKey.CREATE_TOPICS, 5, {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                        "assignments": [], "configs": [
                            {"name": "errors.deadletterqueue.group.enable", "value": "true"}]}],
            "timeout_ms": 5000, "validate_only": False})
    assert body["topics"][0]["error_code"] == 0, body


def allow_dead_letter_topic_creation(server) -> None:
    """The cluster-wide dynamic errors.deadletterqueue.auto.create.topics.enable."""
    with RawClient(server.bound_port()) as client:
        body = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
            "validate_only": False, "resources": [{
                "resource_type": 4, "resource_name": "", "configs": [{
                    "name": "errors.deadletterqueue.auto.create.topics.enable",
                    "config_operation": 0, "value": "true"}]}]})
    assert body["responses"][0]["error_code"] == 0, body


@pytest.mark.parametrize("copy, created_by", [(False, "admin"), (True, "admin"),
                                              (False, "broker")])
def test_dead_letters_land_in_the_group_s_dead_letter_topic(server, copy, created_by):
    """KIP-1191 (share.version 2, Kafka 4.4): with the group's
    errors.deadletterqueue.topic.name set, a record the consumer rejects and one
    released until the delivery count limit (3 here) are written to that topic, headers
    naming them (and their key and value with copy.record.enable); an accepted one is not.
    The topic is created beforehand, or by the broker at the first dead letter where
    errors.deadletterqueue.auto.create.topics.enable allows it."""
    topic, group = f"sq-dlq-{copy}-{created_by}", f"sq-dlq-g-{copy}-{created_by}"
    dlq = f"dlq.sq-{copy}-{created_by}"
    create_topic(server, topic, 1)
    if created_by == "admin":
        create_dead_letter_topic(server, dlq)
    else:
        allow_dead_letter_topic_creation(server)
    set_group_config(server, group, share_auto_offset_reset="earliest",
                     **{"errors.deadletterqueue.topic.name": dlq,
                        "errors.deadletterqueue.copy.record.enable": str(copy).lower()})
    produce(server, topic, 3)       # v0 rejected, v1 released to the limit, v2 accepted
    finished: set = set()
    with consumers(share_consumer(server, group, topic)) as (consumer,):
        def handle(consumer, messages):
            for m in messages:
                ack = (AcknowledgeType.REJECT, AcknowledgeType.RELEASE,
                       AcknowledgeType.ACCEPT)[m.offset()]
                consumer.acknowledge(m, ack)
                if ack != AcknowledgeType.RELEASE or m.delivery_count() == 3:
                    finished.add(m.offset())
            if messages:
                consumer.commit_sync(TIMEOUT_S)
        poll_until((consumer,), lambda: finished == {0, 1, 2}, handle)
    letters = read_all(server, dlq, 2)
    headers = [dict(m.headers()) for m in letters]
    assert [(h["__dlq.errors.offset"], h["__dlq.errors.delivery.count"],
             h["__dlq.errors.message"]) for h in headers] == [
        (b"0", b"1", b"Record rejected by the consumer."),
        (b"1", b"3", b"Offset delivery count exceeded the threshold.")]
    assert all((h["__dlq.errors.topic"], h["__dlq.errors.partition"],
                h["__dlq.errors.group"]) == (topic.encode(), b"0", group.encode())
               for h in headers)
    assert [m.value() for m in letters] == ([b"v0", b"v1"] if copy else [None, None])
