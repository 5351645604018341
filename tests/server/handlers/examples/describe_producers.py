"""DescribeProducers (key 61): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, batch


def typical(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "t", "partition_indexes": [0, 1]}])


def failing(b: Broker, version: int) -> dict:
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    return dict(topics=[{"name": "missing", "partition_indexes": [0]},
                        {"name": "bad name", "partition_indexes": [1]}])
