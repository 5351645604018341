"""DeleteTopics (key 20): a typical request and a failing one."""

from __future__ import annotations

import uuid

from kafka_net.protocol.schema import ZERO_UUID
from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(topic_names=["u", "gone"],
                topics=[{"name": "u", "topic_id": ZERO_UUID},
                        {"name": None, "topic_id": uuid.uuid4()}])


def failing(b: Broker, version: int) -> dict:
    return dict(topic_names=["missing"], topics=[{"name": "missing", "topic_id": ZERO_UUID}])
