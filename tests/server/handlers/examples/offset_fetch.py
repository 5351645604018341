"""OffsetFetch (key 9): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    topics = [{"name": "t", "partition_indexes": [0, 1]}]
    if version >= 8:
        return dict(groups=[{"group_id": "g", "topics": topics},
                            {"group_id": "none", "topics": None}])
    return dict(group_id="g", topics=topics)


def failing(b: Broker, version: int) -> dict:
    topics = [{"name": "missing", "partition_indexes": [3]}]
    if version >= 8:
        return dict(groups=[{"group_id": "ghost", "topics": topics}])
    return dict(group_id="ghost", topics=topics)


def failing_may_answer_none(version: int) -> bool:
    return True   # an unknown group has no offsets: -1 for each partition, no error
