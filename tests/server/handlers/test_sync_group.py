"""SyncGroup errors through the handler (the rules are in tests/server/group/)."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode


def test_sync_errors_through_the_handler(group_broker):
    body = group_broker.call(ApiKey.SYNC_GROUP, 5, group_id="g",
                             generation_id=group_broker.generation, member_id="x")
    assert body["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
