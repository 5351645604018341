"""What the GroupCoordinator takes and gives: domain values, no wire shapes.

Handlers (kafka_net/server/handlers/) decode a request into these, call the
coordinator, and turn its results into the response body at their version.
An error is an :class:`~kafka_net.protocol.error_codes.ErrorCode` in the
result; what an error looks like on the wire is the handler's business.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_net.protocol.error_codes import ErrorCode


@dataclass(frozen=True)
class JoinRequest:
    """A JoinGroup, decoded."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]     # (name, metadata), in preference order
    client_id: str
    client_host: str
    require_known_member_id: bool          # JoinGroup v4+ (KIP-394)
    supports_skip_assignment: bool = False  # JoinGroup v9+ (KIP-814)


@dataclass(frozen=True)
class MemberIdentity:
    """Who a member is: its id, and its static id (KIP-345) if it gave one."""

    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True)
class JoinedMember(MemberIdentity):
    """A member as the leader's JoinGroup answer lists it, with its protocol metadata."""

    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    """The coordinator's answer to a JoinGroup."""

    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[JoinedMember] = field(default_factory=list)   # the leader's answer only
    # A restarted static leader (v9+) learns it leads but must not assign (KIP-814).
    skip_assignment: bool = False

    @staticmethod
    def failed(error: int, member_id: str) -> "JoinResult":
        return JoinResult(error, member_id)


@dataclass(frozen=True)
class SyncRequest:
    """A SyncGroup, decoded."""

    group_id: str
    generation_id: int
    member_id: str
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]          # member id -> assignment (the leader's)
    group_instance_id: str | None = None   # SyncGroup v3+ (KIP-345)


@dataclass(frozen=True)
class SyncResult:
    """The coordinator's answer to a SyncGroup: the member's assignment."""

    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""

    @staticmethod
    def failed(error: int) -> "SyncResult":
        return SyncResult(error)


@dataclass(frozen=True)
class LeaveResult(MemberIdentity):
    """One member's answer in a LeaveGroup."""

    error: int


@dataclass(frozen=True)
class MemberDescription(MemberIdentity):
    """A member as DescribeGroups shows it."""

    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    """A group as DescribeGroups shows it."""

    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: list[MemberDescription] = field(default_factory=list)
    error: int = ErrorCode.NONE


@dataclass(frozen=True)
class GroupOverview:
    """A group as ListGroups shows it."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset, with its leader epoch, metadata and commit time."""

    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int = -1   # ms; offsets.retention.minutes counts from it


@dataclass(frozen=True)
class PartitionCommit:
    """One partition of an OffsetCommit or TxnOffsetCommit request."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    # OffsetCommit v1 only: the client's commit time (ms), from which
    # offsets.retention.minutes counts; -1 (every other version): the broker's now.
    commit_timestamp: int = -1

    def committed_at(self, now: int) -> int:
        return now if self.commit_timestamp == -1 else self.commit_timestamp
