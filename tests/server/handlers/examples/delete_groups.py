"""DeleteGroups (key 42): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(groups_names=["g", "ghost"])   # g has members: NON_EMPTY_GROUP


def failing(b: Broker, version: int) -> dict:
    return dict(groups_names=["ghost", ""])
