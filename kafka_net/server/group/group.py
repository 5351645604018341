"""The data of a consumer group: its members and its state (Kafka's ``GroupMetadata``
and ``MemberMetadata``).

Plain data plus the one guarded door to the state, :meth:`Group.transition_to`.
A member holds no request: a parked JoinGroup or SyncGroup is a *callback*
that answers it (``on_join`` / ``on_sync``), given by the handler, so the
coordinator never sees a connection, a request context or an API version.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.results import JoinResult, OffsetAndMetadata, SyncResult
from kafka_net.server.group.state import GroupState, check_transition

if TYPE_CHECKING:
    from kafka_net.server.group.consumer_group import ConsumerGroup
    from kafka_net.server.purgatory import DelayedOperation


@dataclass(frozen=True)
class GroupConfig:
    """The group.* and offsets.* keys a classic group follows."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    offset_metadata_max_bytes: int = 4096
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 3_600_000     # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000


@dataclass(frozen=True)
class StreamsGroupConfig:
    """Kafka's group.streams.* broker configs, with their defaults."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    num_standby_replicas: int = 0
    max_size: int = 2**31 - 1
    initial_rebalance_delay_ms: int = 3000
    # Without a group config repository (tests): group.streams.acceptable.recovery.lag
    # and group.streams.task.offset.interval.ms's defaults; with one, the repository's
    # (the broker's keys, a group's own streams.* values).
    acceptable_recovery_lag: int = 10000
    task_offset_interval_ms: int = 60000


@dataclass
class Member:
    """A member of a classic group, as its JoinGroup describes it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    # A parked JoinGroup / SyncGroup: called once with the answer, then cleared.
    on_join: Callable[["JoinResult"], None] | None = None
    on_sync: Callable[["SyncResult"], None] | None = None
    heartbeat_deadline: float = 0.0
    is_new: bool = True

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")

    def answer_join(self, result: "JoinResult") -> None:
        """Answer the parked JoinGroup, if any (exactly once)."""
        callback, self.on_join = self.on_join, None
        if callback is not None:
            callback(result)

    def answer_sync(self, result: "SyncResult") -> None:
        """Answer the parked SyncGroup, if any (exactly once)."""
        callback, self.on_sync = self.on_sync, None
        if callback is not None:
            callback(result)


@dataclass
class Group:
    """A classic group: its state, generation, leader and members."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, float] = field(default_factory=dict)  # id -> deadline
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    # The topics the members consume, set at each new generation (None: unknown).
    subscribed_topics: frozenset[str] | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    join_op: "DelayedOperation | None" = None
    # A consumer-protocol group (KIP-848) keeps its state here; None for a classic
    # group.  One registry for both kinds, so offsets and admin APIs see either.
    modern: "ConsumerGroup | None" = None
    # A streams group (KIP-1071): its state; None for the other kinds.
    streams: "StreamsGroup | None" = None
    # When the state last changed (ms; None: not since this broker has the group):
    # GroupMetadataValue's currentStateTimestamp, where an empty group's offsets
    # start to expire.
    current_state_timestamp: int | None = None

    @property
    def group_type(self) -> str:
        """ListGroups v5's group type: "consumer" (KIP-848), "streams" (KIP-1071) or
        "classic"."""
        if self.streams is not None:
            return "streams"
        return "classic" if self.modern is None else "consumer"

    @property
    def is_classic(self) -> bool:
        return self.modern is None and self.streams is None

    def state_name(self) -> str:
        if self.streams is not None:
            return self.streams.state()
        return self.state.value if self.modern is None else self.modern.state()

    def transition_to(self, target: GroupState, converted: bool = False) -> GroupState:
        """Move to ``target`` if the table allows it; returns the old state.
        Raises IllegalGroupTransition (state unchanged) otherwise.  ``converted``:
        the group changes kind (KIP-848's online migration, migration.py), so its
        classic state starts afresh, whatever it was."""
        old = self.state
        if not converted:
            check_transition(self.group_id, old, target)
        self.state = target
        self.current_state_timestamp = int(time.time() * 1000)
        return old

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.on_join is not None for m in self.members.values())

    # -- static members (KIP-345) ---------------------------------------------------------

    def static_member_id(self, group_instance_id: str) -> str | None:
        """The member id a group instance id currently maps to."""
        return next((m.member_id for m in self.members.values()
                     if m.group_instance_id == group_instance_id), None)

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int | None:
        """Kafka's ``ClassicGroup.validateMember``: a request naming an instance id must
        come from the member that instance maps to now (else FENCED_INSTANCE_ID: an
        older incarnation of a restarted static member); and the member must exist."""
        if group_instance_id is not None:
            existing = self.static_member_id(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def replace_static_member(self, old_member_id: str, new_member_id: str) -> Member:
        """``ClassicGroup.replaceStaticMember``: the restarted instance takes the old
        member's place (its assignment, timeouts, leadership) under a new id; whatever
        the old id has parked is answered FENCED_INSTANCE_ID."""
        old = self.members.pop(old_member_id)
        old.answer_join(JoinResult.failed(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        old.answer_sync(SyncResult.failed(ErrorCode.FENCED_INSTANCE_ID))
        new = replace(old, member_id=new_member_id, on_join=None, on_sync=None)
        self.members[new_member_id] = new
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        return new
