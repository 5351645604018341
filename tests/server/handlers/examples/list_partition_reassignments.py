"""ListPartitionReassignments (key 46): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(topics=None)


def failing(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "missing", "partition_indexes": [0]}])


def failing_may_answer_none(version: int) -> bool:
    return True   # no reassignment is ever in progress
