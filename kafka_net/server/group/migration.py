"""KIP-848's online migration between the classic and the consumer group protocols.

A rolling restart from ``group.protocol=classic`` to ``consumer`` (or back)
leaves a group, for a while, with members of both protocols.  Kafka serves
that with one consumer group holding both kinds of members
(GroupMetadataManager's ``classicGroup*ToConsumerGroup`` handlers):

* **upgrade**: a ConsumerGroupHeartbeat joining a non-empty classic group
  converts it (``group.consumer.migration.policy`` upgrade or bidirectional,
  every member using the ``consumer`` protocol type, no more members than
  ``group.consumer.max.size``; else GROUP_ID_NOT_FOUND as before).  Each
  classic member keeps its subscription and its last assignment, which
  become its target at the group epoch = the classic generation.  Written
  as a GroupMetadata tombstone and the consumer group's records.
* **classic members inside a consumer group**: JoinGroup, SyncGroup,
  Heartbeat, LeaveGroup and OffsetCommit are served by the consumer group.
  The server-side assignor computes their assignment; a JoinGroup answers
  at once with the member's epoch as the generation (no leader, no member
  list), SyncGroup returns the member's assigned partitions as a
  ConsumerProtocolAssignment, and a Heartbeat answers REBALANCE_IN_PROGRESS
  when the member must rejoin: the group epoch moved past it, it has
  partitions to revoke, or partitions it waits for became free.  The
  cooperative rule holds: a partition reaches its new owner only once its
  old owner's rejoin no longer lists it.  Classic members time out with
  their own session timeout; one that does not SyncGroup after its JoinGroup,
  or does not rejoin when told to, or does not give up revoked partitions, within
  its rebalance timeout, is fenced.
* **downgrade**: when the last consumer-protocol member leaves (or is
  fenced) and the remaining members all use the classic protocol (policy
  downgrade or bidirectional, no more than ``group.max.size``), the group
  becomes a classic group again at generation = the group epoch, its
  members keep their target assignment, and a rebalance follows.  A classic
  static member replacing the last consumer-protocol static member (the same
  ``group.instance.id`` restarted with the classic protocol) converts it too,
  without a rebalance.

The policy governs only the conversions: as in Kafka 4.x, a classic member
may always join a non-empty consumer group whose classic members share one
of its protocols (INCONSISTENT_GROUP_PROTOCOL otherwise).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.consumer_protocol import (
    PROTOCOL_TYPE, MalformedConsumerProtocol, decode_assignment, decode_subscription,
    encode_assignment, subscription_version)
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.assignors import Assignment
from kafka_net.server.group.consumer_group import (
    ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, HeartbeatError, MemberState)
from kafka_net.server.group.group import Group, Member
from kafka_net.server.group.results import (
    JoinRequest, JoinResult, SyncRequest, SyncResult)

log = logging.getLogger(__name__)
_malformed = RateLimitedLog(log)   # a client's bad embedded protocol, per group

POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


def upgrade_enabled(policy: str) -> bool:
    return policy in ("upgrade", "bidirectional")


def downgrade_enabled(policy: str) -> bool:
    return policy in ("downgrade", "bidirectional")


class MemberError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


# -- conversions ---------------------------------------------------------------------------


def to_consumer_group(group: Group, topics) -> ConsumerGroup:
    """The consumer group a non-empty classic group becomes (Kafka's
    ConsumerGroup.fromClassicGroup); raises MalformedConsumerProtocol.  The
    caller answers parked requests and swaps the group's state."""
    cg = ConsumerGroup(group.group_id, group.generation_id, group.generation_id)
    for m in group.members.values():
        subscription = decode_subscription(m.metadata_for(group.protocol_name)
                                           or (m.protocols[0][1] if m.protocols else b""))
        assigned = by_topic_id(decode_assignment(m.assignment), topics)
        cg.members[m.member_id] = ConsumerGroupMember(
            m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id,
            client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            member_epoch=group.generation_id, previous_member_epoch=group.generation_id,
            state=MemberState.STABLE, assigned=assigned,
            classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)))
        cg.target[m.member_id] = {t: set(p) for t, p in assigned.items()}
    return cg


def to_classic_members(cg: ConsumerGroup, leaving: str, topics) -> dict[str, Member]:
    """The classic members a consumer group becomes when ``leaving`` (its last
    consumer-protocol member) goes (Kafka's ClassicGroup.fromConsumerGroup)."""
    members = {}
    for m in cg.members.values():
        if m.member_id == leaving or m.classic is None:
            continue
        protocols = list(m.classic.supported_protocols)
        version = subscription_version(protocols[0][1])
        members[m.member_id] = Member(
            m.member_id, m.instance_id, m.client_id, m.client_host,
            m.classic.session_timeout_ms, m.rebalance_timeout_ms, PROTOCOL_TYPE, protocols,
            # Kafka writes the target assignment; the rebalance that follows gives
            # the members the classic leader's one anyway.
            encode_assignment(by_topic_name(cg.target.get(m.member_id, {}), topics), version),
            is_new=False)
    return members


def by_topic_id(partitions: dict[str, set[int]], topics) -> Assignment:
    """Partitions by topic name -> by topic id (unknown topics dropped)."""
    out: Assignment = {}
    for name, parts in partitions.items():
        meta = topics.topic(name)
        if meta is not None and parts:
            out[meta.topic_id] = {p for p in parts if 0 <= p < meta.num_partitions}
    return {t: p for t, p in out.items() if p}


def by_topic_name(assignment: Assignment, topics) -> dict[str, set[int]]:
    out = {}
    for topic_id, parts in assignment.items():
        meta = topics.topic_by_id(topic_id)
        if meta is not None and parts:
            out[meta.name] = set(parts)
    return out


# -- classic requests served by a consumer group ----------------------------------------------


def _subscription(cg: ConsumerGroup, req: JoinRequest, member_id: str):
    """The joining member's subscription (its first protocol's, as in Kafka)."""
    try:
        return decode_subscription(req.protocols[0][1])
    except MalformedConsumerProtocol as exc:
        _malformed.log(logging.WARNING, ("join", cg.group_id),
                       "[GroupId %s] Malformed embedded consumer protocol from member %s: %s",
                       escape(cg.group_id), escape(member_id), escape(str(exc)))
        raise MemberError(ErrorCode.UNKNOWN_SERVER_ERROR,
                          "Malformed embedded consumer protocol in subscription "
                          "deserialization.") from exc


class ClassicMembers:
    """The classic protocol's requests to a consumer group, a part the
    ConsumerGroupCoordinator holds.  Every method runs under the group's lock."""

    def __init__(self, consumer, topics, config, conversions) -> None:
        """``consumer``: the ConsumerGroupCoordinator (its ``assign_and_reconcile``,
        ``fence`` and ``arm_timers`` serve classic members too); ``topics``: the
        MetadataCache; ``config``: its ConsumerGroupConfig; ``conversions``: the
        GroupCoordinator (``convert_to_consumer_group``, ``convert_to_classic_group``)."""
        self._consumer = consumer
        self._topics = topics
        self.config = config
        self._conversions = conversions

    def classic_join(self, group: Group, req: JoinRequest) -> JoinResult:
        """Kafka's classicGroupJoinToConsumerGroup: answered at once."""
        cg = group.modern
        known = bool(req.member_id)
        member_id = req.member_id or str(uuid.uuid4())
        try:
            self._check_classic_join(cg, req, member_id)
            if not known and req.require_known_member_id and req.group_instance_id is None:
                log.info("[GroupId %s] Dynamic member with unknown member id joins the "
                         "consumer group. Created a new member id %s and requesting the "
                         "member to rejoin with this id.", escape(cg.group_id), member_id)
                return JoinResult.failed(ErrorCode.MEMBER_ID_REQUIRED, member_id)
            subscription = _subscription(cg, req, member_id)
            replaces_consumer = self._replaces_consumer_member(cg, req, known)
            member = self._classic_joining_member(cg, req, member_id, known)
        except MemberError as e:
            return JoinResult.failed(e.error_code, member_id if known else "")
        reconciled = self._reconcile_classic(group, cg, member, req, subscription)
        if replaces_consumer:
            # The last consumer-protocol static member restarted as a classic one.
            self.maybe_downgrade(group, cg, "", rebalance=False)
        return JoinResult(ErrorCode.NONE, reconciled.member_id, reconciled.member_epoch,
                          PROTOCOL_TYPE, reconciled.classic.protocol_name, "", [])

    def _check_classic_join(self, cg: ConsumerGroup, req: JoinRequest, member_id: str) -> None:
        if member_id not in cg.members and len(cg.members) >= self.config.max_size:
            raise MemberError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                              f"The consumer group has reached its maximum capacity of "
                              f"{self.config.max_size} members.")
        if not cg.supports_classic_protocols(req.protocol_type, {n for n, _ in req.protocols}):
            raise MemberError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                              f"Member {member_id}'s protocols are not supported.")

    def _reconcile_classic(self, group: Group, cg: ConsumerGroup, member: ConsumerGroupMember,
                           req: JoinRequest, subscription) -> ConsumerGroupMember:
        """The joining member updated from its JoinGroup, assigned and reconciled
        with the partitions its subscription says it still owns."""
        updated = replace(
            member, client_id=req.client_id, client_host=req.client_host,
            instance_id=req.group_instance_id or member.instance_id,
            rack_id=subscription.rack_id or member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0
                                  else member.rebalance_timeout_ms),
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            classic=ClassicMemberMetadata(req.session_timeout_ms, tuple(req.protocols)))
        bump = (member.member_id not in cg.members
                or updated.subscribed_topic_names != member.subscribed_topic_names)
        owned = by_topic_id(subscription.owned_partitions, self._topics)
        reconciled = self._consumer.assign_and_reconcile(group, cg, updated, owned, bump, None)
        # Kafka's sync timeout: the SyncGroup must follow within the rebalance
        # timeout (a fresh deadline; the SyncGroup clears it unless still revoking).
        reconciled = cg.members[reconciled.member_id] = self._consumer.arm_timers(
            group, replace(reconciled, revocation_deadline=None), True)
        return reconciled

    @staticmethod
    def _replaces_consumer_member(cg: ConsumerGroup, req: JoinRequest, known: bool) -> bool:
        """Whether this join replaces a consumer-protocol static member."""
        if known or req.group_instance_id is None:
            return False
        existing = cg.member_by_instance(req.group_instance_id)
        return existing is not None and existing.classic is None

    def _classic_joining_member(self, cg: ConsumerGroup, req: JoinRequest, member_id: str,
                                known: bool) -> ConsumerGroupMember:
        if req.group_instance_id is None:
            member = cg.members.get(member_id)
            if member is None:
                log.info("[GroupId %s] Member %s joins the consumer group using the classic "
                         "protocol.", escape(cg.group_id), escape(member_id))
                return ConsumerGroupMember(member_id)
            if member.classic is None:
                raise MemberError(ErrorCode.UNKNOWN_MEMBER_ID,
                                  f"Member {member_id} does not use the classic protocol.")
            return member
        existing = cg.member_by_instance(req.group_instance_id)
        if not known:
            if existing is None:
                return ConsumerGroupMember(member_id, instance_id=req.group_instance_id)
            # The restarted instance takes the old member's place and target.
            return cg.replace_static_member(existing, member_id)
        if existing is None:
            raise MemberError(ErrorCode.UNKNOWN_MEMBER_ID,
                              f"Instance id {req.group_instance_id} is unknown.")
        if existing.member_id != member_id:
            raise MemberError(ErrorCode.FENCED_INSTANCE_ID,
                              f"Static member {member_id} with instance id "
                              f"{req.group_instance_id} was fenced by member "
                              f"{existing.member_id}.")
        if existing.classic is None:
            raise MemberError(ErrorCode.UNKNOWN_MEMBER_ID,
                              f"Member {member_id} does not use the classic protocol.")
        return existing

    def _classic_member(self, cg: ConsumerGroup, member_id: str,
                        instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is None:
            member = cg.members.get(member_id)
            if member is None:
                raise MemberError(ErrorCode.UNKNOWN_MEMBER_ID,
                                  f"Member {member_id} is not a member of group "
                                  f"{cg.group_id}.")
        else:
            member = cg.member_by_instance(instance_id)
            if member is None:
                raise MemberError(ErrorCode.UNKNOWN_MEMBER_ID,
                                  f"Member with instance id {instance_id} is not a member "
                                  f"of group {cg.group_id}.")
            if member_id and member.member_id != member_id:
                raise MemberError(ErrorCode.FENCED_INSTANCE_ID,
                                  f"Static member {member_id} with instance id "
                                  f"{instance_id} was fenced.")
        if member.classic is None:
            raise MemberError(ErrorCode.UNKNOWN_MEMBER_ID,
                              f"Member {member.member_id} does not use the classic protocol.")
        return member

    def classic_sync(self, group: Group, req: SyncRequest) -> SyncResult:
        cg = group.modern
        try:
            member = self._classic_member(cg, req.member_id, req.group_instance_id)
            if req.generation_id != member.member_epoch:
                return SyncResult.failed(ErrorCode.ILLEGAL_GENERATION)
            if (req.protocol_type not in (None, PROTOCOL_TYPE)
                    or req.protocol_name not in (None, member.classic.protocol_name)):
                return SyncResult.failed(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        except MemberError as e:
            return SyncResult.failed(e.error_code)
        unrevoked = member.state == MemberState.UNREVOKED_PARTITIONS
        rejoin = cg.group_epoch > member.member_epoch and not unrevoked
        cg.members[member.member_id] = self._consumer.arm_timers(group, member, rejoin or unrevoked)
        if rejoin:
            return SyncResult.failed(ErrorCode.REBALANCE_IN_PROGRESS)
        version = subscription_version(member.classic.supported_protocols[0][1])
        return SyncResult(ErrorCode.NONE, req.protocol_type, req.protocol_name,
                          encode_assignment(by_topic_name(member.assigned, self._topics),
                                            version))

    def classic_heartbeat(self, group: Group, member_id: str, generation_id: int,
                          instance_id: str | None) -> int:
        cg = group.modern
        try:
            member = self._classic_member(cg, member_id, instance_id)
        except MemberError as e:
            return e.error_code
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        rejoin = (member.member_epoch < cg.group_epoch
                  or member.state == MemberState.UNREVOKED_PARTITIONS
                  or (member.state == MemberState.UNRELEASED_PARTITIONS
                      and not cg.waiting_on_unreleased_partition(member)))
        # A member told to rejoin must within its rebalance timeout (Kafka's join
        # timeout): arm_member_timers' revocation deadline, kept until it rejoins.
        cg.members[member.member_id] = self._consumer.arm_timers(group, member, rejoin)
        return ErrorCode.REBALANCE_IN_PROGRESS if rejoin else ErrorCode.NONE

    def classic_leave(self, group: Group, member_id: str, instance_id: str | None) -> int:
        cg = group.modern
        try:
            member = self._classic_member(cg, member_id, instance_id)
        except MemberError as e:
            return e.error_code
        log.info("[GroupId %s] Member %s has left group through explicit `LeaveGroup` "
                 "request.", escape(cg.group_id), escape(member.member_id))
        self._consumer.fence(group, cg, member, downgrade=False)
        return ErrorCode.NONE

    # -- the conversions, driven by the coordinator ----------------------------------------

    def maybe_upgrade(self, group: Group) -> None:
        """Convert a non-empty classic group a ConsumerGroupHeartbeat joins, or raise
        the HeartbeatError Kafka answers (under the group's lock)."""
        not_consumer = HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                      f"Group {group.group_id} is not a consumer group.")
        policy = self.config.migration_policy
        if not upgrade_enabled(policy):
            log.info("Cannot upgrade classic group %s to consumer group because the online "
                     "upgrade is disabled.", escape(group.group_id))
            raise not_consumer
        if group.protocol_type != PROTOCOL_TYPE:
            log.info("Cannot upgrade classic group %s to consumer group because the group "
                     "does not use the consumer embedded protocol.", escape(group.group_id))
            raise not_consumer
        if len(group.members) > self.config.max_size:
            log.info("Cannot upgrade classic group %s to consumer group because the group "
                     "size exceeds the consumer group maximum size.", escape(group.group_id))
            raise not_consumer
        try:
            cg = to_consumer_group(group, self._topics)
        except MalformedConsumerProtocol as exc:
            log.warning("Cannot upgrade the classic group %s to consumer group because the "
                        "embedded consumer protocol is malformed: %s", escape(group.group_id),
                        escape(str(exc)))
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade the classic group {group.group_id} to consumer group because "
                "the embedded consumer protocol is malformed.") from exc
        self._conversions.convert_to_consumer_group(group, cg)
        for member in list(cg.members.values()):
            cg.members[member.member_id] = self._consumer.arm_timers(group, member, False)
        log.info("[GroupId %s] Converted the classic group to a consumer group with %d "
                 "classic member(s) at epoch %d.", escape(group.group_id), len(cg.members),
                 cg.group_epoch)

    def maybe_downgrade(self, group: Group, cg: ConsumerGroup, leaving: str,
                        rebalance: bool = True) -> bool:
        """Convert back to a classic group if ``leaving`` was the last
        consumer-protocol member (Kafka's validateOnlineDowngradeWithFencedMember),
        or (``leaving`` "", no rebalance) if a classic static member just replaced
        it (validateOnlineDowngradeWithReplacedMemberId); True if it did."""
        if not cg.all_classic_except(leaving) or (leaving and len(cg.members) <= 1):
            return False
        if not downgrade_enabled(self.config.migration_policy):
            log.info("Cannot downgrade consumer group %s to classic group because the "
                     "online downgrade is disabled.", escape(cg.group_id))
            return False
        if len(cg.members) - (1 if leaving else 0) > self.config.classic_max_size:
            log.info("Cannot downgrade consumer group %s to classic group because its group "
                     "size is greater than classic group max size.", escape(cg.group_id))
            return False
        try:
            members = to_classic_members(cg, leaving, self._topics)
        except MalformedConsumerProtocol as exc:
            log.warning("Cannot downgrade the consumer group %s: %s", escape(cg.group_id),
                        escape(str(exc)))
            return False
        self._conversions.convert_to_classic_group(group, members, cg.group_epoch, rebalance)
        return True

