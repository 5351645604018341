"""OffsetCommit at every version."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import versions


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_COMMIT))
def test_offset_commit_simple_consumer_every_version(broker, version):
    broker.create_topic("t")
    topic_id = broker.metadata_cache.topic("t").topic_id   # v10 names it so
    body = broker.call(ApiKey.OFFSET_COMMIT, version, group_id="s",
                       generation_id_or_member_epoch=-1, topics=[{
                           "name": "t", "topic_id": topic_id, "partitions": [
                           {"partition_index": 0, "committed_offset": 5,
                            "committed_metadata": "x"},
                           {"partition_index": 1, "committed_offset": 5,
                            "committed_metadata": "x"}]}])
    assert [p["error_code"] for p in body["topics"][0]["partitions"]] == [
        ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
