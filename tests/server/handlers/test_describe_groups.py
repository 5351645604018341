"""DescribeGroups at every version."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import versions


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_GROUPS))
def test_describe_groups(group_broker, version):
    body = group_broker.call(ApiKey.DESCRIBE_GROUPS, version, groups=["g", "nope"],
                     include_authorized_operations=True)
    g, nope = body["groups"]
    assert (g["group_id"], g["group_state"], g["protocol_type"], g["protocol_data"]) == \
        ("g", "Stable", "consumer", "range")
    [m] = g["members"]
    assert (m["member_id"], m["client_id"], m["client_host"], m["member_assignment"]) == \
        (group_broker.group_member, "test-client", "/10.1.2.3", b"x")
    # v6 (KIP-1043) says the group does not exist; earlier versions only show it Dead.
    expected = (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.") if version >= 6 \
        else (0, None)
    assert (nope["group_state"], nope["members"]) == ("Dead", [])
    assert (nope["error_code"], nope["error_message"]) == expected
    assert (g["error_code"], g["error_message"]) == (0, None)
    if version >= 3:
        assert g["authorized_operations"] > 0
