"""The data of a consumer-protocol group (KIP-848): Kafka's ``ConsumerGroup`` and
``ConsumerGroupMember``.

Three epochs drive the protocol:

* the **group epoch** goes up whenever the group's membership or
  subscriptions change (a member joins, leaves, is fenced, or subscribes to
  other topics or another regular expression, or a subscribed topic is
  created, deleted or gains partitions, or a regex resolves to other topics);
* the **assignment epoch** is the group epoch the current *target
  assignment* was computed for; the coordinator recomputes the target when
  the group epoch runs ahead of it;
* each **member epoch** is the assignment epoch the member has reconciled to.
  A member moves to a new epoch only once it has given up every partition
  the new target takes away from it, so no partition is ever owned twice.

Plain data; the coordinator (:mod:`kafka_net.server.group.consumer_coordinator`)
changes it under the owning :class:`~kafka_net.server.group.group.Group`'s lock.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kafka_net.server.group.assignors import DEFAULT_ASSIGNOR, Assignment
from kafka_net.server.group.modern_data import ModernGroup, ModernGroupMember
from kafka_net.server.group.topic_regex import ResolvedRegularExpression


class HeartbeatError(Exception):
    """What a ConsumerGroupHeartbeat is answered with instead of an assignment
    (here, not in the coordinator, so that migration.py raises it too without
    importing the coordinator that holds it)."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class MemberState(enum.Enum):
    """Where a member is on its way to its target assignment (Kafka's MemberState)."""

    STABLE = "stable"                                  # owns exactly its target
    UNREVOKED_PARTITIONS = "unrevoked_partitions"      # must give some up first
    UNRELEASED_PARTITIONS = "unreleased_partitions"    # waits for others to give some up
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """A member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat)
    inside a consumer group (KIP-848's online migration): its session timeout and
    its (assignor name, subscription bytes) in preference order (Kafka's
    ConsumerGroupMemberMetadataValue.ClassicMemberMetadata)."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol its JoinGroup answer names: its first (Kafka's choice)."""
        return self.supported_protocols[0][0]


@dataclass
class ConsumerGroupMember(ModernGroupMember):
    """A member of a consumer-protocol (KIP-848) group, as its heartbeats describe it."""

    subscribed_topic_names: tuple[str, ...] = ()
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    session_deadline: float = 0.0
    # Set while the member must revoke partitions: the monotonic deadline after
    # which it is fenced (its rebalance timeout, Kafka's rebalance timer).
    revocation_deadline: float | None = None
    # SubscribedTopicRegex (v1+); None or "" = none.  Its topics come from the
    # group's resolution of it (ConsumerGroup.resolved_regexes).
    subscribed_topic_regex: str | None = None
    # Set for a member using the classic protocol; None for a KIP-848 member.
    classic: ClassicMemberMetadata | None = None


@dataclass
class ConsumerGroup(ModernGroup):
    """A consumer-protocol (KIP-848) group: its members, epochs and target assignment."""

    KIND: ClassVar[str] = "consumer group"
    MEMBER_STABLE: ClassVar[MemberState] = MemberState.STABLE

    assignor_name: str = DEFAULT_ASSIGNOR
    # Each regular expression members subscribe to -> what it resolved to
    # (Kafka's resolvedRegularExpressions; shared by the members using it).
    resolved_regexes: dict[str, ResolvedRegularExpression] = field(default_factory=dict)
    # The subscribed topics' (id, partition count) the target was computed for
    # (Kafka's subscription metadata): a change (a topic created, deleted or
    # grown) bumps the group epoch.  None until the first heartbeat computes it.
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] | None = None
    # The MetadataCache.topics_version it was computed at.
    subscription_metadata_version: int = -1

    def state(self) -> str:
        """Kafka's ConsumerGroupState names: Empty, Assigning, Reconciling, Stable."""
        if not self.members:
            return "Empty"
        return self.progress_state()

    def partition_epoch(self, topic_id: uuid.UUID, partition: int,
                        excluding: str | None = None) -> int:
        """The epoch of the member owning a partition (assigned or still to be
        revoked), -1 if nobody does: Kafka's currentPartitionEpoch.  ``excluding``
        names the member being reconciled: what it owns itself is not in its way."""
        for member in self.members.values():
            if member.member_id != excluding and (
                    partition in member.assigned.get(topic_id, ())
                    or partition in member.pending_revocation.get(topic_id, ())):
                return member.member_epoch
        return -1

    def member_topics(self, member: ConsumerGroupMember) -> set[str]:
        """The topic names a member subscribes to: by name and through its regex."""
        topics = set(member.subscribed_topic_names)
        resolved = self.resolved_regexes.get(member.subscribed_topic_regex or "")
        if resolved is not None:
            topics |= resolved.topics
        return topics

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in self.member_topics(m)}

    def subscribed_regexes(self) -> dict[str, int]:
        """Each regex members subscribe to -> how many do (Kafka's
        subscribedRegularExpressions)."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.subscribed_topic_regex:
                regex = member.subscribed_topic_regex
                counts[regex] = counts.get(regex, 0) + 1
        return counts

    def classic_members(self) -> list[ConsumerGroupMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Whether a classic member with these protocols may join: the consumer
        protocol type, and one protocol every classic member supports (Kafka's
        ConsumerGroup.supportsClassicProtocols)."""
        if protocol_type != "consumer" or not names:
            return False
        classic = self.classic_members()
        return not self.members or any(
            all(name in {n for n, _ in m.classic.supported_protocols} for m in classic)
            for name in names)

    def all_classic_except(self, member_id: str) -> bool:
        """Kafka's allMembersUseClassicProtocolExcept."""
        return all(m.classic is not None for m in self.members.values()
                   if m.member_id != member_id)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a member lacks a target partition another member still owns."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, parts in self.target.get(member.member_id, {}).items():
            assigned = member.assigned.get(topic_id, set())
            if any(p not in assigned and self.partition_epoch(topic_id, p) != -1
                   for p in parts):
                return True
        return False

    def preferred_assignor(self, supported: dict) -> str:
        """The assignor most members asked for (ties: the first in the supported
        order), or the default: Kafka's ConsumerGroup.computePreferredServerAssignor."""
        votes: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor:
                votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
        if not votes:
            return next(iter(supported))
        order = list(supported)
        return max(votes, key=lambda name: (votes[name], -order.index(name)))
