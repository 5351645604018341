"""DescribeTopicPartitions (key 75): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, batch


def typical(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "t"}, {"name": "u"}], response_partition_limit=2)


def failing(b: Broker, version: int) -> dict:
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    return dict(topics=[{"name": "missing"}, {"name": "bad name"}])
