"""StreamsGroupDescribe (key 89): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from tests.server.conftest import Broker
from tests.server.handlers.examples import typical_request


def typical(b: Broker, version: int) -> dict:
    b.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, **typical_request(
        b, ApiKey.STREAMS_GROUP_HEARTBEAT, 0))
    return dict(group_ids=["sg", "g"])


def failing(b: Broker, version: int) -> dict:
    return dict(group_ids=["ghost", "g", ""])
