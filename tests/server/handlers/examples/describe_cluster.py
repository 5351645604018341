"""DescribeCluster (key 60): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(include_cluster_authorized_operations=True)


def failing(b: Broker, version: int) -> dict:
    return dict(endpoint_type=2)   # controllers: v1 only (v0 cannot ask, see the test)
