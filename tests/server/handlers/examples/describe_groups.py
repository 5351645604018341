"""DescribeGroups (key 15): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(groups=["g", "simple-unknown"], include_authorized_operations=True)


def failing(b: Broker, version: int) -> dict:
    return dict(groups=["ghost", ""])


def failing_may_answer_none(version: int) -> bool:
    return True   # an unknown group is described as Dead, with no error
