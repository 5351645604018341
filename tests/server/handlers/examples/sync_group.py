"""SyncGroup (key 14): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(group_id="g", generation_id=b.generation, member_id=b.group_member)


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", generation_id=1, member_id="m")
