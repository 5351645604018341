"""The per-connection mute state machine (Kafka's ``KafkaChannel.ChannelMuteState``).

Why it exists: Kafka promises that responses on one connection leave in the
order the requests arrived.  The broker keeps that promise by never having
more than one request of a connection inside the server: after reading a
request the Processor *mutes* the connection (stops reading from it), and it
unmutes only after the response has been written.  Quota throttling (KIP-219)
adds a second reason to stay muted, so the state is the product of "response
pending?" and "throttled?".

Unmuting succeeds only from ``MUTED``: a connection resumes reading when its
response has been sent **and** any throttle has ended, whichever comes last.

The whole machine is the table below; any (state, event) pair not in it is a
bug and raises without changing the state.
"""

from __future__ import annotations

from enum import Enum


class ChannelMuteState(Enum):
    # Members are singletons compared by identity, so identity hashing is exact,
    # and it is done in C: Enum's own __hash__ is Python code, and the transition
    # table is looked up twice per request on the Processor thread.
    __hash__ = object.__hash__

    NOT_MUTED = "NOT_MUTED"
    MUTED = "MUTED"
    MUTED_AND_RESPONSE_PENDING = "MUTED_AND_RESPONSE_PENDING"
    MUTED_AND_THROTTLED = "MUTED_AND_THROTTLED"
    MUTED_AND_THROTTLED_AND_RESPONSE_PENDING = "MUTED_AND_THROTTLED_AND_RESPONSE_PENDING"


class ChannelMuteEvent(Enum):
    __hash__ = object.__hash__   # as ChannelMuteState's

    REQUEST_RECEIVED = "REQUEST_RECEIVED"
    RESPONSE_SENT = "RESPONSE_SENT"
    THROTTLE_STARTED = "THROTTLE_STARTED"
    THROTTLE_ENDED = "THROTTLE_ENDED"


S, E = ChannelMuteState, ChannelMuteEvent

TRANSITIONS: dict[tuple[ChannelMuteState, ChannelMuteEvent], ChannelMuteState] = {
    (S.MUTED, E.REQUEST_RECEIVED): S.MUTED_AND_RESPONSE_PENDING,
    (S.MUTED_AND_RESPONSE_PENDING, E.RESPONSE_SENT): S.MUTED,
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.RESPONSE_SENT): S.MUTED_AND_THROTTLED,
    (S.MUTED_AND_RESPONSE_PENDING, E.THROTTLE_STARTED): S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING,
    (S.MUTED_AND_THROTTLED, E.THROTTLE_ENDED): S.MUTED,
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.THROTTLE_ENDED): S.MUTED_AND_RESPONSE_PENDING,
}


# TRANSITIONS by state, then event: what the per-request moves look up.  Its keys
# are the members themselves, found by identity.  The flat table's keys are
# tuples, and each lookup builds an equal but new tuple: on free-threaded
# CPython 3.13 a thread that does not own a dict pays ~16 µs for a lookup by an
# equal, not identical, key (docs/design.md, "Free threading").
_NEXT: dict[ChannelMuteState, dict[ChannelMuteEvent, ChannelMuteState]] = {
    state: {event: new for (s, event), new in TRANSITIONS.items() if s is state}
    for state in ChannelMuteState}


class IllegalMuteTransition(RuntimeError):
    """Kafka's ``IllegalStateException("Cannot transition from ...")``."""


class MuteStateMachine:
    """Holds one connection's state.  ``mute``/``maybe_unmute`` are the explicit
    (non-event) moves between NOT_MUTED and MUTED.

    Per request the Processor makes two moves, each one call here:
    :meth:`request_received` (``mute`` then REQUEST_RECEIVED) and
    :meth:`response_sent` (RESPONSE_SENT then ``maybe_unmute``); both look the
    event up in the table like :meth:`handle`.  ``muted`` is an attribute kept
    with the state: the Selector reads it per event."""

    __slots__ = ("_state", "muted")

    def __init__(self) -> None:
        self._state = S.NOT_MUTED
        self.muted = False

    @property
    def state(self) -> ChannelMuteState:
        return self._state

    @state.setter
    def state(self, state: ChannelMuteState) -> None:
        self._state = state
        self.muted = state is not S.NOT_MUTED

    def mute(self) -> None:
        # Kafka's KafkaChannel.mute(): only NOT_MUTED changes; muting again is a no-op.
        if self._state is S.NOT_MUTED:
            self._state = S.MUTED
            self.muted = True

    def maybe_unmute(self) -> bool:
        """Unmute if the state is exactly MUTED; return whether the channel is now unmuted."""
        if self._state is S.MUTED:
            self._state = S.NOT_MUTED
            self.muted = False
        return not self.muted

    def handle(self, event: ChannelMuteEvent) -> ChannelMuteState:
        new = _NEXT[self._state].get(event)
        if new is None:
            raise _illegal(self._state, event)
        self.state = new
        return new

    def request_received(self) -> None:
        """``mute()`` then ``handle(REQUEST_RECEIVED)``: a request was read."""
        state = S.MUTED if self._state is S.NOT_MUTED else self._state
        new = _NEXT[state].get(E.REQUEST_RECEIVED)
        if new is None:
            raise _illegal(state, E.REQUEST_RECEIVED)
        self._state = new
        self.muted = True   # no transition leads to NOT_MUTED

    def response_sent(self) -> bool:
        """``handle(RESPONSE_SENT)`` then ``maybe_unmute()``; True if now unmuted."""
        new = _NEXT[self._state].get(E.RESPONSE_SENT)
        if new is None:
            raise _illegal(self._state, E.RESPONSE_SENT)
        if new is S.MUTED:   # maybe_unmute
            self._state = S.NOT_MUTED
            self.muted = False
            return True
        self._state = new
        return False   # still muted: throttled


def _illegal(state: ChannelMuteState, event: ChannelMuteEvent) -> IllegalMuteTransition:
    return IllegalMuteTransition(f"Cannot transition from {state.name} for {event.name}")
