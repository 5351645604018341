"""OffsetDelete (key 47): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(group_id="g", topics=[{"name": "t", "partitions": [
        {"partition_index": 0}, {"partition_index": 9}]}])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", topics=[{"name": "t", "partitions": [
        {"partition_index": 0}]}])
