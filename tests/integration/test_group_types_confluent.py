"""One group id, one group type, with confluent-kafka (librdkafka 2.16): a classic
Consumer and a ShareConsumer given the same group.id get Kafka 4.2's answers.

* The classic consumer holds the id: the ShareConsumer's ShareGroupHeartbeat is
  answered GROUP_ID_NOT_FOUND ("Group X is not a share group."), which
  librdkafka raises as a fatal error from ``poll``.
* The share consumer holds the id: the classic consumer's JoinGroup is answered
  INCONSISTENT_GROUP_PROTOCOL, which librdkafka hands the application as an
  error event from ``poll``.

Either way the group stays the type that holds it.  Rules kept: loopback
only, every wait bounded, no assertion on elapsed time.
"""

from __future__ import annotations

import pytest

from confluent_kafka import Consumer, KafkaError, KafkaException

from kafka_net.protocol.api_keys import ApiKey
from tests.integration.client_support import bootstrap, fast_group_config
from tests.integration.test_share_groups_confluent import (
    TIMEOUT_S, consumers, create_topic, produce, set_group_config, share_consumer)
from tests.support import RawClient, request_body, running_server, wait_until

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def server():
    with running_server(fast_group_config()) as running:
        create_topic(running, "kinds", 1)
        produce(running, "kinds", 5)
        yield running


def classic_consumer(server, group: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": group,
                         "group.protocol": "classic", "auto.offset.reset": "earliest",
                         "client.id": f"{group}-classic"})
    consumer.subscribe(["kinds"])
    return consumer


def group_types(server, group: str) -> list[str]:
    """ListGroups v5: the type of each group listed with that id."""
    with RawClient(server.bound_port()) as client:
        body = client.call(ApiKey.LIST_GROUPS, 5, request_body(ApiKey.LIST_GROUPS))
    return [g["group_type"] for g in body["groups"] if g["group_id"] == group]


def test_a_share_consumer_on_a_classic_groups_id_fails_with_group_id_not_found(server):
    group = "kinds-classic"
    with consumers(classic_consumer(server, group)) as (classic,):
        read = []

        def consume() -> bool:
            message = classic.poll(0.2)
            if message is not None and not message.error():
                read.append(message.offset())
            return len(read) == 5
        wait_until(consume, TIMEOUT_S, interval=0)
        with consumers(share_consumer(server, group, "kinds")) as (share,):
            failure = []

            def refused() -> bool:
                try:
                    share.poll(0.2)
                except KafkaException as exc:
                    failure.append(exc.args[0])
                return bool(failure)
            wait_until(refused, TIMEOUT_S, interval=0)
        [error] = failure
        assert error.fatal() and error.code() == KafkaError.GROUP_ID_NOT_FOUND, error
        assert group_types(server, group) == ["classic"]


def test_a_classic_consumer_on_a_share_groups_id_gets_inconsistent_group_protocol(server):
    group = "kinds-share"
    set_group_config(server, group, share_auto_offset_reset="earliest")
    with consumers(share_consumer(server, group, "kinds")) as (share,):
        def joined() -> bool:
            share.poll(0.2)
            return group_types(server, group) == ["share"]
        wait_until(joined, TIMEOUT_S, interval=0)
        with consumers(classic_consumer(server, group)) as (classic,):
            errors = []

            def refused() -> bool:
                message = classic.poll(0.2)
                if message is not None:
                    assert message.error() is not None, "a record for a refused member"
                    errors.append(message.error())
                return bool(errors)
            wait_until(refused, TIMEOUT_S, interval=0)
        assert errors[0].code() == KafkaError.INCONSISTENT_GROUP_PROTOCOL, errors
        assert group_types(server, group) == ["share"]
