"""DeleteShareGroupOffsets (key 92): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.server.share.coordinator import ShareHeartbeatRequest
from tests.server.conftest import Broker
from tests.server.handlers.examples.support import share_join


def typical(b: Broker, version: int) -> dict:
    t = b.metadata_cache.topic("t").topic_id
    fetch = dict(group_id="sg", member_id="m-1", max_wait_ms=0, min_bytes=1,
                 max_bytes=1 << 20, max_records=10, batch_size=10,
                 forgotten_topics_data=[],
                 topics=[{"topic_id": t, "partitions": [
                     {"partition_index": 0, "acknowledgement_batches": []}]}])
    share_join(b, "sg-admin", "m-1")   # joins, then leaves: an empty share group
    b.share_coordinator.heartbeat(ShareHeartbeatRequest("sg-admin", "m-1", -1, None, None))
    return dict(group_id="sg-admin", topics=[{"topic_name": "t"}])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", topics=[{"topic_name": "missing"}])
