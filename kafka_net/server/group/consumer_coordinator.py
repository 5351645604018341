"""ConsumerGroupHeartbeat and ConsumerGroupDescribe: the consumer group protocol
(KIP-848), as Kafka's GroupMetadataManager runs it for one broker.

One heartbeat does everything, in Kafka's order:

1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR);
2. find the member: ``member_epoch`` 0 joins (a static member whose instance
   id left with epoch -2 is *replaced*: the new member id takes over its
   assignment without a rebalance); otherwise the epoch must be the member's
   (or its previous one, if the member owns no more than it should, since
   the answer with the new epoch may have been lost), else FENCED_MEMBER_EPOCH;
3. record the member's subscription; a change bumps the **group epoch**;
   a regular expression (``SubscribedTopicRegex``, v1) is resolved to
   topics for the whole group (see *Regular expressions* below), and so is
   a change of the subscribed topics themselves (created, deleted, grown);
4. if the group epoch ran ahead of the assignment epoch, the assignor
   computes a new **target assignment** for every member;
5. reconcile this member towards its target
   (:func:`~kafka_net.server.group.current_assignment.reconcile`);
6. answer with its member id, epoch, heartbeat interval and, when it changed
   or the request was a full one, its assignment.

A member that stops heartbeating for ``group.consumer.session.timeout.ms``
is fenced; one that does not give up revoked partitions within its
rebalance timeout is fenced too.  Fencing removes the member and bumps the
group epoch, so the others are reassigned its partitions.

Regular expressions (Kafka's GroupMetadataManager.maybeUpdateRegularExpressions):
a member's regex is compiled when it first appears in the group (RE2 syntax,
:mod:`~kafka_net.server.group.topic_regex`; INVALID_REGULAR_EXPRESSION if it
does not compile), and every regex of the group is resolved against the
topic names, keeping the topics the heartbeating member may DESCRIBE.  The
members with the same regex share its resolution.  The group resolves its
regexes again at a heartbeat when one is not resolved yet, when topics were
created since the last resolution, or when ``group.consumer.regex.refresh
.interval.ms`` passed (ACLs may have changed) - but never twice within 10 s
(Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS), so a burst of new topics
costs one rebalance.  A deleted topic leaves the assignment at once (it is
no longer in the subscription metadata) and the resolution at its next
refresh, as in Kafka.  Kafka resolves on a background executor and applies
the result at a later heartbeat; kafka-net resolves inline (RE2 matches in
linear time; the scan is one pass over the topic names), so the answer to
the heartbeat that brought the regex already carries its assignment.
Resolutions are not written to ``__consumer_offsets`` (Kafka's
ConsumerGroupRegularExpression records): after a restart the first
heartbeat resolves them again.

The group lives in the coordinator's one group registry (a classic
:class:`~kafka_net.server.group.group.Group` whose ``modern`` holds this
protocol's state), so offsets, ListGroups and DeleteGroups see both kinds.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, replace
from typing import Callable

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.assignors import ASSIGNORS, Assignment, MemberSpec
from kafka_net.server.group.consumer_group import (
    ConsumerGroup, ConsumerGroupMember, HeartbeatError, MemberState)
from kafka_net.server.group.current_assignment import FencedMemberEpoch, reconcile
from kafka_net.server.group.group import Group
from kafka_net.server.group.migration import ClassicMembers
from kafka_net.server.group.modern_group import (
    JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, GroupKind, ModernGroups, member_epoch_error,
    static_member_error)
from kafka_net.server.group.registry import GroupRegistry
from kafka_net.server.group.topic_regex import (
    InvalidRegularExpression, ResolvedRegularExpression, compile_regex, resolve)
from kafka_net.server.group_config_repository import group_config_value

log = logging.getLogger(__name__)

# Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: a group's regexes are resolved at
# most once in this time, whatever asks for it.
REGEX_REFRESH_MIN_INTERVAL_S = 10.0


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """The group.consumer.* keys: consumer-protocol (KIP-848) groups."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    assignors: tuple[str, ...] = ("uniform", "range")
    max_size: int = 2**31 - 1
    regex_refresh_interval_ms: int = 600000
    # group.consumer.migration.policy (migration.py) and group.max.size (a
    # downgraded group must fit in a classic group).
    migration_policy: str = "bidirectional"
    classic_max_size: int = 2**31 - 1


@dataclass(frozen=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat, decoded: who the member is and what it subscribes to and
    owns."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    server_assignor: str | None
    owned: Assignment | None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_regex: str | None = None
    # v1+ (KIP-1082): the client makes its member id, so it is never empty.
    api_version: int = 0
    # topic name -> how many regexes matched it; returns the names the member
    # may DESCRIBE (None: no authorizer, all of them).
    authorize_topics: Callable[[dict[str, int]], set[str]] | None = None


@dataclass(frozen=True)
class HeartbeatResult:
    """The coordinator's answer to a ConsumerGroupHeartbeat: an error, or the member's
    epoch and assignment."""

    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


CONSUMER = GroupKind(
    "consumer", lambda group: group.modern, "partitions", HeartbeatError,
    "Group {} not found.", "[GroupId %s] Member %s fenced from the group because %s.")


class ConsumerGroupCoordinator:
    def __init__(self, registry: GroupRegistry, purgatory, topics, config: ConsumerGroupConfig,
                 conversions) -> None:
        """``registry``: the one group registry; ``purgatory``: the coordinator's
        "Rebalance" purgatory (the members' timers); ``topics``: the MetadataCache
        (topic ids and partition counts); ``conversions``: the GroupCoordinator,
        which turns a classic group into a consumer group and back (migration.py)."""
        self._registry = registry
        self._topics = topics
        self.config = config
        self._assignors = {name: ASSIGNORS[name] for name in config.assignors}
        # Per-group overrides (GROUP config resources, KIP-848): a GroupConfigRepository,
        # set by the broker; None = every group gets ``config``'s values.
        self.group_configs = None
        # What consumer and streams groups share (lookup, member sessions, describe).
        self._modern = ModernGroups(registry, purgatory, CONSUMER, self.fence,
                                    registry.store_consumer_group)
        # KIP-848's online migration: classic members inside a consumer group.
        self.classic_members = ClassicMembers(self, topics, config, conversions)

    # -- ConsumerGroupHeartbeat --------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        try:
            self._validate(req)
            if req.subscribed_topic_regex and not self._known_regex(req):
                # Kafka compiles a regex new to the group (one it has is valid).
                # Checked before the group is made or a static member replaced, so
                # a refusal leaves nothing behind.
                compile_regex(req.subscribed_topic_regex)
            group = self._modern_group(req.group_id, create=req.member_epoch == JOIN_EPOCH)
            with group.lock:
                try:
                    result = self._heartbeat(group, group.modern, req)
                finally:   # whatever changed, even on the way to an error, is written
                    self._registry.store_consumer_group(group, req.member_id)
                return result
        except HeartbeatError as e:
            return HeartbeatResult(e.error_code, str(e))
        except FencedMemberEpoch as e:
            return HeartbeatResult(ErrorCode.FENCED_MEMBER_EPOCH, str(e))
        except InvalidRegularExpression as e:
            return HeartbeatResult(e.error_code, str(e))

    def _validate(self, req: HeartbeatRequest) -> None:
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)
        epoch = req.member_epoch
        if (req.api_version >= 1 or epoch > 0 or epoch == LEAVE_EPOCH) and not req.member_id:
            raise invalid("MemberId can't be empty.")
        if not req.group_id:
            raise invalid("GroupId can't be empty.")
        if req.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if req.rack_id == "":
            raise invalid("RackId can't be empty.")
        if epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.owned is None or req.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            # An empty list of names or an empty regex joins subscribed to nothing.
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be "
                              "non-null when (re-)joining.")
        elif epoch == STATIC_LEAVE_EPOCH:
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif epoch < STATIC_LEAVE_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self._assignors:
            raise HeartbeatError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(self._assignors)}.")

    def _known_regex(self, req: HeartbeatRequest) -> bool:
        group = self._registry.group(req.group_id)
        if group is None:
            return False
        with group.lock:
            return (group.modern is not None
                    and req.subscribed_topic_regex in group.modern.subscribed_regexes())

    def _modern_group(self, group_id: str, create: bool) -> Group:
        group = self._modern.find(group_id, create)
        with group.lock:
            if group.modern is None:
                if group.streams is not None or not create:
                    raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                         self._modern.not_this_kind(group_id))
                if group.members:
                    # online migration, or GROUP_ID_NOT_FOUND
                    self.classic_members.maybe_upgrade(group)
                else:
                    # An empty classic group (offsets only) becomes a consumer group.
                    group.modern = ConsumerGroup(group_id)
        return group

    def _heartbeat(self, group: Group, cg: ConsumerGroup, req: HeartbeatRequest
                   ) -> HeartbeatResult:
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, cg, req)
        member = self._member(cg, req)
        updated = self._updated(member, req)
        # A regex resolved later (or again) bumps the epoch through the metadata.
        bump = (member.member_id not in cg.members
                or updated.subscribed_topic_names != member.subscribed_topic_names
                or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        reconciled = self.assign_and_reconcile(group, cg, updated, req.owned, bump,
                                                req.authorize_topics)
        full = req.member_epoch == JOIN_EPOCH or (
            req.rebalance_timeout_ms != -1 and req.subscribed_topic_names is not None
            and req.owned is not None)
        changed = (reconciled.assigned != member.assigned
                   or reconciled.member_id != member.member_id)
        return HeartbeatResult(
            member_id=reconciled.member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=group_config_value(
                self.group_configs, group.group_id, "consumer.heartbeat.interval.ms",
                self.config.heartbeat_interval_ms),
            assignment=reconciled.assigned if full or changed else None)

    def assign_and_reconcile(self, group: Group, cg: ConsumerGroup,
                              updated: ConsumerGroupMember, owned: Assignment | None,
                              bump: bool, authorize_topics) -> ConsumerGroupMember:
        """Steps 3-5 for a member of either protocol: record it, bump the group epoch
        if its subscription (or the topics) changed, compute a new target if the epoch
        ran ahead, and reconcile it towards its target."""
        cg.members[updated.member_id] = updated
        refreshed = self._maybe_refresh_regexes(cg, authorize_topics)
        # A group whose epoch is already ahead (a member was fenced) gets a new target
        # anyway: its metadata is brought up to date without another bump.
        pending = cg.group_epoch > cg.assignment_epoch
        changed = self._subscription_metadata_changed(cg, bump or refreshed or pending)
        bump |= changed and not pending
        if bump:
            cg.group_epoch += 1
            log.info("[GroupId %s] Bumped group epoch to %d.", escape(cg.group_id),
                     cg.group_epoch)
        if cg.group_epoch > cg.assignment_epoch:
            self._update_target_assignment(cg)
        target = cg.target.get(updated.member_id, {})
        reconciled = reconcile(updated, cg.assignment_epoch, target, owned,
                               lambda t, p: cg.partition_epoch(t, p, excluding=updated.member_id))
        reconciled = self.arm_timers(group, reconciled)
        cg.members[reconciled.member_id] = reconciled
        return reconciled

    def _member(self, cg: ConsumerGroup, req: HeartbeatRequest) -> ConsumerGroupMember:
        joining = req.member_epoch == JOIN_EPOCH
        member_id = req.member_id or str(uuid.uuid4())
        if req.instance_id is not None:
            return self._static_member(cg, req, member_id, joining)
        member = cg.members.get(member_id)
        if member is None:
            if not joining:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {cg.group_id}.")
            self._check_size(cg)
            log.info("[GroupId %s] Member %s joins the consumer group.",
                     escape(cg.group_id), escape(member_id))
            return ConsumerGroupMember(member_id)
        if member.classic is not None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is a member of group {cg.group_id} but "
                                 "it does not use the consumer protocol.")
        if not joining:
            _check_epoch(member, req.member_epoch, req.owned)
        return member

    def _static_member(self, cg: ConsumerGroup, req: HeartbeatRequest, member_id: str,
                       joining: bool) -> ConsumerGroupMember:
        existing = cg.member_by_instance(req.instance_id)
        error = static_member_error(existing, member_id, req.instance_id, joining)
        if error is not None:
            raise HeartbeatError(*error)
        if not joining:
            _check_epoch(existing, req.member_epoch, req.owned)
            return existing
        if existing is None:
            self._check_size(cg)
            return ConsumerGroupMember(member_id, instance_id=req.instance_id)
        # The restarted instance takes over the old member's assignment and its
        # place in the target assignment: no group epoch bump, no rebalance.
        return cg.replace_static_member(existing, member_id)

    def _check_size(self, cg: ConsumerGroup) -> None:
        if len(cg.members) >= self.config.max_size:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of "
                                 f"{self.config.max_size} members.")

    @staticmethod
    def _updated(member: ConsumerGroupMember, req: HeartbeatRequest) -> ConsumerGroupMember:
        changes = {"client_id": req.client_id, "client_host": req.client_host}
        if req.instance_id is not None:
            changes["instance_id"] = req.instance_id
        if req.rack_id is not None:
            changes["rack_id"] = req.rack_id
        if req.rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
        if req.server_assignor is not None:
            changes["server_assignor"] = req.server_assignor
        if req.subscribed_topic_names is not None:
            changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
        if req.subscribed_topic_regex is not None:   # "" drops the member's regex
            changes["subscribed_topic_regex"] = req.subscribed_topic_regex or None
        return replace(member, **changes)

    # -- regular expressions and subscription metadata ----------------------------------

    def _maybe_refresh_regexes(self, cg: ConsumerGroup, authorize_topics) -> bool:
        """Resolve the group's regexes again if Kafka would now (True if it did);
        a resolution that changes a regex's topics changes the subscription
        metadata, which bumps the group epoch."""
        regexes = cg.subscribed_regexes()
        for gone in set(cg.resolved_regexes) - set(regexes):   # its last member left it
            del cg.resolved_regexes[gone]
        if not regexes:
            return False
        now = time.monotonic()
        resolved = cg.resolved_regexes.values()
        last_refresh = max((r.resolved_at for r in resolved), default=None)
        if last_refresh is not None and now <= last_refresh + REGEX_REFRESH_MIN_INTERVAL_S:
            return False
        version = self._topics.new_topics_version
        interval = self.config.regex_refresh_interval_ms / 1000
        if (len(regexes) == len(cg.resolved_regexes)
                and all(r.version >= version for r in resolved)
                and now <= last_refresh + interval):
            return False
        names = [t.name for t in self._topics.topics()]
        results = resolve(regexes, names, authorize_topics)
        for regex, topics in results.items():
            cg.resolved_regexes[regex] = ResolvedRegularExpression(topics, version, now)
        log.info("[GroupId %s] Scanned %d topics to refresh regular expressions %s.",
                 escape(cg.group_id), len(names), escape(str(sorted(regexes))))
        return True

    def _subscription_metadata_changed(self, cg: ConsumerGroup, recompute: bool) -> bool:
        """Record the subscribed topics' ids and partition counts; True if they
        differ from those the target was computed for.  Only recomputed when the
        subscriptions may have changed (``recompute``) or a topic did (Kafka
        refreshes it on a new metadata image): a plain heartbeat costs nothing."""
        version = self._topics.topics_version
        if (not recompute and cg.subscription_metadata is not None
                and version == cg.subscription_metadata_version):
            return False
        metadata = {}
        for name in cg.subscribed_topics():
            meta = self._topics.topic(name)
            if meta is not None:
                metadata[name] = (meta.topic_id, meta.num_partitions)
        changed = cg.subscription_metadata is not None and metadata != cg.subscription_metadata
        cg.subscription_metadata = metadata
        cg.subscription_metadata_version = version
        return changed

    def _update_target_assignment(self, cg: ConsumerGroup) -> None:
        topics = cg.subscription_metadata or {}
        specs = {m.member_id: MemberSpec(
                    frozenset(topics[t][0] for t in cg.member_topics(m) if t in topics),
                    cg.target.get(m.member_id, {}))
                 for m in cg.members.values()}
        cg.assignor_name = cg.preferred_assignor(self._assignors)
        cg.target = self._assignors[cg.assignor_name](specs, dict(topics.values()))
        cg.assignment_epoch = cg.group_epoch

    # -- leaving, fencing, timers ---------------------------------------------------------

    def _leave(self, group: Group, cg: ConsumerGroup, req: HeartbeatRequest) -> HeartbeatResult:
        if req.instance_id is None:
            member = cg.members.get(req.member_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {req.member_id} is not a member of the group.")
        else:
            member = cg.member_by_instance(req.instance_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                     f"Static member {req.member_id} was fenced.")
            if req.member_epoch == STATIC_LEAVE_EPOCH:
                # Kept with its assignment for one session: its restart takes it back.
                log.info("[GroupId %s] Static Member %s with instance id %s temporarily "
                         "left the consumer group.", escape(cg.group_id),
                         escape(member.member_id), escape(req.instance_id))
                cg.members[member.member_id] = replace(member, member_epoch=STATIC_LEAVE_EPOCH)
                return HeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch)
        log.info("[GroupId %s] Member %s left the consumer group.", escape(cg.group_id),
                 escape(member.member_id))
        self.fence(group, cg, member)
        return HeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch)

    def fence(self, group: Group, cg: ConsumerGroup, member: ConsumerGroupMember,
               downgrade: bool = True) -> None:
        """Remove a member (left, or fenced) and bump the group epoch; or, if it was
        the last consumer-protocol member among classic ones, downgrade the group
        (not for a classic LeaveGroup: Kafka's classicGroupLeaveToConsumerGroup)."""
        if downgrade and self.classic_members.maybe_downgrade(group, cg, member.member_id):
            return
        cg.members.pop(member.member_id, None)
        cg.target.pop(member.member_id, None)
        cg.group_epoch += 1
        log.info("[GroupId %s] Bumped group epoch to %d.", escape(cg.group_id), cg.group_epoch)

    def arm_timers(self, group: Group, member: ConsumerGroupMember,
                    revoking: bool | None = None) -> ConsumerGroupMember:
        """A new session for the member (a classic member's own session timeout), and
        a rebalance deadline while ``revoking`` (default: it has partitions to revoke)."""
        if member.classic is not None:
            session_timeout_ms = member.classic.session_timeout_ms
        else:
            session_timeout_ms = group_config_value(self.group_configs, group.group_id,
                                                    "consumer.session.timeout.ms",
                                                    self.config.session_timeout_ms)
        if revoking is None:
            revoking = member.state == MemberState.UNREVOKED_PARTITIONS
        return self._modern.arm_timers(group, member, session_timeout_ms, revoking)

    def on_loaded(self, group: Group) -> None:
        """A group loaded from ``__consumer_offsets`` (not yet published): each
        member gets a session to heartbeat in, and a rebalance timeout if it
        still has partitions to revoke (Kafka's onLoaded)."""
        self._modern.on_loaded(group, self.arm_timers)

    # -- ConsumerGroupDescribe -------------------------------------------------

    def describe(self, group_id: str) -> tuple[int, str | None, ConsumerGroup | None]:
        """(error, message, a snapshot of the group) for ConsumerGroupDescribe."""
        return self._modern.describe(group_id, lambda cg: replace(
            cg, members=dict(cg.members), target=dict(cg.target)))


def _check_epoch(member: ConsumerGroupMember, epoch: int, owned: Assignment | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid."""
    error = member_epoch_error(member, epoch, lambda: _is_subset(owned, member.assigned),
                               "consumer")
    if error is not None:
        raise FencedMemberEpoch(error)


def _is_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return True
    return all(parts <= assigned.get(topic, set()) for topic, parts in owned.items())

