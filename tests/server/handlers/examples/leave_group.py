"""LeaveGroup (key 13): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(group_id="g", member_id="stranger",
                members=[{"member_id": "stranger", "group_instance_id": None}])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", member_id="m",
                members=[{"member_id": "m", "group_instance_id": "i"}])


def typical_error(version: int) -> int | None:
    return None   # a member the group does not know: UNKNOWN_MEMBER_ID
