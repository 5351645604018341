"""ShareAcknowledge (key 79): a typical request and a failing one."""

from __future__ import annotations

import uuid

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    t = b.metadata_cache.topic("t").topic_id
    b.share_coordinator.sessions.remove("sg", "m-1")
    b.share_coordinator.sessions.open("sg", "m-1", [(t, 0)])
    return dict(group_id="sg", member_id="m-1", share_session_epoch=1, topics=[])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", member_id="m", share_session_epoch=7, max_wait_ms=0,
                min_bytes=1, max_bytes=100, max_records=1, batch_size=1,
                forgotten_topics_data=[], topics=[{"topic_id": uuid.uuid4(), "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": []}]}])
