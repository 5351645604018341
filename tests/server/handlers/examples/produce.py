"""Produce (key 0): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, batch
from tests.support import produce_body


def typical(b: Broker, version: int) -> dict:
    return produce_body("t", 0, batch(), timeout_ms=1000,
                        topic_id=b.metadata_cache.topic("t").topic_id)


def failing(b: Broker, version: int) -> dict:
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    return dict(acks=1, timeout_ms=10, topic_data=[
        {"name": "missing", "partition_data": [{"index": 0, "records": batch()}]},
        {"name": "t", "partition_data": [{"index": 0, "records": bytes(bad)},
                                         {"index": 1, "records": None}]}])
