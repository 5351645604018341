"""DescribeConfigs (key 32): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, batch


def typical(b: Broker, version: int) -> dict:
    return dict(resources=[
        {"resource_type": 2, "resource_name": "t", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "1", "configuration_keys": ["num.partitions"]},
        {"resource_type": 2, "resource_name": "missing", "configuration_keys": None}],
        include_synonyms=True, include_documentation=True)


def failing(b: Broker, version: int) -> dict:
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    return dict(resources=[
        {"resource_type": 2, "resource_name": "bad name", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "7", "configuration_keys": None},
        {"resource_type": 99, "resource_name": "x", "configuration_keys": None}])
