"""ConsumerGroupHeartbeat (key 68): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, LONG


def typical(b: Broker, version: int) -> dict:
    return dict(group_id=f"cg-{version}", member_id="" if version == 0 else "m-1",
                member_epoch=0, rebalance_timeout_ms=LONG, subscribed_topic_names=["t"],
                topic_partitions=[])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", member_id="m", member_epoch=5, topic_partitions=None)
