"""ListConfigResources (key 74): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(resource_types=[])


def failing(b: Broker, version: int) -> dict:
    return dict(resource_types=[1])   # v1: not a type v1 lists
