"""SaslHandshake (key 17): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import Broker
from tests.server.handlers.examples import UNCHECKED


def typical(b: Broker, version: int) -> dict:
    return dict(mechanism="PLAIN")


def failing(b: Broker, version: int) -> dict:
    return typical(b, version)   # always ILLEGAL_SASL_STATE here


def typical_error(version: int) -> int:
    # Served by the SASL authenticator before authentication; the handler only
    # ever sees it after that (or on a listener without SASL).
    return ErrorCode.ILLEGAL_SASL_STATE


WITHOUT_ACLS = UNCHECKED
