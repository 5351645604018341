"""SaslAuthenticate (key 36): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import Broker
from tests.server.handlers.examples import UNCHECKED


def typical(b: Broker, version: int) -> dict:
    return dict(auth_bytes=b"\0alice\0secret")


def failing(b: Broker, version: int) -> dict:
    return typical(b, version)   # always ILLEGAL_SASL_STATE here


def typical_error(version: int) -> int:
    return ErrorCode.ILLEGAL_SASL_STATE   # as SaslHandshake: after authentication


WITHOUT_ACLS = UNCHECKED
