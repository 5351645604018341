"""CreatePartitions (key 37): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    current = b.metadata_cache.topic("t").num_partitions
    return dict(topics=[{"name": "t", "count": current + 1, "assignments": None}])


def failing(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "missing", "count": 3, "assignments": None},
                        {"name": "t", "count": 1, "assignments": None}])
