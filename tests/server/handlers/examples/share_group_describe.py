"""ShareGroupDescribe (key 77): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker
from tests.server.handlers.examples.support import share_join


def typical(b: Broker, version: int) -> dict:
    t = b.metadata_cache.topic("t").topic_id
    share_join(b, "sg", "m-1")
    return dict(group_ids=["sg"], include_authorized_operations=True)


def failing(b: Broker, version: int) -> dict:
    return dict(group_ids=["ghost", "g", ""], include_authorized_operations=False)
