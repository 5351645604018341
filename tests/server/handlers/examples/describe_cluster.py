"""DescribeCluster (key 60): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker
from tests.server.handlers.examples import UNCHECKED


def typical(b: Broker, version: int) -> dict:
    return dict(include_cluster_authorized_operations=True)


def failing(b: Broker, version: int) -> dict:
    return dict(endpoint_type=2)   # controllers: v1 only (v0 cannot ask, see the test)


def failing_may_answer_none(version: int) -> bool:
    return version == 0   # no endpoint type to refuse


WITHOUT_ACLS = UNCHECKED   # Kafka checks nothing; authorized operations show what is allowed
