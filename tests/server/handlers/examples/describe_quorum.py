"""DescribeQuorum (key 55): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(topics=[{"topic_name": "__cluster_metadata",
                         "partitions": [{"partition_index": 0}]}])


def failing(b: Broker, version: int) -> dict:
    return dict(topics=[{"topic_name": "t", "partitions": [{"partition_index": 0}]}])
