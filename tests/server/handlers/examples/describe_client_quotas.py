"""DescribeClientQuotas (key 48): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(components=[{"entity_type": "client-id", "match_type": 2, "match": None}])


def failing(b: Broker, version: int) -> dict:
    return dict(components=[{"entity_type": "topic", "match_type": 0, "match": "t"}])
