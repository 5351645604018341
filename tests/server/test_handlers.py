"""The group APIs (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, DescribeGroups, ListGroups) through
KafkaApis.build_response, with real encoding.

Each request is encoded as a client would send it, parsed as the Processor
parses it, handled, and its response bytes decoded again, so a body that
does not fit the schema at some version (a null in a non-nullable field, a
missing array) fails here rather than as a closed connection in production.
Every other API has its module in tests/server/handlers/ (test_<api>.py), and
the every-API-at-every-version tables are in tests/server/handlers/test_every_api.py.
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import LONG, Deferred, versions


# -- FindCoordinator ----------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_v0_to_v3(broker, version):
    body = broker.call(ApiKey.FIND_COORDINATOR, version, key="g", key_type=0)
    assert body["error_code"] == ErrorCode.NONE
    assert (body["node_id"], body["host"], body["port"]) == (1, "broker.test", 19092)
    if version >= 1:
        assert body["error_message"] is None
        tx = broker.call(ApiKey.FIND_COORDINATOR, version, key="tx", key_type=1)
        assert tx["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert (tx["node_id"], tx["port"]) == (-1, -1) and tx["error_message"]


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_batched_v4_plus(broker, version):
    body = broker.call(ApiKey.FIND_COORDINATOR, version, key_type=0,
                       coordinator_keys=["g1", "g2", ""])
    assert [(c["key"], c["error_code"], c["node_id"], c["host"], c["port"])
            for c in body["coordinators"]] == [
        ("g1", 0, 1, "broker.test", 19092), ("g2", 0, 1, "broker.test", 19092),
        ("", ErrorCode.INVALID_REQUEST, -1, "", -1)]
    tx = broker.call(ApiKey.FIND_COORDINATOR, version, key_type=1, coordinator_keys=["t1", "t2"])
    assert [(c["key"], c["error_code"]) for c in tx["coordinators"]] == [
        ("t1", ErrorCode.COORDINATOR_NOT_AVAILABLE), ("t2", ErrorCode.COORDINATOR_NOT_AVAILABLE)]


def test_find_coordinator_unknown_key_type(broker):
    body = broker.call(ApiKey.FIND_COORDINATOR, 2, key="g", key_type=7)
    assert body["error_code"] == ErrorCode.INVALID_REQUEST


# -- group APIs through the handlers --------------------------------------------------------


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
    assert broker.group_coordinator._group("g").state == "Empty"


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_FETCH))
def test_offset_fetch(rich, version):
    if version >= 8:
        body = rich.call(ApiKey.OFFSET_FETCH, version, groups=[
            {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]},
            {"group_id": "g", "topics": None},
            {"group_id": "unknown", "topics": [{"name": "t", "partition_indexes": [0]}]}])
        listed, everything, unknown = body["groups"]
        assert all(g["error_code"] == ErrorCode.NONE for g in body["groups"])
        topics = listed["topics"]
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
                for t in everything["topics"]] == [("t", [0])]
        assert unknown["topics"][0]["partitions"][0]["committed_offset"] == -1
    else:
        topics = rich.call(ApiKey.OFFSET_FETCH, version, group_id="g", topics=[
            {"name": "t", "partition_indexes": [0, 1]}])["topics"]
        if version >= 2:
            everything = rich.call(ApiKey.OFFSET_FETCH, version, group_id="g", topics=None)
            assert [t["name"] for t in everything["topics"]] == ["t"]
    assert [(p["partition_index"], p["committed_offset"], p["metadata"])
            for p in topics[0]["partitions"]] == [(0, 2, "m"), (1, -1, "")]


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_COMMIT))
def test_offset_commit_simple_consumer_every_version(broker, version):
    broker.create_topic("t")
    body = broker.call(ApiKey.OFFSET_COMMIT, version, group_id="s",
                       generation_id_or_member_epoch=-1, topics=[{"name": "t", "partitions": [
                           {"partition_index": 0, "committed_offset": 5,
                            "committed_metadata": "x"},
                           {"partition_index": 1, "committed_offset": 5,
                            "committed_metadata": "x"}]}])
    assert [p["error_code"] for p in body["topics"][0]["partitions"]] == [
        ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_GROUPS))
def test_describe_groups(rich, version):
    body = rich.call(ApiKey.DESCRIBE_GROUPS, version, groups=["g", "nope"],
                     include_authorized_operations=True)
    g, nope = body["groups"]
    assert (g["group_id"], g["group_state"], g["protocol_type"], g["protocol_data"]) == \
        ("g", "Stable", "consumer", "range")
    [m] = g["members"]
    assert (m["member_id"], m["client_id"], m["client_host"], m["member_assignment"]) == \
        (rich.group_member, "test-client", "/10.1.2.3", b"x")
    assert (nope["group_state"], nope["error_code"], nope["members"]) == ("Dead", 0, [])
    if version >= 3:
        assert g["authorized_operations"] > 0


@pytest.mark.parametrize("version", versions(ApiKey.LIST_GROUPS))
def test_list_groups(rich, version):
    rich.call(ApiKey.OFFSET_COMMIT, 8, group_id="simple", topics=[
        {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}])
    body = rich.call(ApiKey.LIST_GROUPS, version)
    assert body["error_code"] == ErrorCode.NONE
    groups = {g["group_id"]: g for g in body["groups"]}
    assert set(groups) == {"g", "simple"}
    assert groups["g"]["protocol_type"] == "consumer"
    assert groups["simple"]["protocol_type"] == ""
    if version >= 4:
        assert groups["g"]["group_state"] == "Stable"
        assert groups["simple"]["group_state"] == "Empty"
        stable = rich.call(ApiKey.LIST_GROUPS, version, states_filter=["sTaBlE"])
        assert [g["group_id"] for g in stable["groups"]] == ["g"]
        none = rich.call(ApiKey.LIST_GROUPS, version, states_filter=["Dead"])
        assert none["groups"] == []
    if version >= 5:
        assert groups["g"]["group_type"] == "classic"
        assert len(rich.call(ApiKey.LIST_GROUPS, version, types_filter=["Classic"])["groups"]) == 2
        assert rich.call(ApiKey.LIST_GROUPS, version, types_filter=["consumer"])["groups"] == []


def test_heartbeat_and_sync_errors_through_the_handlers(rich):
    assert rich.call(ApiKey.HEARTBEAT, 0, group_id="g", generation_id=rich.generation + 1,
                     member_id=rich.group_member)["error_code"] == ErrorCode.ILLEGAL_GENERATION
    assert rich.call(ApiKey.HEARTBEAT, 4, group_id="g", generation_id=rich.generation,
                     member_id="x")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    body = rich.call(ApiKey.SYNC_GROUP, 5, group_id="g", generation_id=rich.generation,
                     member_id="x")
    assert body["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("version", versions(ApiKey.LEAVE_GROUP))
def test_leave_group_unknown_member(rich, version):
    body = rich.call(ApiKey.LEAVE_GROUP, version, group_id="g", member_id="x",
                     members=[{"member_id": "x", "group_instance_id": None}])
    if version < 3:
        assert body["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    else:
        assert body["error_code"] == ErrorCode.NONE
        assert body["members"][0]["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
