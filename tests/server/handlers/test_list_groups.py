"""ListGroups at every version, with the state (v4+) and type (v5+) filters."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import versions


@pytest.mark.parametrize("version", versions(ApiKey.LIST_GROUPS))
def test_list_groups(group_broker, version):
    group_broker.call(ApiKey.OFFSET_COMMIT, 8, group_id="simple", topics=[
        {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}])
    body = group_broker.call(ApiKey.LIST_GROUPS, version)
    assert body["error_code"] == ErrorCode.NONE
    groups = {g["group_id"]: g for g in body["groups"]}
    assert set(groups) == {"g", "simple"}
    assert groups["g"]["protocol_type"] == "consumer"
    assert groups["simple"]["protocol_type"] == ""
    if version >= 4:
        assert groups["g"]["group_state"] == "Stable"
        assert groups["simple"]["group_state"] == "Empty"
        stable = group_broker.call(ApiKey.LIST_GROUPS, version, states_filter=["sTaBlE"])
        assert [g["group_id"] for g in stable["groups"]] == ["g"]
        none = group_broker.call(ApiKey.LIST_GROUPS, version, states_filter=["Dead"])
        assert none["groups"] == []
    if version >= 5:
        assert groups["g"]["group_type"] == "classic"
        assert len(group_broker.call(ApiKey.LIST_GROUPS, version, types_filter=["Classic"])["groups"]) == 2
        assert group_broker.call(ApiKey.LIST_GROUPS, version, types_filter=["consumer"])["groups"] == []
