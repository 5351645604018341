"""OffsetFetch at every version: one group, several groups (v8+), null topics."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import versions


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_FETCH))
def test_offset_fetch(group_broker, version):
    if version >= 8:
        t_id = group_broker.metadata_cache.topic("t").topic_id   # v10 names topics by id
        t = {"name": "t", "topic_id": t_id}
        body = group_broker.call(ApiKey.OFFSET_FETCH, version, groups=[
            {"group_id": "g", "topics": [{**t, "partition_indexes": [0, 1]}]},
            {"group_id": "g", "topics": None},
            {"group_id": "unknown", "topics": [{**t, "partition_indexes": [0]}]}])
        listed, everything, unknown = body["groups"]
        assert all(g["error_code"] == ErrorCode.NONE for g in body["groups"])
        topics = listed["topics"]
        key = "topic_id" if version >= 10 else "name"
        assert [(t[key], [p["partition_index"] for p in t["partitions"]])
                for t in everything["topics"]] == [(t[key], [0])]
        assert unknown["topics"][0]["partitions"][0]["committed_offset"] == -1
    else:
        topics = group_broker.call(ApiKey.OFFSET_FETCH, version, group_id="g", topics=[
            {"name": "t", "partition_indexes": [0, 1]}])["topics"]
        if version >= 2:
            everything = group_broker.call(ApiKey.OFFSET_FETCH, version, group_id="g", topics=None)
            assert [t["name"] for t in everything["topics"]] == ["t"]
    assert [(p["partition_index"], p["committed_offset"], p["metadata"])
            for p in topics[0]["partitions"]] == [(0, 2, "m"), (1, -1, "")]
