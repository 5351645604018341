"""JoinGroup (key 11): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, LONG


def typical(b: Broker, version: int) -> dict:
    return dict(group_id=f"join-{version}", session_timeout_ms=LONG,
                rebalance_timeout_ms=LONG, protocol_type="consumer",
                protocols=[{"name": "range", "metadata": b"m"}])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="g", session_timeout_ms=0, member_id="someone",
                protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}])


def typical_error(version: int) -> int | None:
    return None   # v4+: MEMBER_ID_REQUIRED first; the join is tested in test_join_group.py
