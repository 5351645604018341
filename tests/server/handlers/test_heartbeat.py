"""Heartbeat errors through the handler (the rules are in tests/server/group/)."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode


def test_heartbeat_errors_through_the_handler(group_broker):
    assert group_broker.call(
        ApiKey.HEARTBEAT, 0, group_id="g", generation_id=group_broker.generation + 1,
        member_id=group_broker.group_member)["error_code"] == ErrorCode.ILLEGAL_GENERATION
    assert group_broker.call(ApiKey.HEARTBEAT, 4, group_id="g",
                             generation_id=group_broker.generation,
                             member_id="x")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
