"""The consumer group state machine (Kafka's ``GroupState``, classic protocol).

A group is in one of five states; what moves it is described in
:mod:`kafka_net.server.group.coordinator`.  As in Kafka, the machine is written
as *valid previous states*: a group may enter a state only from the states
listed for it.  Every ``group.state`` change goes through
:meth:`kafka_net.server.group.group.Group.transition_to`, which checks this
table; anything else is a bug and raises without changing the state (Kafka's
``assertValidTransition``).

docs/design.md pastes this table (``python docs/make_tables.py groups``).
"""

from __future__ import annotations

from enum import Enum

from kafka_net.log_safety import escape


class GroupState(str, Enum):
    """The values are Kafka's names, which DescribeGroups and ListGroups send
    (a ``str`` enum, so a state compares equal to its name)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = GroupState

VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    # A member joins an empty group, a member joins/leaves/fails a settled one.
    S.PREPARING_REBALANCE: frozenset({S.EMPTY, S.STABLE, S.COMPLETING_REBALANCE}),
    # The join phase is over: every member rejoined, or the rebalance timed out.
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    # The leader's SyncGroup brought the assignments.
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    # The join phase ended with no member left.
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    # The group was deleted (Kafka allows it from anywhere; kafka-net's
    # DeleteGroups deletes only Empty groups, then forgets them).
    S.DEAD: frozenset(GroupState),
}


class IllegalGroupTransition(RuntimeError):
    """Kafka's ``IllegalStateException("Group ... should be in the ... states before
    moving to ... state")``."""


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        allowed = ", ".join(sorted(s.value for s in VALID_PREVIOUS_STATES[target]))
        raise IllegalGroupTransition(
            f"Group {escape(group_id)} should be in the {allowed} states before moving to "
            f"{target.value} state, not {current.value}")
