"""SaslAuthenticate (key 36): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(auth_bytes=b"\0alice\0secret")


def failing(b: Broker, version: int) -> dict:
    return typical(b, version)   # always ILLEGAL_SASL_STATE here
