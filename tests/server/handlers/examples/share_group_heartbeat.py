"""ShareGroupHeartbeat (key 76): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    t = b.metadata_cache.topic("t").topic_id
    return dict(group_id=f"sg-{version}", member_id="m-1", member_epoch=0,
                rack_id=None, subscribed_topic_names=["t"])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", member_id="m", member_epoch=5, rack_id=None,
                subscribed_topic_names=None)
