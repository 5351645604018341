"""DeleteGroups (42): Empty groups go with their offsets; others get Kafka's errors."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import join_stable, leave, subscription, versions


def delete_groups(broker, *groups, version=2) -> list[tuple[str, int]]:
    body = broker.call(ApiKey.DELETE_GROUPS, version, groups_names=list(groups))
    return [(r["group_id"], r["error_code"]) for r in body["results"]]


def committed(broker, group: str, partition: int = 0) -> int:
    body = broker.call(ApiKey.OFFSET_FETCH, 7, group_id=group, topics=[
        {"name": "t", "partition_indexes": [partition]}])
    return body["topics"][0]["partitions"][0]["committed_offset"]


def commit(broker, group: str, offset: int, member: str = "", generation: int = -1) -> None:
    body = broker.call(ApiKey.OFFSET_COMMIT, 8, group_id=group, member_id=member,
                       generation_id_or_member_epoch=generation, topics=[
                           {"name": "t", "partitions": [
                               {"partition_index": 0, "committed_offset": offset}]}])
    assert body["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


def group_state(broker, group: str) -> str:
    body = broker.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group])
    return body["groups"][0]["group_state"]


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_GROUPS))
def test_an_empty_group_is_deleted_with_its_offsets(group_broker, version):
    commit(group_broker, "simple", 7)            # a group with offsets only (assign())
    assert committed(group_broker, "simple") == 7
    assert delete_groups(group_broker, "simple", "g", "ghost", version=version) == [
        ("simple", ErrorCode.NONE), ("g", ErrorCode.NON_EMPTY_GROUP),
        ("ghost", ErrorCode.GROUP_ID_NOT_FOUND)]
    assert committed(group_broker, "simple") == -1
    assert group_state(group_broker, "simple") == "Dead"
    assert committed(group_broker, "g") == 2     # the non-empty group kept its offsets
    # Deleted is gone: a second delete does not find it.
    assert delete_groups(group_broker, "simple", version=version) == [
        ("simple", ErrorCode.GROUP_ID_NOT_FOUND)]


def test_a_group_whose_members_left_can_be_deleted_and_reused(group_broker):
    leave(group_broker, "g", group_broker.group_member)
    assert group_state(group_broker, "g") == "Empty"
    assert delete_groups(group_broker, "g") == [("g", ErrorCode.NONE)]
    assert committed(group_broker, "g") == -1
    assert [g["group_id"] for g in group_broker.call(ApiKey.LIST_GROUPS, 4)["groups"]] == []
    # The id is free again: a new member starts generation 1 of a new group.
    _, generation = join_stable(group_broker, "g", subscription("t"))
    assert generation == 1 and group_state(group_broker, "g") == "Stable"


def test_every_non_empty_state_is_refused(group_broker):
    # PreparingRebalance: a second member is joining (parked).
    join = dict(group_id="g", session_timeout_ms=60_000, rebalance_timeout_ms=60_000,
                protocol_type="consumer", protocols=[{"name": "range", "metadata": b"m"}])
    second = group_broker.call(ApiKey.JOIN_GROUP, 5, **join)["member_id"]
    parked = group_broker.call(ApiKey.JOIN_GROUP, 5, member_id=second, **join)
    assert group_state(group_broker, "g") == "PreparingRebalance"
    assert delete_groups(group_broker, "g") == [("g", ErrorCode.NON_EMPTY_GROUP)]
    assert not parked.done
    # CompletingRebalance: the first member rejoins, both get generation 2, none synced.
    rejoined = group_broker.call(ApiKey.JOIN_GROUP, 5, member_id=group_broker.group_member,
                                 **join)
    assert rejoined.body()["error_code"] == parked.body()["error_code"] == ErrorCode.NONE
    assert group_state(group_broker, "g") == "CompletingRebalance"
    assert delete_groups(group_broker, "g") == [("g", ErrorCode.NON_EMPTY_GROUP)]


def test_the_empty_group_id_is_not_found_as_in_kafka_4(broker):
    # Kafka 4 answers INVALID_GROUP_ID only for a null id (not expressible here).
    assert delete_groups(broker, "") == [("", ErrorCode.GROUP_ID_NOT_FOUND)]


def test_error_response_names_every_group():
    from kafka_net.server.handlers import delete_groups as handler
    assert handler.error_response({"groups_names": ["a", "b"]}, 2,
                                  ErrorCode.NOT_COORDINATOR)["results"] == [
        {"group_id": "a", "error_code": ErrorCode.NOT_COORDINATOR},
        {"group_id": "b", "error_code": ErrorCode.NOT_COORDINATOR}]
