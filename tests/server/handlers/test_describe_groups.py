"""DescribeGroups at every version."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
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
    assert (nope["group_state"], nope["error_code"], nope["members"]) == ("Dead", 0, [])
    if version >= 3:
        assert g["authorized_operations"] > 0
