"""Moving a streams group member towards its target (Kafka's streams
CurrentAssignmentBuilder): revoke first, then gain what is released."""

from __future__ import annotations

import pytest

from kafka_net.server.group.streams_coordinator import StreamsError, reconcile
from kafka_net.server.group.streams_group import (
    EMPTY_TASKS, MemberState, StreamsGroupMember, TasksTuple)

NOBODY = (None, set(), set())


def member(epoch=1, state=MemberState.STABLE, assigned=EMPTY_TASKS, pending=EMPTY_TASKS):
    return StreamsGroupMember("m", process_id="p1", member_epoch=epoch, state=state,
                              assigned=assigned, pending_revocation=pending)


def test_a_stable_member_at_the_target_epoch_is_left_alone():
    m = member(epoch=2)
    assert reconcile(m, 2, TasksTuple({"0": {1}}), None, lambda s, p: NOBODY) is m


def test_tasks_taken_away_are_revoked_before_the_epoch_moves():
    m = member(assigned=TasksTuple({"0": {0, 1}}))
    step = reconcile(m, 2, TasksTuple({"0": {0}}), TasksTuple({"0": {0, 1}}),
                     lambda s, p: NOBODY)
    assert (step.state, step.member_epoch) == (MemberState.UNREVOKED_TASKS, 1)
    assert step.assigned.active == {"0": {0}}
    assert step.pending_revocation.active == {"0": {1}}
    still = reconcile(step, 2, TasksTuple({"0": {0}}), TasksTuple({"0": {0, 1}}),
                      lambda s, p: NOBODY)
    assert still is step                     # it still runs task 0_1
    done = reconcile(step, 2, TasksTuple({"0": {0}}), TasksTuple({"0": {0}}),
                     lambda s, p: NOBODY)
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (
        MemberState.STABLE, 2, 1)


def test_an_active_task_another_member_runs_is_unreleased():
    owners = {("0", 0): ("p2", set(), set())}
    step = reconcile(member(), 2, TasksTuple({"0": {0, 1}}), TasksTuple(),
                     lambda s, p: owners.get((s, p), NOBODY))
    assert (step.state, step.member_epoch) == (MemberState.UNRELEASED_TASKS, 2)
    assert step.assigned.active == {"0": {1}}


def test_a_standby_waits_while_its_process_runs_the_active():
    owners = {("0", 0): ("p1", set(), set())}     # another member of process p1
    step = reconcile(member(), 2, TasksTuple({}, {"0": {0}}), TasksTuple(),
                     lambda s, p: owners.get((s, p), NOBODY))
    assert step.state == MemberState.UNRELEASED_TASKS and not step.assigned.standby
    other = {("0", 0): ("p2", set(), set())}      # another process: fine
    step = reconcile(member(), 2, TasksTuple({}, {"0": {0}}), TasksTuple(),
                     lambda s, p: other.get((s, p), NOBODY))
    assert step.state == MemberState.STABLE and step.assigned.standby == {"0": {0}}


def test_an_unknown_state_fences_a_member_that_owns_tasks():
    m = member(state=MemberState.UNKNOWN)
    with pytest.raises(StreamsError):
        reconcile(m, 2, TasksTuple(), TasksTuple({"0": {0}}), lambda s, p: NOBODY)
    fresh = reconcile(m, 2, TasksTuple({"0": {0}}), TasksTuple(), lambda s, p: NOBODY)
    assert (fresh.state, fresh.member_epoch) == (MemberState.STABLE, 2)
