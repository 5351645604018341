"""LeaveGroup at every version."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import versions


@pytest.mark.parametrize("version", versions(ApiKey.LEAVE_GROUP))
def test_leave_group_unknown_member(group_broker, version):
    body = group_broker.call(ApiKey.LEAVE_GROUP, version, group_id="g", member_id="x",
                     members=[{"member_id": "x", "group_instance_id": None}])
    if version < 3:
        assert body["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    else:
        assert body["error_code"] == ErrorCode.NONE
        assert body["members"][0]["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
