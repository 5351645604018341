"""GroupCoordinator: the classic rebalance protocol, offsets, describe/list.

Requests are plain dicts (the schema's defaults plus the fields a test sets)
and the RequestContext is a :class:`FakeCtx` that records what a parked
request is answered with.  Timer-driven behaviour (session expiry, rebalance
timeout, initial delay) uses timeouts of tens of milliseconds and polls with
a bounded deadline; no test asserts on elapsed time.
"""

from __future__ import annotations

import pytest

from kafka_net.protocol import decode_response, encode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group_coordinator import (
    COMPLETING, EMPTY, PREPARING, STABLE, GroupConfig, GroupCoordinator)
from kafka_net.server.handlers import DEFERRED
from kafka_net.server.handlers import join_group as join_group_handler
from tests.server.conftest import FakeCtx, request_body, wait_until

TOPICS = {"t": 4, "u": 1}
LONG = 60_000
PROTOCOLS = [{"name": "range", "metadata": b"range-meta"},
             {"name": "roundrobin", "metadata": b"rr-meta"}]


def make_coordinator(**config) -> GroupCoordinator:
    config.setdefault("min_session_timeout_ms", 1)
    config.setdefault("initial_rebalance_delay_ms", 0)
    return GroupCoordinator(GroupConfig(**config), TOPICS.get)


@pytest.fixture
def coord():
    c = make_coordinator()
    c.start()
    try:
        yield c
    finally:
        c.shutdown()


@pytest.fixture
def delayed_coord():
    c = make_coordinator(initial_rebalance_delay_ms=400)
    c.start()
    try:
        yield c
    finally:
        c.shutdown()


# -- request builders -------------------------------------------------------------------


def join_req(group="g", member_id="", session=LONG, rebalance=LONG, protocols=None,
             protocol_type="consumer", **kw) -> dict:
    return request_body(ApiKey.JOIN_GROUP, 0, group_id=group, member_id=member_id,
                        session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                        protocol_type=protocol_type,
                        protocols=PROTOCOLS if protocols is None else protocols, **kw)


def sync_req(group, generation, member_id, assignments=(), **kw) -> dict:
    return request_body(ApiKey.SYNC_GROUP, 0, group_id=group, generation_id=generation,
                        member_id=member_id,
                        assignments=[{"member_id": m, "assignment": a} for m, a in assignments],
                        **kw)


def hb_req(group, generation, member_id) -> dict:
    return request_body(ApiKey.HEARTBEAT, 0, group_id=group, generation_id=generation,
                        member_id=member_id)


def commit_req(group, generation=-1, member_id="", offsets=(("t", 0, 10),), metadata=None):
    topics = {}
    for topic, partition, offset in offsets:
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "committed_offset": offset,
             "committed_metadata": metadata, "committed_leader_epoch": 3})
    return request_body(ApiKey.OFFSET_COMMIT, 0, group_id=group,
                        generation_id_or_member_epoch=generation, member_id=member_id,
                        topics=[{"name": n, "partitions": p} for n, p in topics.items()])


def commit_errors(response) -> dict:
    return {(t["name"], p["partition_index"]): p["error_code"]
            for t in response["topics"] for p in t["partitions"]}


# -- flows ------------------------------------------------------------------------------


def join(coord, version=5, **kw):
    """(ctx, immediate result): the result is DEFERRED or an answer dict."""
    ctx = FakeCtx(version, client_id=kw.pop("client_id", "consumer"))
    return ctx, coord.join_group(ctx, join_req(**kw))


def new_member_id(coord, version=5, **kw) -> str:
    """KIP-394 step one: ask for a member id."""
    ctx, result = join(coord, version, **kw)
    assert result["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert result["member_id"] and not ctx.answers
    return result["member_id"]


def stable_group(coord, group="g", members=2, version=5, session=LONG, rebalance=LONG):
    """A Stable group of ``members``: ids (leader first) and the generation."""
    ids = [new_member_id(coord, version, group=group, session=session, rebalance=rebalance)
           for _ in range(members)]
    ctxs = []
    for member_id in ids:
        ctx, result = join(coord, version, group=group, member_id=member_id,
                           session=session, rebalance=rebalance)
        assert result is DEFERRED
        ctxs.append(ctx)
    answers = [ctx.wait() for ctx in ctxs]
    generation = answers[0]["generation_id"]
    leader = answers[0]["leader"]
    assert leader == ids[0]
    syncs = []
    for member_id in ids[1:]:
        sctx = FakeCtx(version)
        assert coord.sync_group(sctx, sync_req(group, generation, member_id)) is DEFERRED
        syncs.append(sctx)
    lctx = FakeCtx(version)
    assert coord.sync_group(lctx, sync_req(
        group, generation, leader, [(m, f"assign-{m}".encode()) for m in ids])) is DEFERRED
    for sctx in [lctx, *syncs]:
        assert sctx.wait()["error_code"] == ErrorCode.NONE
    assert coord._group(group).state == STABLE
    return ids, generation


# -- JoinGroup / SyncGroup: the happy path ----------------------------------------------


@pytest.mark.parametrize("version", range(4, 10))
def test_v4_plus_first_join_gets_member_id_required(coord, version):
    ctx, result = join(coord, version, client_id="my-client")
    assert result["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert result["member_id"].startswith("my-client-")
    assert result["generation_id"] == -1
    group = coord._group("g")
    assert group.state == EMPTY and result["member_id"] in group.pending_members
    assert not group.members
    encode_response(ApiKey.JOIN_GROUP, version, 1, result)


def test_full_rebalance_with_two_members(coord):
    a = new_member_id(coord, group="g")
    b = new_member_id(coord, group="g")
    assert a != b
    actx, result = join(coord, group="g", member_id=a)
    assert result is DEFERRED and not actx.answers
    group = coord._group("g")
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
    assert coord._group("g").state == COMPLETING
    encode_response(ApiKey.JOIN_GROUP, version, 1, answer)


def test_rejoin_of_known_member_in_completing_returns_the_same_answer(coord):
    ctx, _ = join(coord, 3)
    first = ctx.answer
    again_ctx, again = join(coord, 3, member_id=first["member_id"])
    assert again["generation_id"] == first["generation_id"]
    assert again["member_id"] == first["member_id"]
    assert coord._group("g").state == COMPLETING


def test_rejoin_with_new_protocols_triggers_a_rebalance(coord):
    (a, b), gen = stable_group(coord)
    actx, result = join(coord, member_id=a, protocols=[{"name": "range", "metadata": b"new"}])
    assert result is DEFERRED
    assert coord._group("g").state == PREPARING
    assert coord.heartbeat(hb_req("g", gen, b)) == ErrorCode.REBALANCE_IN_PROGRESS
    bctx, _ = join(coord, member_id=b)
    assert actx.wait()["generation_id"] == gen + 1
    assert bctx.wait()["generation_id"] == gen + 1


def test_follower_rejoin_in_stable_with_same_protocols_is_answered_at_once(coord):
    (a, b), gen = stable_group(coord)
    ctx, answer = join(coord, member_id=b)
    assert answer["generation_id"] == gen and answer["leader"] == a
    assert coord._group("g").state == STABLE


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
    assert coord._group("g").state == STABLE
    follower = coord.sync_group(FakeCtx(5), sync_req("g", gen, b))
    assert follower["assignment"] == b"B"  # Stable: answered at once


@pytest.mark.parametrize("version", [3, 5])
def test_new_member_joining_a_stable_group_triggers_a_rebalance(coord, version):
    (a, b), gen = stable_group(coord)
    group = coord._group("g")
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
    assert coord._group("g").state == PREPARING


# -- Heartbeat --------------------------------------------------------------------------


def test_heartbeat_errors(coord):
    assert coord.heartbeat(hb_req("unknown", 0, "m")) == ErrorCode.UNKNOWN_MEMBER_ID
    (a, b), gen = stable_group(coord)
    assert coord.heartbeat(hb_req("g", gen, "stranger")) == ErrorCode.UNKNOWN_MEMBER_ID
    assert coord.heartbeat(hb_req("g", gen - 1, a)) == ErrorCode.ILLEGAL_GENERATION
    assert coord.heartbeat(hb_req("g", gen + 1, a)) == ErrorCode.ILLEGAL_GENERATION
    assert coord.heartbeat(hb_req("g", gen, a)) == ErrorCode.NONE
    join(coord, member_id=a, protocols=[{"name": "range", "metadata": b"x"}])
    assert coord.heartbeat(hb_req("g", gen, b)) == ErrorCode.REBALANCE_IN_PROGRESS


def test_heartbeat_in_completing_rebalance_is_ok(coord):
    ctx, _ = join(coord, 3)
    answer = ctx.answer
    assert coord._group("g").state == COMPLETING
    assert coord.heartbeat(hb_req("g", answer["generation_id"], answer["member_id"])) == \
        ErrorCode.NONE


def test_heartbeat_in_empty_group_is_unknown_member(coord):
    coord.commit_offsets(commit_req("simple"), 2)
    assert coord._group("simple").state == EMPTY
    assert coord.heartbeat(hb_req("simple", -1, "")) == ErrorCode.UNKNOWN_MEMBER_ID


# -- expiry and timeouts ----------------------------------------------------------------


def test_member_that_stops_heartbeating_is_expired_and_the_group_rebalances(coord):
    a = new_member_id(coord, session=LONG)
    b = new_member_id(coord, session=300)
    actx, _ = join(coord, member_id=a, session=LONG)
    bctx, _ = join(coord, member_id=b, session=300)
    gen = actx.wait()["generation_id"]
    bctx.wait()
    bsync = FakeCtx(5)
    coord.sync_group(bsync, sync_req("g", gen, b))
    coord.sync_group(FakeCtx(5), sync_req("g", gen, a, [(a, b"A"), (b, b"B")]))
    group = coord._group("g")
    assert group.state == STABLE
    # b never heartbeats again: it is removed, and a must rejoin.
    assert wait_until(lambda: b not in group.members)
    assert group.state == PREPARING
    assert coord.heartbeat(hb_req("g", gen, a)) == ErrorCode.REBALANCE_IN_PROGRESS
    assert coord.heartbeat(hb_req("g", gen, b)) == ErrorCode.UNKNOWN_MEMBER_ID
    rejoin, _ = join(coord, member_id=a, session=LONG)
    answer = rejoin.wait()
    assert answer["generation_id"] == gen + 1
    assert [m["member_id"] for m in answer["members"]] == [a]


def test_heartbeats_keep_a_member_alive(coord):
    (a,), gen = stable_group(coord, members=1, session=300)
    group = coord._group("g")
    # Heartbeat for two session timeouts; the member must survive.
    for _ in range(15):
        assert coord.heartbeat(hb_req("g", gen, a)) == ErrorCode.NONE
        wait_until(lambda: False, timeout=0.04)
    assert a in group.members and group.state == STABLE


def test_last_member_expiring_empties_the_group(coord):
    (a,), gen = stable_group(coord, members=1, session=250)
    group = coord._group("g")
    assert wait_until(lambda: group.state == EMPTY)
    assert not group.members
    assert group.generation_id == gen + 1
    assert coord.heartbeat(hb_req("g", gen, a)) == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_parked_in_join_is_not_expired(coord):
    """A member waiting in JoinGroup is kept alive: the rebalance governs it."""
    a = new_member_id(coord, session=LONG)
    b = new_member_id(coord, session=LONG)
    actx, _ = join(coord, member_id=a, session=40, rebalance=LONG)
    group = coord._group("g")
    # Several of a's session timeouts go by while it waits for b.
    wait_until(lambda: False, timeout=0.2)
    assert a in group.members and not actx.answers
    join(coord, member_id=b)
    assert actx.wait()["error_code"] == ErrorCode.NONE


def test_rebalance_timeout_removes_members_that_did_not_rejoin(coord):
    (a, b), gen = stable_group(coord, session=LONG, rebalance=300)
    actx, result = join(coord, member_id=a, rebalance=300,
                        protocols=[{"name": "range", "metadata": b"v2"}])
    assert result is DEFERRED
    answer = actx.wait()  # b never rejoins: the rebalance timeout completes the join
    assert answer["generation_id"] == gen + 1
    assert answer["leader"] == a
    assert [m["member_id"] for m in answer["members"]] == [a]
    assert b not in coord._group("g").members
    assert coord.heartbeat(hb_req("g", gen, b)) == ErrorCode.UNKNOWN_MEMBER_ID


def test_new_leader_is_chosen_when_the_leader_is_removed(coord):
    (a, b), gen = stable_group(coord, rebalance=300)
    bctx, result = join(coord, member_id=b, rebalance=300,
                        protocols=[{"name": "range", "metadata": b"changed"}])
    assert result is DEFERRED  # new metadata: a rebalance that the old leader misses
    answer = bctx.wait()
    assert answer["leader"] == b and answer["generation_id"] == gen + 1


def test_leader_that_never_syncs_expires_and_parked_followers_are_told_to_rejoin(coord):
    a = new_member_id(coord, session=250)
    b = new_member_id(coord, session=LONG)
    actx, _ = join(coord, member_id=a, session=250)
    bctx, _ = join(coord, member_id=b)
    gen = actx.wait()["generation_id"]
    bctx.wait()
    bsync = FakeCtx(5)
    assert coord.sync_group(bsync, sync_req("g", gen, b)) is DEFERRED
    # The leader never sends its SyncGroup nor heartbeats: it expires, and the
    # follower's parked SyncGroup is answered so that it rejoins.
    assert bsync.wait()["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    group = coord._group("g")
    assert a not in group.members and group.state == PREPARING
    rejoin, _ = join(coord, member_id=b)
    answer = rejoin.wait()
    assert answer["leader"] == b and answer["generation_id"] == gen + 1


def test_pending_member_that_never_rejoins_expires(coord):
    a = new_member_id(coord, session=LONG)
    b = new_member_id(coord, session=60)
    actx, _ = join(coord, member_id=a)
    group = coord._group("g")
    # The join waits for b until b's pending membership expires.
    answer = actx.wait()
    assert answer["error_code"] == ErrorCode.NONE
    assert [m["member_id"] for m in answer["members"]] == [a]
    assert b not in group.pending_members
    _, late = join(coord, member_id=b)
    assert late["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_initial_rebalance_delay_gathers_members_into_one_generation(delayed_coord):
    actx, r1 = join(delayed_coord, 3)
    bctx, r2 = join(delayed_coord, 3)
    assert r1 is DEFERRED and r2 is DEFERRED
    assert not actx.answers and not bctx.answers  # the delay holds the first rebalance
    a, b = actx.wait(), bctx.wait()
    assert a["generation_id"] == b["generation_id"] == 1
    assert a["leader"] == b["leader"] == a["member_id"]
    assert len(a["members"]) == 2


def test_initial_rebalance_delay_is_capped_by_the_rebalance_timeout():
    c = make_coordinator(initial_rebalance_delay_ms=LONG)
    c.start()
    try:
        ctx, _ = join(c, 3, rebalance=30)
        assert ctx.wait()["generation_id"] == 1
    finally:
        c.shutdown()


def test_initial_delay_applies_only_to_an_empty_group(delayed_coord):
    a, b = new_member_id(delayed_coord), new_member_id(delayed_coord)
    actx, _ = join(delayed_coord, member_id=a, rebalance=LONG)
    bctx, _ = join(delayed_coord, member_id=b)
    gen = actx.wait()["generation_id"]
    bctx.wait()
    # Not empty now: a rejoin completes as soon as everyone is in, no delay timer.
    again_a, _ = join(delayed_coord, member_id=a, protocols=[{"name": "range", "metadata": b"2"}])
    again_b, _ = join(delayed_coord, member_id=b)
    assert again_a.answers and again_b.answers
    assert again_a.answer["generation_id"] == gen + 1


# -- LeaveGroup -------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leave_group_v0_to_v2(coord, version):
    (a, b), gen = stable_group(coord)
    leave = request_body(ApiKey.LEAVE_GROUP, version, group_id="g", member_id=b)
    response = coord.leave_group(leave, version)
    assert response["error_code"] == ErrorCode.NONE
    group = coord._group("g")
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
    group = coord._group("g")
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
    group = coord._group("g")
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
    assert a not in coord._group("g").pending_members


# -- JoinGroup errors -------------------------------------------------------------------


def test_invalid_session_timeout():
    c = make_coordinator(min_session_timeout_ms=100, max_session_timeout_ms=1000)
    for session in (99, 1001, 0, -1):
        _, result = join(c, 5, session=session)
        assert result["error_code"] == ErrorCode.INVALID_SESSION_TIMEOUT, session
    for session in (100, 1000):
        _, result = join(c, 5, session=session, group=f"g{session}")
        assert result["error_code"] == ErrorCode.MEMBER_ID_REQUIRED


def test_invalid_group_id(coord):
    _, result = join(coord, 5, group="")
    assert result["error_code"] == ErrorCode.INVALID_GROUP_ID
    assert coord.groups() == []


def test_inconsistent_group_protocol(coord):
    _, result = join(coord, 5, protocol_type="")
    assert result["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, result = join(coord, 5, protocols=[])
    assert result["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    stable_group(coord, group="g2", members=1)
    _, result = join(coord, 5, group="g2", protocol_type="connect")
    assert result["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, result = join(coord, 5, group="g2",
                     protocols=[{"name": "cooperative-sticky", "metadata": b""}])
    assert result["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, result = join(coord, 5, group="g2", protocols=[{"name": "roundrobin", "metadata": b""}])
    assert result["error_code"] == ErrorCode.MEMBER_ID_REQUIRED


def test_unknown_member_id_on_join(coord):
    _, result = join(coord, 5, member_id="made-up")
    assert result["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert result["member_id"] == "made-up"


def test_group_max_size():
    c = make_coordinator(max_size=1)
    new_member_id(c)
    _, result = join(c, 5)
    assert result["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED


# -- encoding at every JoinGroup version --------------------------------------------------


def _roundtrip(version, body):
    frame = encode_response(ApiKey.JOIN_GROUP, version, 9, body)
    return decode_response(ApiKey.JOIN_GROUP, version, frame[4:])[1]


@pytest.mark.parametrize("version", range(0, 10))
def test_join_group_answers_encode_at_every_version(version):
    c = make_coordinator()
    c.start()
    try:
        bodies = []
        # Errors in the body.
        bodies.append(join(c, version, session=0)[1])
        bodies.append(join(c, version, group="")[1])
        bodies.append(join(c, version, member_id="nobody")[1])
        bodies.append(join(c, version, protocol_type="")[1])
        bodies.append(join_group_handler.error_response(
            join_req(), version, ErrorCode.UNKNOWN_SERVER_ERROR))
        # The join itself, and a parked request answered NOT_COORDINATOR.
        if version >= 4:
            member_id = new_member_id(c, version)
            ctx, _ = join(c, version, member_id=member_id)
        else:
            ctx, _ = join(c, version)
        bodies.extend(ctx.answers)
        # A join parked while another member's id is pending, then answered
        # NOT_COORDINATOR by a graceful stop.
        a, _ = new_member_id(c, 5, group="p"), new_member_id(c, 5, group="p")
        parked, result = join(c, version, group="p", member_id=a)
        assert result is DEFERRED and not parked.answers
        c.complete_parked()
        bodies.extend(parked.answers)
    finally:
        c.shutdown()
    errors = set()
    for body in bodies:
        decoded = _roundtrip(version, body)
        errors.add(decoded["error_code"])
        if decoded["error_code"] != ErrorCode.NONE:
            assert decoded["generation_id"] == -1
            if version < 7:
                assert decoded["protocol_name"] == ""
            else:
                assert decoded["protocol_name"] is None
        else:
            assert decoded["protocol_name"] == "range"
    assert ErrorCode.NONE in errors
    assert ErrorCode.INVALID_SESSION_TIMEOUT in errors
    assert ErrorCode.NOT_COORDINATOR in errors


# -- complete_parked --------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 5, 7])
def test_complete_parked_answers_a_parked_join_with_not_coordinator(coord, version):
    a, b = new_member_id(coord), new_member_id(coord)
    actx, _ = join(coord, version, member_id=a)  # parked: waits for b
    assert not actx.answers
    coord.complete_parked()
    answer = actx.answer
    assert answer["error_code"] == ErrorCode.NOT_COORDINATOR
    assert answer["member_id"] == a
    _roundtrip(version, answer)
    # Nothing is answered twice.
    coord.complete_parked()
    assert len(actx.answers) == 1


def test_complete_parked_answers_a_parked_follower_sync(coord):
    a, b = new_member_id(coord), new_member_id(coord)
    actx, _ = join(coord, member_id=a)
    bctx, _ = join(coord, member_id=b)
    gen = actx.wait()["generation_id"]
    bsync = FakeCtx(4)
    assert coord.sync_group(bsync, sync_req("g", gen, b)) is DEFERRED
    coord.complete_parked()
    assert bsync.answer["error_code"] == ErrorCode.NOT_COORDINATOR
    encode_response(ApiKey.SYNC_GROUP, 4, 1, bsync.answer)
    encode_response(ApiKey.SYNC_GROUP, 5, 1, bsync.answer)


# -- OffsetCommit / OffsetFetch ---------------------------------------------------------


def test_simple_consumer_commits_to_an_unknown_group(coord):
    response = coord.commit_offsets(commit_req("simple", offsets=[("t", 0, 5), ("t", 3, 9)],
                                               metadata="meta"), 2)
    assert commit_errors(response) == {("t", 0): 0, ("t", 3): 0}
    group = coord._group("simple")
    assert group is not None and group.state == EMPTY
    fetched = coord.fetch_offsets("simple", [{"name": "t", "partition_indexes": [0, 1, 3]}])
    assert fetched == [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 3,
         "metadata": "meta", "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1,
         "metadata": "", "error_code": 0},
        {"partition_index": 3, "committed_offset": 9, "committed_leader_epoch": 3,
         "metadata": "meta", "error_code": 0}]}]


def test_commit_with_generation_to_unknown_group_is_illegal_generation(coord):
    response = coord.commit_offsets(commit_req("ghost", generation=1, member_id="m"), 2)
    assert commit_errors(response) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert coord._group("ghost") is None


def test_commit_rules_for_a_managed_group(coord):
    (a, b), gen = stable_group(coord)
    ok = coord.commit_offsets(commit_req("g", gen, a), 8)
    assert commit_errors(ok) == {("t", 0): ErrorCode.NONE}
    wrong_gen = coord.commit_offsets(commit_req("g", gen + 1, a), 8)
    assert commit_errors(wrong_gen) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    stranger = coord.commit_offsets(commit_req("g", gen, "stranger"), 8)
    assert commit_errors(stranger) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    simple = coord.commit_offsets(commit_req("g", -1, ""), 8)
    assert commit_errors(simple) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    # PreparingRebalance: the current generation may still commit.
    join(coord, member_id=a, protocols=[{"name": "range", "metadata": b"x"}])
    assert coord._group("g").state == PREPARING
    assert commit_errors(coord.commit_offsets(commit_req("g", gen, b), 8)) == \
        {("t", 0): ErrorCode.NONE}


def test_commit_in_completing_rebalance_is_rebalance_in_progress(coord):
    ctx, _ = join(coord, 3)
    answer = ctx.answer
    assert coord._group("g").state == COMPLETING
    response = coord.commit_offsets(
        commit_req("g", answer["generation_id"], answer["member_id"]), 5)
    assert commit_errors(response) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}


def test_commit_unknown_topic_or_partition(coord):
    response = coord.commit_offsets(commit_req(
        "simple", offsets=[("t", 3, 1), ("t", 4, 1), ("t", -1, 1), ("missing", 0, 1),
                           ("u", 0, 1)]), 2)
    assert commit_errors(response) == {
        ("t", 3): ErrorCode.NONE, ("t", 4): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("t", -1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("u", 0): ErrorCode.NONE}


def test_commit_offset_metadata_too_large():
    c = make_coordinator(offset_metadata_max_bytes=10)
    ok = c.commit_offsets(commit_req("s", metadata="x" * 10), 2)
    assert commit_errors(ok) == {("t", 0): ErrorCode.NONE}
    big = c.commit_offsets(commit_req("s", offsets=[("t", 1, 1)], metadata="x" * 11), 2)
    assert commit_errors(big) == {("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    fetched = c.fetch_offsets("s", None)
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in fetched] == \
        [("t", [0])]


def test_commit_overwrites_and_null_metadata(coord):
    coord.commit_offsets(commit_req("s", offsets=[("t", 0, 1)], metadata="a"), 2)
    coord.commit_offsets(commit_req("s", offsets=[("t", 0, 7)], metadata=None), 2)
    [topic] = coord.fetch_offsets("s", [{"name": "t", "partition_indexes": [0]}])
    assert topic["partitions"][0]["committed_offset"] == 7
    assert topic["partitions"][0]["metadata"] is None


def test_fetch_offsets_null_topics_means_all(coord):
    coord.commit_offsets(commit_req("s", offsets=[("u", 0, 4), ("t", 2, 8), ("t", 0, 6)]), 2)
    fetched = coord.fetch_offsets("s", None)
    assert [(t["name"], [(p["partition_index"], p["committed_offset"]) for p in t["partitions"]])
            for t in fetched] == [("t", [(0, 6), (2, 8)]), ("u", [(0, 4)])]


def test_fetch_offsets_of_unknown_group(coord):
    assert coord.fetch_offsets("nobody", None) == []
    [topic] = coord.fetch_offsets("nobody", [{"name": "t", "partition_indexes": [0]}])
    assert topic["partitions"][0]["committed_offset"] == -1
    assert topic["partitions"][0]["error_code"] == ErrorCode.NONE


def test_delete_topic_offsets(coord):
    coord.commit_offsets(commit_req("s", offsets=[("u", 0, 4), ("t", 2, 8)]), 2)
    coord.delete_topic_offsets("t")
    assert [t["name"] for t in coord.fetch_offsets("s", None)] == ["u"]


# -- DescribeGroups ---------------------------------------------------------------------


def test_describe_unknown_group_is_dead(coord):
    d = coord.describe("nobody")
    assert d["error_code"] == ErrorCode.NONE and d["group_state"] == "Dead"
    assert d["members"] == [] and d["protocol_type"] == "" and d["protocol_data"] == ""


def test_describe_stable_group(coord):
    (a, b), gen = stable_group(coord)
    d = coord.describe("g")
    assert d["group_state"] == "Stable" and d["protocol_type"] == "consumer"
    assert d["protocol_data"] == "range"
    assert [(m["member_id"], m["client_id"], m["client_host"], m["member_metadata"],
             m["member_assignment"]) for m in d["members"]] == [
        (a, "consumer", "/10.9.8.7", b"range-meta", f"assign-{a}".encode()),
        (b, "consumer", "/10.9.8.7", b"range-meta", f"assign-{b}".encode())]


def test_describe_group_not_stable_hides_metadata(coord):
    ctx, _ = join(coord, 3)
    d = coord.describe("g")
    assert d["group_state"] == "CompletingRebalance"
    assert d["protocol_data"] == ""
    assert [(m["member_metadata"], m["member_assignment"]) for m in d["members"]] == [(b"", b"")]


def test_groups_lists_every_known_group(coord):
    stable_group(coord, group="g1", members=1)
    coord.commit_offsets(commit_req("simple"), 2)
    assert sorted(g.group_id for g in coord.groups()) == ["g1", "simple"]
