"""FindCoordinator (key 10): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(key="g", coordinator_keys=["g", "h"])


def failing(b: Broker, version: int) -> dict:
    return dict(key="", key_type=1 if version >= 1 else 0, coordinator_keys=["", "x"])
