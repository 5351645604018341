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


class IllegalMuteTransition(RuntimeError):
    """Kafka's ``IllegalStateException("Cannot transition from ...")``."""


class MuteStateMachine:
    """Holds one connection's state.  ``mute``/``maybe_unmute`` are the explicit
    (non-event) moves between NOT_MUTED and MUTED."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = S.NOT_MUTED

    def mute(self) -> None:
        # Kafka's KafkaChannel.mute(): only NOT_MUTED changes; muting again is a no-op.
        if self.state is S.NOT_MUTED:
            self.state = S.MUTED

    def maybe_unmute(self) -> bool:
        """Unmute if the state is exactly MUTED; return whether the channel is now unmuted."""
        if self.state is S.MUTED:
            self.state = S.NOT_MUTED
        return self.state is S.NOT_MUTED

    def handle(self, event: ChannelMuteEvent) -> ChannelMuteState:
        new = TRANSITIONS.get((self.state, event))
        if new is None:
            raise IllegalMuteTransition(
                f"Cannot transition from {self.state.name} for {event.name}")
        self.state = new
        return new

    @property
    def muted(self) -> bool:
        return self.state is not S.NOT_MUTED
