"""JoinGroup and SyncGroup: the rebalance, and SyncGroup errors."""

from __future__ import annotations

import pytest

from kafka_net.protocol import encode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers import DEFERRED
from tests.server.conftest import FakeCtx, request_body
from tests.server.group.support import (
    COMPLETING, EMPTY, PREPARING, STABLE, hb_req, join, join_req, new_member_id, stable_group,
    sync_req)


# -- JoinGroup / SyncGroup: the happy path ----------------------------------------------


@pytest.mark.parametrize("version", range(4, 10))
def test_v4_plus_first_join_gets_member_id_required(coord, version):
    ctx, result = join(coord, version, client_id="my-client")
    assert result["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert result["member_id"].startswith("my-client-")
    assert result["generation_id"] == -1
    group = coord.group("g")
    assert group.state == EMPTY and result["member_id"] in group.pending_members
    assert not group.members
    encode_response(ApiKey.JOIN_GROUP, version, 1, result)


def test_full_rebalance_with_two_members(coord):
    a = new_member_id(coord, group="g")
    b = new_member_id(coord, group="g")
    assert a != b
    actx, result = join(coord, group="g", member_id=a)
    assert result is DEFERRED and not actx.answers
    group = coord.group("g")
    assert group.state == PREPARING  # waits for the pending member b
    bctx, result = join(coord, group="g", member_id=b)
    assert result is DEFERRED
    a_answer, b_answer = actx.wait(), bctx.wait()
    assert group.state == COMPLETING
    for answer in (a_answer, b_answer):
        assert answer["error_code"] == ErrorCode.NONE
        assert answer["generation_id"] == 1
        assert answer["leader"] == a
        assert answer["protocol_name"] == "range"
        assert answer["protocol_type"] == "consumer"
    assert a_answer["member_id"] == a and b_answer["member_id"] == b
    assert [(m["member_id"], m["metadata"]) for m in a_answer["members"]] == \
        [(a, b"range-meta"), (b, b"range-meta")]
    assert b_answer["members"] == []  # only the leader gets the member list

    # The follower's SyncGroup waits for the leader's assignment.
    bsync = FakeCtx(5)
    assert coord.sync_group(bsync, sync_req("g", 1, b)) is DEFERRED
    assert not bsync.answers and group.state == COMPLETING
    lsync = FakeCtx(5)
    assert coord.sync_group(lsync, sync_req("g", 1, a, [(a, b"A"), (b, b"B")])) is DEFERRED
    assert group.state == STABLE
    assert bsync.answer == {"error_code": 0, "protocol_type": "consumer",
                            "protocol_name": "range", "assignment": b"B"}
    assert lsync.answer["assignment"] == b"A"
    # Heartbeats now succeed.
    assert coord.heartbeat(hb_req("g", 1, a)) == ErrorCode.NONE
    assert coord.heartbeat(hb_req("g", 1, b)) == ErrorCode.NONE


def test_sync_in_stable_state_returns_the_assignment_again(coord):
    (a, b), gen = stable_group(coord)
    ctx = FakeCtx(3)
    answer = coord.sync_group(ctx, sync_req("g", gen, b))
    assert answer["error_code"] == ErrorCode.NONE and answer["assignment"] == f"assign-{b}".encode()
    assert not ctx.answers


def test_member_missing_from_the_leaders_assignment_gets_empty_bytes(coord):
    ids = [new_member_id(coord) for _ in range(2)]
    ctxs = [join(coord, member_id=m)[0] for m in ids]
    gen = ctxs[0].wait()["generation_id"]
    ctxs[1].wait()
    follower = FakeCtx(5)
    coord.sync_group(follower, sync_req("g", gen, ids[1]))
    coord.sync_group(FakeCtx(5), sync_req("g", gen, ids[0], [(ids[0], b"only-me")]))
    assert follower.answer["assignment"] == b""


def test_protocol_is_one_every_member_supports(coord):
    a = new_member_id(coord)
    b = new_member_id(coord)
    actx, _ = join(coord, member_id=a, protocols=[{"name": "range", "metadata": b"1"},
                                                  {"name": "sticky", "metadata": b"2"}])
    bctx, _ = join(coord, member_id=b, protocols=[{"name": "sticky", "metadata": b"3"}])
    assert actx.wait()["protocol_name"] == "sticky"
    leader = actx.answer
    assert {m["member_id"]: m["metadata"] for m in leader["members"]} == {a: b"2", b: b"3"}


@pytest.mark.parametrize("version", range(0, 4))
def test_v0_to_v3_join_without_member_id_joins_immediately(coord, version):
    ctx, result = join(coord, version, client_id="old")
    assert result is DEFERRED
    answer = ctx.answer  # answered before join_group returned: the group was empty
    assert answer["error_code"] == ErrorCode.NONE
    assert answer["generation_id"] == 1
    assert answer["member_id"].startswith("old-")
    assert answer["leader"] == answer["member_id"]
    assert coord.group("g").state == COMPLETING
    encode_response(ApiKey.JOIN_GROUP, version, 1, answer)


def test_rejoin_of_known_member_in_completing_returns_the_same_answer(coord):
    ctx, _ = join(coord, 3)
    first = ctx.answer
    again_ctx, again = join(coord, 3, member_id=first["member_id"])
    assert again["generation_id"] == first["generation_id"]
    assert again["member_id"] == first["member_id"]
    assert coord.group("g").state == COMPLETING


def test_rejoin_with_new_protocols_triggers_a_rebalance(coord):
    (a, b), gen = stable_group(coord)
    actx, result = join(coord, member_id=a, protocols=[{"name": "range", "metadata": b"new"}])
    assert result is DEFERRED
    assert coord.group("g").state == PREPARING
    assert coord.heartbeat(hb_req("g", gen, b)) == ErrorCode.REBALANCE_IN_PROGRESS
    bctx, _ = join(coord, member_id=b)
    assert actx.wait()["generation_id"] == gen + 1
    assert bctx.wait()["generation_id"] == gen + 1


def test_follower_rejoin_in_stable_with_same_protocols_is_answered_at_once(coord):
    (a, b), gen = stable_group(coord)
    ctx, answer = join(coord, member_id=b)
    assert answer["generation_id"] == gen and answer["leader"] == a
    assert coord.group("g").state == STABLE


def test_rejoin_from_a_second_connection_answers_the_first(coord):
    """The first request is answered (REBALANCE_IN_PROGRESS) so its connection is
    unmuted; the second one is the one that counts."""
    a = new_member_id(coord)
    b = new_member_id(coord)
    first, _ = join(coord, member_id=a)
    second, _ = join(coord, member_id=a)
    assert first.answer["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    join(coord, member_id=b)
    assert second.wait()["error_code"] == ErrorCode.NONE


def test_leader_sync_before_followers(coord):
    a, b = new_member_id(coord), new_member_id(coord)
    actx, _ = join(coord, member_id=a)
    bctx, _ = join(coord, member_id=b)
    gen = actx.wait()["generation_id"]
    bctx.wait()
    lctx = FakeCtx(5)
    coord.sync_group(lctx, sync_req("g", gen, a, [(a, b"A"), (b, b"B")]))
    assert lctx.answer["assignment"] == b"A"
    assert coord.group("g").state == STABLE
    follower = coord.sync_group(FakeCtx(5), sync_req("g", gen, b))
    assert follower["assignment"] == b"B"  # Stable: answered at once


@pytest.mark.parametrize("version", [3, 5])
def test_new_member_joining_a_stable_group_triggers_a_rebalance(coord, version):
    (a, b), gen = stable_group(coord)
    group = coord.group("g")
    if version >= 4:
        c = new_member_id(coord, version)
        assert group.state == STABLE  # handing out an id changes nothing yet
        cctx, result = join(coord, version, member_id=c)
    else:
        cctx, result = join(coord, version)
    assert result is DEFERRED and group.state == PREPARING
    assert coord.heartbeat(hb_req("g", gen, a)) == ErrorCode.REBALANCE_IN_PROGRESS
    actx, _ = join(coord, member_id=a)
    assert not cctx.answers  # b has not rejoined yet
    bctx, _ = join(coord, member_id=b)
    answers = [ctx.wait() for ctx in (actx, bctx, cctx)]
    assert {x["generation_id"] for x in answers} == {gen + 1}
    assert answers[0]["leader"] == a  # the leader is kept
    assert len(answers[0]["members"]) == 3
    assert answers[2]["members"] == []


def test_many_members_joining_concurrently_land_in_one_generation(coord):
    import threading

    ids = [new_member_id(coord) for _ in range(12)]
    ctxs = [FakeCtx(5) for _ in ids]
    barrier = threading.Barrier(len(ids))

    def rejoin(ctx, member_id):
        barrier.wait()
        assert coord.join_group(ctx, join_req(member_id=member_id)) is DEFERRED

    threads = [threading.Thread(target=rejoin, args=(c, m)) for c, m in zip(ctxs, ids)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    answers = [ctx.wait() for ctx in ctxs]
    assert {a["generation_id"] for a in answers} == {1}
    leaders = {a["leader"] for a in answers}
    assert len(leaders) == 1
    [leader] = [a for a in answers if a["member_id"] in leaders]
    assert sorted(m["member_id"] for m in leader["members"]) == sorted(ids)


# -- SyncGroup errors -------------------------------------------------------------------


def test_sync_errors(coord):
    (a, b), gen = stable_group(coord)
    ctx = FakeCtx(5)
    assert coord.sync_group(ctx, sync_req("nope", gen, a))["error_code"] == \
        ErrorCode.UNKNOWN_MEMBER_ID
    assert coord.sync_group(ctx, sync_req("g", gen, "stranger"))["error_code"] == \
        ErrorCode.UNKNOWN_MEMBER_ID
    assert coord.sync_group(ctx, sync_req("g", gen + 1, a))["error_code"] == \
        ErrorCode.ILLEGAL_GENERATION
    assert coord.sync_group(ctx, sync_req("g", gen, a, protocol_type="connect"))[
        "error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert coord.sync_group(ctx, sync_req("g", gen, a, protocol_name="roundrobin"))[
        "error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ok = coord.sync_group(ctx, sync_req("g", gen, a, protocol_type="consumer",
                                        protocol_name="range"))
    assert ok["error_code"] == ErrorCode.NONE
    # While a rebalance is being prepared: REBALANCE_IN_PROGRESS.
    join(coord, member_id=a, protocols=[{"name": "range", "metadata": b"changed"}])
    assert coord.sync_group(ctx, sync_req("g", gen, b))["error_code"] == \
        ErrorCode.REBALANCE_IN_PROGRESS
    assert not ctx.answers


def test_parked_follower_sync_fails_when_a_rebalance_starts(coord):
    a, b = new_member_id(coord), new_member_id(coord)
    actx, _ = join(coord, member_id=a)
    join(coord, member_id=b)
    gen = actx.wait()["generation_id"]
    bsync = FakeCtx(5)
    coord.sync_group(bsync, sync_req("g", gen, b))
    # The leader leaves before sending its assignment.
    coord.leave_group(request_body(ApiKey.LEAVE_GROUP, 0, group_id="g", member_id=a), 0)
    assert bsync.answer["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    assert coord.group("g").state == PREPARING
