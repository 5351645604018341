"""CreateTopics (key 19): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, batch


def typical(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": f"created-{version}", "num_partitions": 2,
                         "replication_factor": 1, "assignments": [],
                         "configs": [{"name": "retention.ms", "value": "1000"}]}])


def failing(b: Broker, version: int) -> dict:
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    return dict(topics=[
        {"name": "bad name", "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": []},
        {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": []},
        {"name": "rf", "num_partitions": 1, "replication_factor": 3, "assignments": [],
         "configs": []}])
