"""DeleteRecords (key 21): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "t", "partitions": [
        {"partition_index": 0, "offset": 1}, {"partition_index": 9, "offset": 0}]}],
        timeout_ms=1000)


def failing(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "t", "partitions": [
        {"partition_index": 0, "offset": 99}, {"partition_index": 1, "offset": -7}]},
        {"name": "missing", "partitions": [{"partition_index": 0, "offset": 0}]}])
