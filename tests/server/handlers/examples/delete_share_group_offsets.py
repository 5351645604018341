"""DeleteShareGroupOffsets (key 92): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker
from tests.server.handlers.examples.support import empty_share_group


def typical(b: Broker, version: int) -> dict:
    empty_share_group(b, "sg-admin")
    return dict(group_id="sg-admin", topics=[{"topic_name": "t"}])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", topics=[{"topic_name": "missing"}])
