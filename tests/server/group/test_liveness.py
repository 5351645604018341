"""Heartbeat, session expiry, rebalance timeout and the initial rebalance delay."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers import DEFERRED
from tests.server.conftest import FakeCtx, wait_until
from tests.server.group.support import (
    COMPLETING, EMPTY, LONG, PREPARING, STABLE, commit_req, hb_req, join, make_coordinator,
    new_member_id, stable_group, sync_req)


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
    assert coord.group("g").state == COMPLETING
    assert coord.heartbeat(hb_req("g", answer["generation_id"], answer["member_id"])) == \
        ErrorCode.NONE


def test_heartbeat_in_empty_group_is_unknown_member(coord):
    coord.commit_offsets(commit_req("simple"), 2)
    assert coord.group("simple").state == EMPTY
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
    group = coord.group("g")
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
    group = coord.group("g")
    # Heartbeat for two session timeouts; the member must survive.
    for _ in range(15):
        assert coord.heartbeat(hb_req("g", gen, a)) == ErrorCode.NONE
        wait_until(lambda: False, timeout=0.04)
    assert a in group.members and group.state == STABLE


def test_last_member_expiring_empties_the_group(coord):
    (a,), gen = stable_group(coord, members=1, session=250)
    group = coord.group("g")
    assert wait_until(lambda: group.state == EMPTY)
    assert not group.members
    assert group.generation_id == gen + 1
    assert coord.heartbeat(hb_req("g", gen, a)) == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_parked_in_join_is_not_expired(coord):
    """A member waiting in JoinGroup is kept alive: the rebalance governs it."""
    a = new_member_id(coord, session=LONG)
    b = new_member_id(coord, session=LONG)
    actx, _ = join(coord, member_id=a, session=40, rebalance=LONG)
    group = coord.group("g")
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
    assert b not in coord.group("g").members
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
    group = coord.group("g")
    assert a not in group.members and group.state == PREPARING
    rejoin, _ = join(coord, member_id=b)
    answer = rejoin.wait()
    assert answer["leader"] == b and answer["generation_id"] == gen + 1


def test_pending_member_that_never_rejoins_expires(coord):
    a = new_member_id(coord, session=LONG)
    b = new_member_id(coord, session=60)
    actx, _ = join(coord, member_id=a)
    group = coord.group("g")
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
