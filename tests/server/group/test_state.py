"""The group state table: every legal transition works, every other raises."""

from __future__ import annotations

import importlib.util
import itertools
import re
from pathlib import Path

import pytest

from kafka_net.server.group.group import Group
from kafka_net.server.group.state import (
    VALID_PREVIOUS_STATES, GroupState, IllegalGroupTransition)

S = GroupState
ALL_PAIRS = list(itertools.product(GroupState, GroupState))
LEGAL = [(old, new) for old, new in ALL_PAIRS if old in VALID_PREVIOUS_STATES[new]]
ILLEGAL = [(old, new) for old, new in ALL_PAIRS if old not in VALID_PREVIOUS_STATES[new]]


def group_in(state: GroupState) -> Group:
    group = Group("g")
    group.state = state   # set directly: the test places the group, then moves it
    return group


def test_the_table_is_kafkas_valid_previous_states():
    assert VALID_PREVIOUS_STATES == {
        S.PREPARING_REBALANCE: {S.EMPTY, S.STABLE, S.COMPLETING_REBALANCE},
        S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
        S.STABLE: {S.COMPLETING_REBALANCE},
        S.EMPTY: {S.PREPARING_REBALANCE},
        S.DEAD: set(GroupState),
    }


@pytest.mark.parametrize("old,new", LEGAL, ids=lambda s: s.value)
def test_every_legal_transition_moves_the_group(old, new):
    group = group_in(old)
    assert group.transition_to(new) is old
    assert group.state is new


@pytest.mark.parametrize("old,new", ILLEGAL, ids=lambda s: s.value)
def test_every_illegal_transition_raises_and_keeps_the_state(old, new):
    group = group_in(old)
    with pytest.raises(IllegalGroupTransition, match=f"moving to {new.value} state"):
        group.transition_to(new)
    assert group.state is old


def test_the_legal_and_illegal_cases_cover_every_pair():
    assert len(LEGAL) + len(ILLEGAL) == len(GroupState) ** 2
    assert len(LEGAL) == 3 + 1 + 1 + 1 + 5


def test_a_new_group_is_empty_and_states_carry_kafkas_names():
    assert Group("g").state is S.EMPTY
    assert [s.value for s in GroupState] == [
        "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
    assert S.STABLE == "Stable" and str(S.STABLE) == "Stable"


def test_the_error_message_escapes_the_group_id():
    group = Group("g\nFORGED")
    with pytest.raises(IllegalGroupTransition) as raised:
        group.transition_to(S.STABLE)
    assert "\n" not in str(raised.value) and "g\\nFORGED" in str(raised.value)


def test_only_transition_to_assigns_a_groups_state():
    """Every state change goes through the table: no other ``.state =`` in the package."""
    package = Path(__file__).resolve().parents[3] / "kafka_net" / "server" / "group"
    assignments = [f"{path.name}: {line.strip()}" for path in package.glob("*.py")
                   for line in path.read_text().splitlines()
                   if re.search(r"\.state\s*=[^=]", line)]
    assert assignments == ["group.py: self.state = target"]


def test_docs_design_holds_the_current_table():
    """docs/design.md pastes ``python docs/make_tables.py groups``; keep it current."""
    repo = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("make_tables", repo / "docs" / "make_tables.py")
    make_tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_tables)
    assert make_tables.groups_table() in (repo / "docs" / "design.md").read_text(encoding="utf-8")
