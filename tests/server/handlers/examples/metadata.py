"""Metadata (key 3): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.schema import ZERO_UUID
from tests.server.conftest import Broker, batch


def typical(b: Broker, version: int) -> dict:
    return dict(topics=[{"name": "t", "topic_id": ZERO_UUID}, {"name": "auto", "topic_id":
                                                                ZERO_UUID}])


def failing(b: Broker, version: int) -> dict:
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    return dict(allow_auto_topic_creation=False, topics=[
        {"name": "missing", "topic_id": ZERO_UUID}, {"name": "bad name", "topic_id":
                                                     ZERO_UUID}])
