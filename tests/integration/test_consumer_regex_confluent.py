"""confluent-kafka (librdkafka) regex subscriptions with ``group.protocol=consumer``:
the broker resolves them (KIP-848, ConsumerGroupHeartbeat v1's
``SubscribedTopicRegex``).

librdkafka sends its ``^`` subscriptions as one regex, ``(^a)|(^b)``, and its
plain names beside it.  The broker's heartbeat interval is 300 ms here.  A
topic created after the join reaches the member when the group resolves its
regexes again, which Kafka does at most every 10 s
(REGEX_BATCH_REFRESH_MIN_INTERVAL_MS): that test takes about that long.

The second half ports librdkafka's own regex subscription test
(tests/0033-regex_subscribe.c): one consumer, several subscriptions in turn,
each checked against the assignment it must get, for both server-side
assignors.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.client_support import bootstrap
from tests.support import make_config, server_fixture

pytestmark = pytest.mark.interop

server = server_fixture(lambda: make_config(group_consumer_heartbeat_interval_ms=300),
                        scope="module")


def consumer(server, group: str, **conf) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap(server), "group.id": group,
                     "group.protocol": "consumer", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **conf})


def admin(server) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap(server)})


def create(server, topics: dict[str, int]) -> None:
    client = admin(server)   # kept while its futures run
    futures = client.create_topics(
        [NewTopic(name, partitions, 1) for name, partitions in topics.items()])
    for future in futures.values():
        future.result(timeout=10)


def delete(server, *names: str) -> None:
    client = admin(server)
    for future in client.delete_topics(list(names)).values():
        future.result(timeout=10)


def assignment(c: Consumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def poll_until_assigned(c: Consumer, expected: set, timeout: float = 30.0) -> set:
    """Poll until the assignment is ``expected`` (or ``timeout``, a bound on a hung
    client, never asserted on); the last assignment seen."""
    deadline = time.monotonic() + timeout
    while assignment(c) != expected and time.monotonic() < deadline:
        message = c.poll(0.1)
        if message is not None and message.error():
            raise KafkaException(message.error())
    return assignment(c)


def test_a_regex_gets_the_matching_topics_then_new_ones_and_loses_deleted_ones(server):
    create(server, {"rx-orders-eu": 2, "rx-orders-us": 1, "rx-payments": 1})
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    for topic in ("rx-orders-eu", "rx-orders-us", "rx-payments"):
        producer.produce(topic, value=topic.encode())
    assert producer.flush(10) == 0

    c = consumer(server, "g-rx")
    try:
        c.subscribe(["^rx-orders-.*"])
        first = {("rx-orders-eu", 0), ("rx-orders-eu", 1), ("rx-orders-us", 0)}
        assert poll_until_assigned(c, first) == first
        read = set()
        deadline = time.monotonic() + 20
        while len(read) < 2 and time.monotonic() < deadline:
            message = c.poll(0.1)
            if message is not None and not message.error():
                read.add(message.value())
        assert read == {b"rx-orders-eu", b"rx-orders-us"}   # never rx-payments

        create(server, {"rx-orders-apac": 2})
        grown = first | {("rx-orders-apac", 0), ("rx-orders-apac", 1)}
        assert poll_until_assigned(c, grown) == grown

        delete(server, "rx-orders-us")
        shrunk = grown - {("rx-orders-us", 0)}
        assert poll_until_assigned(c, shrunk) == shrunk
    finally:
        c.close()


def test_a_regex_the_broker_cannot_compile_is_invalid_regular_expression(server):
    # librdkafka checks the syntax itself at subscribe() (POSIX regcomp); "a**" and
    # a back-reference pass there, but RE2 (Kafka's RE2/J too) refuses them.
    for regex in ("^rx-a**", "^(rx)\\1"):
        c = consumer(server, f"g-bad-{len(regex)}")
        try:
            c.subscribe([regex])
            error = None
            deadline = time.monotonic() + 20
            while error is None and time.monotonic() < deadline:
                message = c.poll(0.1)
                if message is not None and message.error():
                    error = message.error()
            assert error is not None and error.code() == KafkaError._FATAL
            assert "The regular expression is not valid" in error.str()
            assert not c.assignment()
        finally:
            c.close()


# -- librdkafka's 0033-regex_subscribe, ported -----------------------------------------


@pytest.mark.parametrize("assignor", ["range", "uniform"])
def test_librdkafka_0033_regex_subscribe(server, assignor):
    group = f"g0033{assignor}"
    topics = [f"regex_subscribe_TOPIC_0001_UNO_{group}",
              f"regex_subscribe_topic_0002_dup_{group}",
              f"regex_subscribe_TOOTHPIC_0003_3_{group}"]
    create(server, dict.fromkeys(topics, 1))
    c = consumer(server, group, **{"group.remote.assignor": assignor})
    cases = [
        ("no regexps (0&1)", [topics[0], topics[1]], [topics[0], topics[1]]),
        ("regex all", [f"^.*_{group}"], topics),
        ("regex 0&1", [f"^.*[tToOpPiIcC]_0+[12]_[^_]+_{group}"], [topics[0], topics[1]]),
        ("regex 2", [f"^.*TOOTHPIC_000._._{group}"], [topics[2]]),
        ("regex 2 and nonexistent(not seen)", [f"^.*_000[34]_..?_{group}"], [topics[2]]),
        ("multiple regex 1&2 matches",
         ["^.*regex_subscribe_to.*", "^.*regex_subscribe_TOO.*"], [topics[1], topics[2]]),
    ]
    try:
        for name, subscription, expected_topics in cases:
            c.subscribe(subscription)
            expected = {(t, 0) for t in expected_topics}
            assert poll_until_assigned(c, expected) == expected, name
            c.unsubscribe()
            assert poll_until_assigned(c, set()) == set(), name
        with pytest.raises(KafkaException) as refused:   # "broken regex": the client's own check
            c.subscribe(["^.*[0"])
        assert refused.value.args[0].code() == KafkaError._INVALID_ARG
    finally:
        c.close()
        delete(server, *topics)
