"""AlterReplicaLogDirs (key 34): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.server.handlers.describe_log_dirs import log_dirs
from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    """Both partitions of "t" to the log dir they are in: nothing moves."""
    return dict(dirs=[{"path": log_dirs(b.config)[0],
                       "topics": [{"name": "t", "partitions": [0, 1]}]}])


def failing(b: Broker, version: int) -> dict:
    return dict(dirs=[{"path": "/no/such/log/dir", "topics": [{"name": "t", "partitions": [0]}]},
                      {"path": log_dirs(b.config)[0],
                       "topics": [{"name": "missing", "partitions": [0]}]}])
