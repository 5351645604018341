"""Static membership (KIP-345): a restarted static member takes its old place
without a rebalance; its old member id is fenced (FENCED_INSTANCE_ID)."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers import DEFERRED
from tests.server.conftest import FakeCtx, request_body, wait_until
from tests.server.group.support import (
    COMPLETING, LONG, PREPARING, STABLE, commit_errors, commit_req, join, sync_req)


def hb(coord, generation, member_id, instance_id=None) -> int:
    return coord.heartbeat(request_body(ApiKey.HEARTBEAT, 4, group_id="g",
                                        generation_id=generation, member_id=member_id,
                                        group_instance_id=instance_id))


def sync(coord, generation, member_id, instance_id, assignments=(), version=5):
    ctx = FakeCtx(version)
    req = sync_req("g", generation, member_id, assignments, group_instance_id=instance_id)
    return ctx, coord.sync_group(ctx, req)


def static_group(coord, *instances, session=LONG, rebalance=LONG):
    """A Stable group of static members: {instance: member id}, the generation.
    The first instance leads and assigns b"assign-<instance>" to each."""
    first, *others = instances
    ctx, result = join(coord, group_instance_id=first, session=session, rebalance=rebalance)
    assert result is DEFERRED              # no MEMBER_ID_REQUIRED round for static members
    first_id = ctx.wait()["member_id"]     # a group of one: answered at once
    ctxs = {}
    for instance in others:
        ctxs[instance], result = join(coord, group_instance_id=instance, session=session,
                                      rebalance=rebalance)
        assert result is DEFERRED
    # The first member rejoins the rebalance the others started.
    ctxs[first], _ = join(coord, member_id=first_id, group_instance_id=first,
                          session=session, rebalance=rebalance)
    answers = {i: ctxs[i].wait() for i in instances}
    ids = {i: a["member_id"] for i, a in answers.items()}
    assert all(m.startswith(f"{i}-") for i, m in ids.items())
    generation = answers[instances[0]]["generation_id"]
    assert answers[instances[0]]["leader"] == ids[instances[0]]
    followers = [sync(coord, generation, ids[i], i) for i in instances[1:]]
    leader, _ = sync(coord, generation, ids[instances[0]], instances[0],
                     [(m, f"assign-{i}".encode()) for i, m in ids.items()])
    for ctx, _ in [(leader, None), *followers]:
        assert ctx.wait()["error_code"] == ErrorCode.NONE
    assert coord.group("g").state == STABLE
    return ids, generation


def restart(coord, instance, version=5, **kw):
    """A static member restarting: JoinGroup with its instance id, no member id."""
    return join(coord, version, group_instance_id=instance, **kw)


def test_a_restarted_member_gets_its_assignment_back_without_a_rebalance(coord):
    ids, gen = static_group(coord, "a", "b")
    ctx, answer = restart(coord, "b")
    assert answer["error_code"] == ErrorCode.NONE and not ctx.answers   # answered at once
    new_b = answer["member_id"]
    assert new_b != ids["b"] and new_b.startswith("b-")
    assert (answer["generation_id"], answer["leader"], answer["members"]) == (gen, ids["a"], [])
    group = coord.group("g")
    assert group.state == STABLE and group.generation_id == gen
    # The other member is not disturbed; the new one syncs into its old assignment.
    assert hb(coord, gen, ids["a"], "a") == ErrorCode.NONE
    sctx, synced = sync(coord, gen, new_b, "b")
    assert (synced["error_code"], synced["assignment"]) == (ErrorCode.NONE, b"assign-b")
    assert hb(coord, gen, new_b, "b") == ErrorCode.NONE
    described = coord.describe("g")
    assert sorted((m["group_instance_id"], m["member_id"]) for m in described["members"]) == [
        ("a", ids["a"]), ("b", new_b)]


def test_the_old_member_id_is_fenced_everywhere(coord):
    ids, gen = static_group(coord, "a", "b")
    _, answer = restart(coord, "b")
    new_b, old_b = answer["member_id"], ids["b"]
    assert hb(coord, gen, old_b, "b") == ErrorCode.FENCED_INSTANCE_ID
    assert hb(coord, gen, old_b) == ErrorCode.UNKNOWN_MEMBER_ID     # no instance id: unknown
    _, synced = sync(coord, gen, old_b, "b")
    assert synced["error_code"] == ErrorCode.FENCED_INSTANCE_ID
    commit = commit_req("g", gen, old_b)
    commit["group_instance_id"] = "b"
    assert set(commit_errors(coord.commit_offsets(commit, 7)).values()) == {
        ErrorCode.FENCED_INSTANCE_ID}
    leave = request_body(ApiKey.LEAVE_GROUP, 5, group_id="g", members=[
        {"member_id": old_b, "group_instance_id": "b"}])
    assert coord.leave_group(leave, 5)["members"][0]["error_code"] == (
        ErrorCode.FENCED_INSTANCE_ID)
    _, rejoined = join(coord, member_id=old_b, group_instance_id="b")
    assert rejoined["error_code"] == ErrorCode.FENCED_INSTANCE_ID
    # None of that disturbed the group or the new member.
    assert coord.group("g").state == STABLE
    assert hb(coord, gen, new_b, "b") == ErrorCode.NONE
    commit = commit_req("g", gen, new_b)
    commit["group_instance_id"] = "b"
    assert set(commit_errors(coord.commit_offsets(commit, 7)).values()) == {ErrorCode.NONE}


@pytest.mark.parametrize("version", [5, 8])
def test_a_restarted_leader_before_v9_is_not_told_it_leads(coord, version):
    ids, gen = static_group(coord, "a", "b")
    _, answer = restart(coord, "a", version=version)
    new_a = answer["member_id"]
    # The previous leader id: the new member does not think it must assign...
    assert (answer["leader"], answer["members"]) == (ids["a"], [])
    # ...although it does lead now, and syncs into its old assignment.
    assert coord.group("g").leader_id == new_a
    _, synced = sync(coord, gen, new_a, "a")
    assert synced["assignment"] == b"assign-a"


def test_a_restarted_leader_at_v9_is_told_to_skip_the_assignment(coord):
    ids, gen = static_group(coord, "a", "b")
    _, body = restart(coord, "a", version=9)
    assert body["leader"] == body["member_id"] and body["skip_assignment"] is True
    assert sorted(m["group_instance_id"] for m in body["members"]) == ["a", "b"]
    assert coord.group("g").state == STABLE


def test_a_changed_protocol_rebalances(coord):
    ids, gen = static_group(coord, "a", "b")
    ctx, answer = restart(coord, "b", protocols=[{"name": "sticky", "metadata": b"s"}])
    # No protocol both members support: INCONSISTENT_GROUP_PROTOCOL, nothing replaced.
    assert answer["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ctx, answer = restart(coord, "b", protocols=[{"name": "roundrobin", "metadata": b"rr"}])
    assert answer is DEFERRED and coord.group("g").state == PREPARING
    assert hb(coord, gen, ids["a"], "a") == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_restart_mid_rebalance_fences_the_old_parked_join(coord):
    ids, gen = static_group(coord, "a", "b")
    # b (old incarnation) rejoins with new metadata: a rebalance starts and b is parked.
    old_ctx, result = join(coord, member_id=ids["b"], group_instance_id="b",
                           protocols=[{"name": "range", "metadata": b"new"}])
    assert result is DEFERRED and coord.group("g").state == PREPARING
    new_ctx, result = restart(coord, "b")
    assert result is DEFERRED
    assert old_ctx.answer["error_code"] == ErrorCode.FENCED_INSTANCE_ID
    join(coord, member_id=ids["a"], group_instance_id="a")
    assert new_ctx.wait()["generation_id"] == gen + 1
    assert coord.group("g").state == COMPLETING


def test_leave_by_instance_id_alone(coord):
    ids, gen = static_group(coord, "a", "b")
    leave = request_body(ApiKey.LEAVE_GROUP, 5, group_id="g", members=[
        {"member_id": "", "group_instance_id": "b"},
        {"member_id": "", "group_instance_id": "nobody"}])
    answer = coord.leave_group(leave, 5)
    assert [(m["member_id"], m["group_instance_id"], m["error_code"])
            for m in answer["members"]] == [
        ("", "b", ErrorCode.NONE), ("", "nobody", ErrorCode.UNKNOWN_MEMBER_ID)]
    group = coord.group("g")
    assert list(group.members) == [ids["a"]] and group.state == PREPARING


def test_a_static_member_is_removed_by_its_session_timeout(coord):
    ids, gen = static_group(coord, "a", "b", session=300)
    group = coord.group("g")
    # Only a heartbeats: b's session runs out, and that rebalances the group.
    assert wait_until(lambda: hb(coord, gen, ids["a"], "a") == ErrorCode.REBALANCE_IN_PROGRESS,
                      timeout=10)
    assert ids["b"] not in group.members and group.state == PREPARING


def test_a_static_member_that_does_not_rejoin_stays_until_its_session_ends(coord):
    ids, gen = static_group(coord, "a", "b", rebalance=200)
    ctx, result = join(coord, member_id=ids["a"], group_instance_id="a", rebalance=200,
                       protocols=[{"name": "range", "metadata": b"v2"}])
    assert result is DEFERRED
    answer = ctx.wait()      # b never rejoins: the rebalance timeout ends the join phase
    assert answer["generation_id"] == gen + 1 and answer["leader"] == ids["a"]
    # A dynamic member would be gone; the static one is still a member.
    assert sorted(m["group_instance_id"] for m in answer["members"]) == ["a", "b"]
    assert ids["b"] in coord.group("g").members
