"""The per-connection mute state machine (Kafka's KafkaChannel.ChannelMuteState).

Reference section 1.E (E1-E3) and the throttling cases of SocketServerTest (4.2).
"""

from __future__ import annotations

import itertools

import pytest

from kafka_net.network.mute_state import (
    TRANSITIONS, ChannelMuteEvent as E, ChannelMuteState as S, IllegalMuteTransition,
    MuteStateMachine)

# The table as the reference states it (E2), written out independently of the code.
EXPECTED = {
    (S.MUTED, E.REQUEST_RECEIVED): S.MUTED_AND_RESPONSE_PENDING,
    (S.MUTED_AND_RESPONSE_PENDING, E.RESPONSE_SENT): S.MUTED,
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.RESPONSE_SENT): S.MUTED_AND_THROTTLED,
    (S.MUTED_AND_RESPONSE_PENDING, E.THROTTLE_STARTED): S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING,
    (S.MUTED_AND_THROTTLED, E.THROTTLE_ENDED): S.MUTED,
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.THROTTLE_ENDED): S.MUTED_AND_RESPONSE_PENDING,
}

ALL_PAIRS = list(itertools.product(S, E))
ILLEGAL = [pair for pair in ALL_PAIRS if pair not in EXPECTED]


def machine_in(state: S) -> MuteStateMachine:
    m = MuteStateMachine()
    m.state = state
    return m


def test_five_states_and_four_events():
    assert {s.name for s in S} == {
        "NOT_MUTED", "MUTED", "MUTED_AND_RESPONSE_PENDING", "MUTED_AND_THROTTLED",
        "MUTED_AND_THROTTLED_AND_RESPONSE_PENDING"}
    assert {e.name for e in E} == {
        "REQUEST_RECEIVED", "RESPONSE_SENT", "THROTTLE_STARTED", "THROTTLE_ENDED"}


def test_transition_table_is_kafkas():
    assert TRANSITIONS == EXPECTED


def test_a_new_machine_is_not_muted():
    m = MuteStateMachine()
    assert m.state is S.NOT_MUTED
    assert not m.muted


@pytest.mark.parametrize("state,event", list(EXPECTED), ids=lambda v: v.name)
def test_legal_transition(state, event):
    m = machine_in(state)
    assert m.handle(event) is EXPECTED[(state, event)]
    assert m.state is EXPECTED[(state, event)]
    assert m.muted  # every legal transition stays in a muted state


@pytest.mark.parametrize("state,event", ILLEGAL, ids=lambda v: v.name)
def test_illegal_transition_raises_and_keeps_state(state, event):
    m = machine_in(state)
    with pytest.raises(IllegalMuteTransition) as info:
        m.handle(event)
    assert m.state is state
    assert state.name in str(info.value) and event.name in str(info.value)


def test_illegal_pairs_count():
    # 5 states x 4 events = 20 pairs, 6 legal: the other 14 must all be refused.
    assert len(ALL_PAIRS) == 20 and len(ILLEGAL) == 14


@pytest.mark.parametrize("state", list(S), ids=lambda v: v.name)
def test_mute_only_changes_not_muted(state):
    m = machine_in(state)
    m.mute()
    assert m.state is (S.MUTED if state is S.NOT_MUTED else state)
    assert m.muted


@pytest.mark.parametrize("state", list(S), ids=lambda v: v.name)
def test_maybe_unmute_only_from_muted(state):
    m = machine_in(state)
    unmuted = m.maybe_unmute()
    if state in (S.MUTED, S.NOT_MUTED):
        assert unmuted and m.state is S.NOT_MUTED and not m.muted
    else:
        assert not unmuted and m.state is state and m.muted


def test_request_cycle():
    m = MuteStateMachine()
    for _ in range(3):
        m.mute()
        m.handle(E.REQUEST_RECEIVED)
        assert not m.maybe_unmute()  # response still pending
        m.handle(E.RESPONSE_SENT)
        assert m.maybe_unmute()
        assert m.state is S.NOT_MUTED


def test_request_received_needs_an_explicit_mute_first():
    m = MuteStateMachine()
    with pytest.raises(IllegalMuteTransition):
        m.handle(E.REQUEST_RECEIVED)
    assert m.state is S.NOT_MUTED


# --- SocketServerTest 4.2, on the state machine alone ------------------------------------

def _received_then_throttled() -> MuteStateMachine:
    m = MuteStateMachine()
    m.mute()
    m.handle(E.REQUEST_RECEIVED)
    m.handle(E.THROTTLE_STARTED)
    assert m.state is S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING
    return m


def test_send_response_with_throttled_channel_where_throttling_in_progress():
    m = _received_then_throttled()
    m.handle(E.RESPONSE_SENT)
    assert not m.maybe_unmute()
    assert m.state is S.MUTED_AND_THROTTLED


def test_send_response_with_throttled_channel_where_throttling_already_done():
    m = _received_then_throttled()
    m.handle(E.THROTTLE_ENDED)
    assert not m.maybe_unmute()  # response not written yet
    assert m.state is S.MUTED_AND_RESPONSE_PENDING
    m.handle(E.RESPONSE_SENT)
    assert m.maybe_unmute()
    assert m.state is S.NOT_MUTED


def test_noop_response_with_throttled_channel_where_throttling_in_progress():
    # A NoOp response is handled as RESPONSE_SENT followed by an unmute attempt.
    m = _received_then_throttled()
    m.handle(E.RESPONSE_SENT)
    assert not m.maybe_unmute()
    assert m.state is S.MUTED_AND_THROTTLED


def test_noop_response_with_throttled_channel_where_throttling_already_done():
    m = _received_then_throttled()
    m.handle(E.THROTTLE_ENDED)
    m.handle(E.RESPONSE_SENT)
    assert m.maybe_unmute()
    assert m.state is S.NOT_MUTED


def test_throttle_ends_after_response_sent_unmutes():
    m = _received_then_throttled()
    m.handle(E.RESPONSE_SENT)
    assert not m.maybe_unmute()
    m.handle(E.THROTTLE_ENDED)
    assert m.maybe_unmute()
    assert m.state is S.NOT_MUTED


def test_throttle_cannot_start_twice_or_without_pending_response():
    m = _received_then_throttled()
    with pytest.raises(IllegalMuteTransition):
        m.handle(E.THROTTLE_STARTED)
    m.handle(E.RESPONSE_SENT)
    with pytest.raises(IllegalMuteTransition):
        m.handle(E.THROTTLE_STARTED)
    assert m.state is S.MUTED_AND_THROTTLED


# --- the two per-request moves in one call each: the same as their two steps ------------

def _two_steps(state: S, first, second):
    """(state, muted, result) after first() then second() on a machine in ``state``."""
    m = machine_in(state)
    try:
        first(m)
        result = second(m)
    except IllegalMuteTransition:
        return m.state, m.muted, "illegal"
    return m.state, m.muted, result


@pytest.mark.parametrize("state", list(S), ids=lambda v: v.name)
def test_request_received_is_mute_then_request_received(state):
    expected = _two_steps(state, MuteStateMachine.mute,
                          lambda m: m.handle(E.REQUEST_RECEIVED) and None)
    assert _two_steps(state, lambda m: None, MuteStateMachine.request_received) == expected


@pytest.mark.parametrize("state", list(S), ids=lambda v: v.name)
def test_response_sent_is_response_sent_then_maybe_unmute(state):
    expected = _two_steps(state, lambda m: m.handle(E.RESPONSE_SENT),
                          MuteStateMachine.maybe_unmute)
    assert _two_steps(state, lambda m: None, MuteStateMachine.response_sent) == expected


def test_an_illegal_request_received_keeps_the_state():
    m = machine_in(S.MUTED_AND_RESPONSE_PENDING)
    with pytest.raises(IllegalMuteTransition, match="MUTED_AND_RESPONSE_PENDING"):
        m.request_received()
    assert m.state is S.MUTED_AND_RESPONSE_PENDING and m.muted
