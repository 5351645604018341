"""DescribeDelegationToken (key 41): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import Broker
from tests.server.handlers.examples.support import token_broker


def typical(b: Broker, version: int) -> dict:
    token_broker(b)
    b.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, renewers=[], max_lifetime_ms=-1)
    return dict(owners=None)


def failing(b: Broker, version: int) -> dict:
    return dict(owners=None)


# Describing shows only one's own tokens (and those DESCRIBE allows): none, no error.
WITHOUT_ACLS = ErrorCode.NONE
