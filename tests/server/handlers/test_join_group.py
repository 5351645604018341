"""JoinGroup, and a whole group lifecycle through the group API handlers."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import Deferred
from tests.server.handlers.conftest import GROUP_SESSION_MS as LONG


def test_group_lifecycle_through_the_handlers(broker):
    broker.create_topic("t", 2)
    protocols = [{"name": "range", "metadata": b"m"}]
    first = broker.call(ApiKey.JOIN_GROUP, 7, group_id="g", session_timeout_ms=LONG,
                        rebalance_timeout_ms=LONG, protocol_type="consumer",
                        protocols=protocols)
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED and first["protocol_name"] is None
    member = first["member_id"]
    parked = broker.call(ApiKey.JOIN_GROUP, 7, group_id="g", member_id=member,
                         session_timeout_ms=LONG, rebalance_timeout_ms=LONG,
                         protocol_type="consumer", protocols=protocols)
    assert isinstance(parked, Deferred)
    joined = parked.body()
    assert joined["error_code"] == ErrorCode.NONE and joined["leader"] == member
    assert joined["protocol_type"] == "consumer"
    gen = joined["generation_id"]
    synced = broker.call(ApiKey.SYNC_GROUP, 5, group_id="g", generation_id=gen, member_id=member,
                         protocol_type="consumer", protocol_name="range",
                         assignments=[{"member_id": member, "assignment": b"a"}])
    assert synced.body()["assignment"] == b"a"
    assert broker.call(ApiKey.HEARTBEAT, 4, group_id="g", generation_id=gen,
                       member_id=member)["error_code"] == ErrorCode.NONE
    commit = broker.call(ApiKey.OFFSET_COMMIT, 9, group_id="g",
                         generation_id_or_member_epoch=gen, member_id=member,
                         topics=[{"name": "t", "partitions": [
                             {"partition_index": 1, "committed_offset": 42,
                              "committed_metadata": "md"}]}])
    assert commit["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    fetched = broker.call(ApiKey.OFFSET_FETCH, 9, groups=[{"group_id": "g", "topics": None}])
    [group] = fetched["groups"]
    assert group["topics"][0]["partitions"][0]["committed_offset"] == 42
    left = broker.call(ApiKey.LEAVE_GROUP, 5, group_id="g", members=[
        {"member_id": member, "group_instance_id": None, "reason": "bye"}])
    assert left["members"][0]["error_code"] == ErrorCode.NONE
    assert broker.group_coordinator.group("g").state == "Empty"
