"""CreateDelegationToken (key 38): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import Broker
from tests.server.handlers.examples.support import token_broker


def typical(b: Broker, version: int) -> dict:
    token_broker(b)
    return dict(renewers=[{"principal_type": "User", "principal_name": "bob"}],
                max_lifetime_ms=-1)


def failing(b: Broker, version: int) -> dict:
    token_broker(b)
    return dict(renewers=[{"principal_type": "Group", "principal_name": "g"}],
                max_lifetime_ms=-1)


# No ACL is needed for one's own token.
WITHOUT_ACLS = ErrorCode.NONE
