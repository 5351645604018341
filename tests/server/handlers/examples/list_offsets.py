"""ListOffsets (key 2): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "t", "partitions": [
        {"partition_index": 0, "timestamp": -1}, {"partition_index": 1, "timestamp": -2},
        {"partition_index": 7, "timestamp": -1}]}])


def failing(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "missing", "partitions": [
        {"partition_index": 0, "timestamp": -1}]}])
