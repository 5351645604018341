"""OffsetForLeaderEpoch (key 23): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(replica_id=-1, topics=[{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0},
        {"partition": 1, "current_leader_epoch": -1, "leader_epoch": 0}]}])


def failing(b: Broker, version: int) -> dict:
    return dict(topics=[{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 0},
        {"partition": 9, "current_leader_epoch": -1, "leader_epoch": 0}]},
        {"topic": "missing", "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}])
