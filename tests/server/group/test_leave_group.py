"""LeaveGroup: one member (v0-v2) or a batch (v3+), parked and pending members."""

from __future__ import annotations

import pytest

from kafka_net.protocol import decode_response, encode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import request_body
from tests.server.group.support import EMPTY, PREPARING, join, new_member_id, stable_group


# -- LeaveGroup -------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leave_group_v0_to_v2(coord, version):
    (a, b), gen = stable_group(coord)
    leave = request_body(ApiKey.LEAVE_GROUP, version, group_id="g", member_id=b)
    response = coord.leave_group(leave, version)
    assert response["error_code"] == ErrorCode.NONE
    group = coord.group("g")
    assert b not in group.members and group.state == PREPARING
    again = coord.leave_group(leave, version)
    assert again["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    unknown_group = request_body(ApiKey.LEAVE_GROUP, version, group_id="zz", member_id=b)
    assert coord.leave_group(unknown_group, version)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    encode_response(ApiKey.LEAVE_GROUP, version, 1, response)


@pytest.mark.parametrize("version", [3, 4, 5])
def test_leave_group_batched_v3_plus(coord, version):
    (a, b, c), gen = stable_group(coord, members=3)
    leave = request_body(ApiKey.LEAVE_GROUP, version, group_id="g", members=[
        {"member_id": a, "group_instance_id": None},
        {"member_id": "stranger", "group_instance_id": "inst-1"},
        {"member_id": c, "group_instance_id": None}])
    response = coord.leave_group(leave, version)
    assert response["error_code"] == ErrorCode.NONE
    assert [(m["member_id"], m["group_instance_id"], m["error_code"])
            for m in response["members"]] == [
        (a, None, ErrorCode.NONE), ("stranger", "inst-1", ErrorCode.UNKNOWN_MEMBER_ID),
        (c, None, ErrorCode.NONE)]
    group = coord.group("g")
    assert list(group.members) == [b]
    _, decoded = decode_response(ApiKey.LEAVE_GROUP, version,
                                 encode_response(ApiKey.LEAVE_GROUP, version, 7, response)[4:])
    assert decoded["members"][1]["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    # b rejoins alone and becomes the leader of the next generation.
    bctx, _ = join(coord, member_id=b)
    answer = bctx.wait()
    assert answer["leader"] == b and answer["generation_id"] == gen + 1


def test_last_member_leaving_empties_the_group(coord):
    (a,), gen = stable_group(coord, members=1)
    coord.leave_group(request_body(ApiKey.LEAVE_GROUP, 0, group_id="g", member_id=a), 0)
    group = coord.group("g")
    assert group.state == EMPTY and not group.members
    assert group.protocol_name is None and group.leader_id is None


def test_leaving_member_parked_in_join_gets_an_answer(coord):
    a, b = new_member_id(coord), new_member_id(coord)
    actx, _ = join(coord, member_id=a)
    coord.leave_group(request_body(ApiKey.LEAVE_GROUP, 0, group_id="g", member_id=a), 0)
    assert actx.answer["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_pending_member_can_leave(coord):
    a = new_member_id(coord)
    response = coord.leave_group(
        request_body(ApiKey.LEAVE_GROUP, 3, group_id="g",
                     members=[{"member_id": a, "group_instance_id": None}]), 3)
    assert response["members"][0]["error_code"] == ErrorCode.NONE
    assert a not in coord.group("g").pending_members
