"""DescribeShareGroupOffsets (key 90): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker
from tests.server.handlers.examples.support import empty_share_group


def typical(b: Broker, version: int) -> dict:
    empty_share_group(b, "sg-admin")
    return dict(groups=[{"group_id": "sg-admin", "topics": None}])


def failing(b: Broker, version: int) -> dict:
    return dict(groups=[{"group_id": "ghost", "topics": None},
                        {"group_id": "g", "topics": [{"topic_name": "missing",
                                                      "partitions": [0]}]}])
