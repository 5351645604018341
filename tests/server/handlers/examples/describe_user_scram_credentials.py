"""DescribeUserScramCredentials (key 50): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(users=None)


def failing(b: Broker, version: int) -> dict:
    return dict(users=[{"name": "nobody"}])
