"""ListGroups (key 16): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict()


def failing(b: Broker, version: int) -> dict:
    return dict(states_filter=["Dead"], types_filter=["consumer"])
