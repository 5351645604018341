"""GetTelemetrySubscriptions (key 71): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import ZERO_UUID
from tests.server.conftest import Broker
from tests.server.handlers.examples import UNCHECKED


def typical(b: Broker, version: int) -> dict:
    return dict(client_instance_id=ZERO_UUID)   # a new client: an id assigned


def failing(b: Broker, version: int) -> dict:
    got = b.call(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, client_instance_id=ZERO_UUID)
    return dict(client_instance_id=got["client_instance_id"])


WITHOUT_ACLS = UNCHECKED   # Kafka checks nothing for telemetry
