"""OffsetCommit (key 8): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(group_id="simple", generation_id_or_member_epoch=-1, topics=[
        {"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 1,
                                      "committed_metadata": None}]}])


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", generation_id_or_member_epoch=5, member_id="m", topics=[
        {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                      "committed_metadata": "x" * 5000}]}])
