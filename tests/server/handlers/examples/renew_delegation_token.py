"""RenewDelegationToken (key 39): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import Broker
from tests.server.handlers.examples.support import token_broker


def typical(b: Broker, version: int) -> dict:
    token_broker(b)
    token_hmac = b.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, renewers=[],
                        max_lifetime_ms=-1)["hmac"]
    return dict(hmac=token_hmac, renew_period_ms=1000)


def failing(b: Broker, version: int) -> dict:
    token_broker(b)   # an unknown HMAC: DELEGATION_TOKEN_NOT_FOUND
    return dict(hmac=b"nothing", renew_period_ms=1000)


# The token APIs refuse by ownership, not by ACL: another's token (alice's).
WITHOUT_ACLS = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
