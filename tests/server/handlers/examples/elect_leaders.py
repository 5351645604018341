"""ElectLeaders (key 43): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(election_type=0, topic_partitions=[{"topic": "t", "partitions": [0, 1]}])


def failing(b: Broker, version: int) -> dict:
    return dict(election_type=1, topic_partitions=[
        {"topic": "missing", "partitions": [0]}, {"topic": "t", "partitions": [9]}])
