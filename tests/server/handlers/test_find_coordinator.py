"""FindCoordinator: this broker for groups and transactional ids, INVALID_REQUEST
for empty keys and other key types, at every version."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_v0_to_v3(broker, version):
    body = broker.call(ApiKey.FIND_COORDINATOR, version, key="g", key_type=0)
    assert body["error_code"] == ErrorCode.NONE
    assert (body["node_id"], body["host"], body["port"]) == (1, "broker.test", 19092)
    if version >= 1:
        assert body["error_message"] is None
        tx = broker.call(ApiKey.FIND_COORDINATOR, version, key="tx", key_type=1)
        assert (tx["error_code"], tx["error_message"]) == (ErrorCode.NONE, None)
        assert (tx["node_id"], tx["host"], tx["port"]) == (1, "broker.test", 19092)
        empty = broker.call(ApiKey.FIND_COORDINATOR, version, key="", key_type=1)
        assert empty["error_code"] == ErrorCode.INVALID_REQUEST
        assert empty["error_message"] == "transactional id is empty"


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_batched_v4_plus(broker, version):
    body = broker.call(ApiKey.FIND_COORDINATOR, version, key_type=0,
                       coordinator_keys=["g1", "g2", ""])
    assert [(c["key"], c["error_code"], c["node_id"], c["host"], c["port"])
            for c in body["coordinators"]] == [
        ("g1", 0, 1, "broker.test", 19092), ("g2", 0, 1, "broker.test", 19092),
        ("", ErrorCode.INVALID_REQUEST, -1, "", -1)]
    tx = broker.call(ApiKey.FIND_COORDINATOR, version, key_type=1,
                     coordinator_keys=["t1", "t2", ""])
    assert [(c["key"], c["error_code"], c["node_id"], c["host"], c["port"])
            for c in tx["coordinators"]] == [
        ("t1", 0, 1, "broker.test", 19092), ("t2", 0, 1, "broker.test", 19092),
        ("", ErrorCode.INVALID_REQUEST, -1, "", -1)]


def test_find_coordinator_unknown_key_type(broker):
    body = broker.call(ApiKey.FIND_COORDINATOR, 2, key="g", key_type=7)
    assert body["error_code"] == ErrorCode.INVALID_REQUEST
