"""The server-side assignors (uniform, range) and one member's reconciliation."""

from __future__ import annotations

import uuid

from hypothesis import given, settings, strategies as st

from kafka_net.server.group.assignors import MemberSpec, range_, uniform
from kafka_net.server.group.consumer_group import ConsumerGroupMember, MemberState
from kafka_net.server.group.current_assignment import FencedMemberEpoch, reconcile

TOPICS = [uuid.UUID(int=i + 1) for i in range(3)]

groups = st.fixed_dictionaries({
    "partitions": st.lists(st.integers(1, 12), min_size=3, max_size=3),
    "members": st.dictionaries(
        st.text("abcdef", min_size=1, max_size=4),
        st.sets(st.sampled_from(TOPICS), min_size=0, max_size=3), min_size=1, max_size=6),
})


def specs(members, current=None) -> dict:
    current = current or {}
    return {m: MemberSpec(frozenset(ts), current.get(m, {})) for m, ts in members.items()}


def owners(result) -> dict:
    seen: dict = {}
    for member, assignment in result.items():
        for topic, parts in assignment.items():
            for p in parts:
                assert (topic, p) not in seen, "a partition assigned twice"
                seen[(topic, p)] = member
    return seen


@settings(max_examples=200, deadline=None)
@given(groups, st.sampled_from([uniform, range_]))
def test_every_subscribed_partition_has_exactly_one_subscribed_owner(group, assignor):
    partitions = dict(zip(TOPICS, group["partitions"]))
    result = assignor(specs(group["members"]), partitions)
    seen = owners(result)
    wanted = {(t, p) for t in TOPICS for p in range(partitions[t])
              if any(t in ts for ts in group["members"].values())}
    assert set(seen) == wanted
    assert all(topic in group["members"][m] for (topic, _), m in seen.items())


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.integers(1, 8))
def test_uniform_balances_identical_subscriptions_within_one(count, members):
    names = [f"m{i}" for i in range(members)]
    result = uniform(specs({m: {TOPICS[0]} for m in names}), {TOPICS[0]: count})
    sizes = [len(result[m].get(TOPICS[0], ())) for m in names]
    assert max(sizes) - min(sizes) <= 1


def test_uniform_keeps_partitions_where_they_are_when_it_can():
    before = uniform(specs({"a": {TOPICS[0]}}), {TOPICS[0]: 6})
    after = uniform(specs({"a": {TOPICS[0]}, "b": {TOPICS[0]}}, before), {TOPICS[0]: 6})
    assert after["a"][TOPICS[0]] <= before["a"][TOPICS[0]]
    assert len(after["a"][TOPICS[0]]) == len(after["b"][TOPICS[0]]) == 3


def test_range_gives_consecutive_ranges_the_first_members_one_more():
    result = range_(specs({"b": {TOPICS[0]}, "a": {TOPICS[0]}, "c": {TOPICS[0]}}),
                    {TOPICS[0]: 7})
    assert [sorted(result[m][TOPICS[0]]) for m in "abc"] == [[0, 1, 2], [3, 4], [5, 6]]


# -- reconcile: Kafka's CurrentAssignmentBuilder ----------------------------------------

T = TOPICS[0]


def member(epoch, assigned, state=MemberState.STABLE, pending=None):
    return ConsumerGroupMember("m", member_epoch=epoch, assigned=assigned, state=state,
                               pending_revocation=pending or {})


def free(topic, partition):
    return -1


def test_reconcile_revokes_first_and_keeps_the_epoch():
    m = reconcile(member(1, {T: {0, 1, 2, 3}}), 2, {T: {0, 1}}, {T: {0, 1, 2, 3}}, free)
    assert (m.state, m.member_epoch, m.assigned, m.pending_revocation) == \
        (MemberState.UNREVOKED_PARTITIONS, 1, {T: {0, 1}}, {T: {2, 3}})
    # Still owns a revoked partition: nothing changes.
    assert reconcile(m, 2, {T: {0, 1}}, {T: {0, 1, 3}}, free) is m
    done = reconcile(m, 2, {T: {0, 1}}, {T: {0, 1}}, free)
    assert (done.state, done.member_epoch, done.assigned, done.previous_member_epoch) == \
        (MemberState.STABLE, 2, {T: {0, 1}}, 1)


def test_reconcile_waits_for_partitions_others_still_own():
    owned_by_other = {2}
    m = reconcile(member(1, {T: {0}}), 2, {T: {0, 1, 2}}, {T: {0}},
                  lambda t, p: 1 if p in owned_by_other else -1)
    assert (m.state, m.member_epoch, m.assigned) == \
        (MemberState.UNRELEASED_PARTITIONS, 2, {T: {0, 1}})
    owned_by_other.clear()
    m = reconcile(m, 2, {T: {0, 1, 2}}, {T: {0, 1}}, free)
    assert (m.state, m.assigned) == (MemberState.STABLE, {T: {0, 1, 2}})


def test_reconcile_a_member_in_unknown_state_must_own_nothing():
    m = member(1, {T: {0}}, MemberState.UNKNOWN)
    try:
        reconcile(m, 2, {T: {0}}, {T: {0}}, free)
    except FencedMemberEpoch:
        pass
    else:
        raise AssertionError("not fenced")
    assert reconcile(m, 2, {T: {0}}, {}, free).member_epoch == 2
