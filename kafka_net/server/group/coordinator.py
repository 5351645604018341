"""GroupCoordinator: consumer groups with the classic rebalance protocol.

Kafka's ``GroupCoordinator`` for one broker.  It speaks in domain values
(:mod:`kafka_net.server.group.results`): a handler decodes its request into a
call here and turns the result into its response body.  The one contract,
for every group API:

* a method returns its result (a ``JoinResult``, an error code, ...);
* JoinGroup and SyncGroup may instead *park*: they return None and answer
  later by calling the ``respond`` callback the handler gave them (which
  completes the request with ``ctx.complete``).  The handler thread is free
  meanwhile and the connection stays muted.

The states and their legal moves are the table in
:mod:`kafka_net.server.group.state`.  A rebalance, step by step:

1. **JoinGroup.**  A new member (v4+) first gets MEMBER_ID_REQUIRED with an
   id to use (KIP-394); joining with it moves the group to
   PreparingRebalance, and the JoinGroup is parked.
2. The rebalance completes when every known member has rejoined, or when the
   longest ``rebalance_timeout_ms`` runs out (members that did not rejoin are
   removed).  A first rebalance of an empty group waits
   ``group.initial.rebalance.delay.ms`` so that consumers starting together
   land in one generation.  Then: generation + 1, a protocol every member
   supports is chosen, a leader is kept or picked, the state becomes
   CompletingRebalance and every parked JoinGroup is answered; the leader's
   answer lists all members with their metadata.
3. **SyncGroup.**  Followers' SyncGroups are parked until the leader's
   SyncGroup brings the assignments; then all are answered and the group is
   Stable.
4. **Heartbeat** keeps a member alive for ``session_timeout_ms`` and tells it
   REBALANCE_IN_PROGRESS when it must rejoin.  A member that stops
   heartbeating is removed and the group rebalances.  **LeaveGroup** removes
   members at once.

The coordinator is composed, not inherited: the groups and offsets belong to
one :class:`~kafka_net.server.group.registry.GroupRegistry` it makes and hands
to its parts: offsets, describe/list and deletion
(:mod:`kafka_net.server.group.admin`, storage in
:mod:`kafka_net.server.group.offsets`), static members
(:mod:`kafka_net.server.group.static_membership`), offset expiry
(:mod:`kafka_net.server.group.offset_expiry`), and the consumer and streams
coordinators.  Its methods for those are thin doors the handlers call.

Threads: every method runs on a handler thread or the purgatory timer; each
group has its own re-entrant lock (a completion can run inside a check that
already holds it).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Callable

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.consumer_coordinator import (
    ConsumerGroupConfig, ConsumerGroupCoordinator)
from kafka_net.server.group.group import Group, GroupConfig, Member, StreamsGroupConfig
from kafka_net.server.group.admin import GroupAdmin, compute_subscribed_topics
from kafka_net.server.group.offset_expiry import OffsetExpiry
from kafka_net.server.group.registry import GroupRegistry
from kafka_net.server.group.static_membership import StaticMembership
from kafka_net.server.scheduler import BackgroundTask
from kafka_net.server.group.rebalance import (
    DelayedHeartbeat, DelayedJoin, InitialDelayedJoin, join_answer, select_protocol,
    update_member)
from kafka_net.server.group.results import (
    GroupDescription, GroupOverview, JoinRequest, JoinResult, LeaveResult,
    PartitionCommit, SyncRequest, SyncResult)
from kafka_net.server.group.state import GroupState
from kafka_net.server.group.zookeeper_offsets import ZooKeeperOffsets
from kafka_net.server.purgatory import Purgatory

if TYPE_CHECKING:
    from kafka_net.server.group.streams_coordinator import StreamsGroupCoordinator

log = logging.getLogger(__name__)

S = GroupState
JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


class GroupCoordinator:
    def __init__(self, config: GroupConfig, topic_partitions, topics=None,
                 consumer_config: ConsumerGroupConfig | None = None, store=None,
                 streams_config: StreamsGroupConfig | None = None,
                 zookeeper_offsets: ZooKeeperOffsets | None = None) -> None:
        """``topic_partitions(topic)`` returns a partition count, or None if unknown;
        ``topics`` (the MetadataCache: topic ids) serves consumer-protocol groups;
        ``store`` (a GroupMetadataManager) keeps groups and offsets in
        ``__consumer_offsets``, None keeps them in memory only;
        ``zookeeper_offsets`` the OffsetCommit v0 store (default: in memory)."""
        self.config = config
        # The one owner of the groups (every kind) and their offsets, which each part
        # below holds: Kafka's GroupMetadataManager role.
        self.registry = GroupRegistry(topic_partitions, config.offset_metadata_max_bytes, store)
        self.offsets = self.registry.offsets
        self.purgatory = Purgatory("Rebalance")
        self._stopping = False   # set by complete_parked: nothing parks any more
        # OffsetCommit v0 / OffsetFetch v0 (playing a release before 4.0): the
        # ZooKeeper broker's separate store, see zookeeper_offsets.py.
        self.zookeeper_offsets = zookeeper_offsets or ZooKeeperOffsets()
        # DescribeGroups, ListGroups, DeleteGroups, OffsetCommit/Fetch/Delete.
        self.admin = GroupAdmin(self.registry)
        # KIP-345: a returning static member takes its old place (static_membership.py).
        self.static_members = StaticMembership(config, self.registry, self)
        # KIP-848 groups: ConsumerGroupHeartbeat / ConsumerGroupDescribe.
        self.consumer = ConsumerGroupCoordinator(
            self.registry, self.purgatory, topics, consumer_config or ConsumerGroupConfig(),
            conversions=self)
        # KIP-1071 groups: StreamsGroupHeartbeat / StreamsGroupDescribe, built on
        # first use (see streams).
        self._topics = topics
        self._streams_config = streams_config or StreamsGroupConfig()
        self._streams: StreamsGroupCoordinator | None = None
        self._streams_lock = threading.Lock()
        self._group_configs = None
        # offsets.retention.minutes (offset_expiry.py): Kafka's
        # "delete-expired-group-metadata" task.
        self.expiry = OffsetExpiry(self.registry, config)
        self._expiry_task = BackgroundTask("group-metadata-manager-0", "kn-offset-expiry",
                                           self.expiry.run)

    # Share groups (KIP-932) have their seat in the registry; the broker and the
    # handlers reach it here as well.
    @property
    def share(self):
        return self.registry.share

    @share.setter
    def share(self, coordinator) -> None:
        self.registry.share = coordinator

    @property
    def streams(self) -> StreamsGroupCoordinator:
        """The StreamsGroupCoordinator (KIP-1071), built the first time anything
        asks for it: a streams API's request, or :meth:`load_groups` when
        ``__consumer_offsets`` holds a streams group.

        Why on first use: most brokers never serve a streams group, and the
        streams modules (coordinator, group, assignor, records) were a few
        milliseconds of every start (issue 28).  Nothing changes for a client: a
        streams group is only made by a StreamsGroupHeartbeat or loaded from its
        records, and both ask for this first; until then the registry holds none,
        which is what every other kind's check reads.  Its timers live in this
        coordinator's purgatory, which runs from :meth:`start` either way.  Built
        under a lock, so two first heartbeats on two handler threads build one."""
        streams = self._streams
        if streams is None:
            with self._streams_lock:
                if self._streams is None:
                    self._streams = self._new_streams_coordinator()
                streams = self._streams
        return streams

    def _new_streams_coordinator(self) -> StreamsGroupCoordinator:
        from kafka_net.server.group.streams_coordinator import StreamsGroupCoordinator
        streams = StreamsGroupCoordinator(self.registry, self.purgatory, self._topics,
                                          self._streams_config)
        streams.group_configs = self._group_configs
        log.debug("Streams group coordinator built (first use)")
        return streams

    def use_group_configs(self, group_configs) -> None:
        """The broker's GroupConfigRepository (a group's own configs, KIP-848 and
        KIP-1071), for the consumer and streams coordinators."""
        with self._streams_lock:
            self._group_configs = group_configs
            self.consumer.group_configs = group_configs
            if self._streams is not None:
                self._streams.group_configs = group_configs

    def start(self) -> None:
        self.purgatory.start()
        self._expiry_task.startup()

    def shutdown(self) -> None:
        self._expiry_task.shutdown()
        self.purgatory.shutdown()

    def complete_parked(self) -> None:
        """Graceful stop: answer every parked JoinGroup/SyncGroup with NOT_COORDINATOR,
        which sends clients to look for the coordinator again (after a restart).

        A join or sync handled after this (it was already queued) is answered the
        same way at once: ``_stopping`` is read under the group's lock, and set
        before the groups are listed, so none can park unseen.
        """
        self._stopping = True
        for group in self.groups():
            with group.lock:
                for member in group.members.values():
                    member.answer_join(JoinResult.failed(ErrorCode.NOT_COORDINATOR,
                                                         member.member_id))
                    member.answer_sync(SyncResult.failed(ErrorCode.NOT_COORDINATOR))

    # -- the registry's doors (the handlers, the share coordinator and tests use them) --

    def group(self, group_id: str, create: bool = False) -> Group | None:
        return self.registry.group(group_id, create)

    def group_type(self, group_id: str) -> str | None:
        return self.registry.group_type(group_id)

    def groups(self) -> list[Group]:
        return self.registry.groups()

    def ready(self) -> None:
        self.registry.ready()

    def store_consumer_group(self, group: Group, member_id: str | None = None) -> int:
        return self.registry.store_consumer_group(group, member_id)

    def store_streams_group(self, group: Group, member_id: str | None = None) -> int:
        return self.registry.store_streams_group(group, member_id)

    # -- the admin side (admin.py) and the offset expiry (offset_expiry.py) -------------

    def delete_groups(self, group_ids: list[str]) -> list[int]:
        return self.admin.delete_groups(group_ids)

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]):
        return self.admin.delete_offsets(group_id, topics)

    def commit_offsets(self, group_id: str, member_id: str, generation: int,
                       commits: list[PartitionCommit],
                       group_instance_id: str | None = None) -> list[int]:
        return self.admin.commit_offsets(group_id, member_id, generation, commits,
                                         group_instance_id)

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None):
        return self.admin.fetch_offsets(group_id, topics)

    def delete_topic_offsets(self, topic: str) -> None:
        self.admin.delete_topic_offsets(topic)

    def describe_group(self, group_id: str) -> GroupDescription:
        return self.admin.describe_group(group_id)

    def list_groups(self) -> list[GroupOverview]:
        return self.admin.list_groups()

    def cleanup_group_metadata(self, now_ms: int | None = None) -> int:
        return self.expiry.cleanup_group_metadata(now_ms)

    def load_groups(self, partition_count: int):
        """Take the groups stored in ``__consumer_offsets`` (Kafka's onGroupLoaded):
        each loaded member must heartbeat within its session timeout.  A group
        already known here (created before the load) keeps its state and gains
        the offsets it does not have, once the caller released the internal
        topics' lock (returned as the step to run then)."""
        store = self.registry.store
        if store is None:
            return None
        known = []
        for loaded in store.load(partition_count):
            # Made whole before anyone can see it: no group lock is taken here.
            loaded.subscribed_topics = compute_subscribed_topics(loaded)
            for member in loaded.members.values():
                self.schedule_expiry(loaded, member.member_id, member.session_timeout_ms)
            if loaded.modern is not None:
                self.consumer.on_loaded(loaded)
            if loaded.streams is not None:
                self.streams.on_loaded(loaded)
            group = self.registry.publish(loaded)
            if group is not loaded:
                known.append((group, loaded))
                continue
            log.info("Loaded group %s in state %s with generation %d and %d member(s)",
                     escape(group.group_id), group.state, group.generation_id,
                     len(group.members))

        def merge() -> None:
            for group, loaded in known:
                with group.lock:
                    for tp, offset in loaded.offsets.items():
                        group.offsets.setdefault(tp, offset)
        return merge if known else None

    # -- KIP-848's online migration (migration.py) ------------------------------------------

    def convert_to_consumer_group(self, group: Group, cg) -> None:
        """A classic group becomes ``cg`` (under its lock): whatever is parked is told
        to rejoin, the classic members go, and a GroupMetadata tombstone is written
        (the consumer group's records follow with the heartbeat's change)."""
        for member in group.members.values():
            member.answer_join(JoinResult.failed(ErrorCode.REBALANCE_IN_PROGRESS,
                                                 member.member_id))
            member.answer_sync(SyncResult.failed(ErrorCode.REBALANCE_IN_PROGRESS))
        self._reset_classic(group)
        group.modern = cg
        store = self.registry.store
        if store is not None:
            store.remove_group_metadata(group.group_id)

    def convert_to_classic_group(self, group: Group, members: dict[str, Member],
                                 generation: int, rebalance: bool = True) -> None:
        """A consumer group becomes a classic one with ``members`` (under its lock):
        its records are deleted, the classic group is stored, and (``rebalance``) a
        rebalance is prepared so that every member rejoins (Kafka's
        convertToClassicGroup)."""
        self._drop_consumer_group(group)
        group.members = members
        group.generation_id = generation
        group.protocol_type = next(iter(members.values())).protocol_type
        group.protocol_name = select_protocol(group)
        group.leader_id = None   # the first member to rejoin leads
        group.transition_to(S.STABLE, converted=True)
        group.subscribed_topics = compute_subscribed_topics(group)
        self._store_group(group)
        log.info("[GroupId %s] Converted the consumer group to a classic group with %d "
                 "member(s) at generation %d.", escape(group.group_id), len(members),
                 generation)
        for member in members.values():
            self.schedule_expiry(group, member.member_id, member.session_timeout_ms)
        if rebalance:
            self.prepare_rebalance(group, f"Downgrade group {group.group_id} from consumer "
                                           "to classic.")

    def _drop_consumer_group(self, group: Group) -> None:
        group.modern = None
        store = self.registry.store
        if store is not None:
            store.remove_consumer_group(group.group_id)

    @staticmethod
    def _reset_classic(group: Group) -> None:
        group.members = {}
        group.pending_members = {}
        group.transition_to(S.EMPTY, converted=True)
        group.protocol_name = group.leader_id = None
        group.join_op = None

    def _store_group(self, group: Group) -> int:
        """Persist the group's metadata (under its lock); an error code."""
        return self.registry.store_group(group)

    # -- JoinGroup ----------------------------------------------------------------------

    def join_group(self, req: JoinRequest, respond: JoinCallback) -> JoinResult | None:
        """The answer, or None: parked, ``respond`` will be called with it."""
        error = self._join_precheck(req)
        if error is not None:
            return JoinResult.failed(error, req.member_id)
        group = self.registry.group(req.group_id, create=True)
        if group is None or group.streams is not None:
            # Kafka's classicGroupJoin: a share or streams group's id, no member id.
            return JoinResult.failed(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
        with group.lock:
            if self._stopping:
                return JoinResult.failed(ErrorCode.NOT_COORDINATOR, req.member_id)
            if group.state == S.DEAD:
                return JoinResult.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, req.member_id)
            if group.modern is not None:
                if group.modern.members:
                    # KIP-848's online migration: the consumer group serves it.
                    result = self.consumer.classic_members.classic_join(group, req)
                    self.store_consumer_group(group, result.member_id or None)
                    return result
                # Kafka's classicGroupJoinToClassicGroup: an empty consumer group
                # gives way to a classic one (its records are deleted).
                self._drop_consumer_group(group)
            if not self._protocols_compatible(group, req):
                return JoinResult.failed(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
            if not req.member_id:
                if req.group_instance_id is not None:
                    return self.static_members.join_new_static_member(group, req, respond)
                return self._join_new_member(group, req, respond)
            return self._join_known_member(group, req, respond)

    def _join_precheck(self, req: JoinRequest) -> int | None:
        if not req.group_id:
            return ErrorCode.INVALID_GROUP_ID
        if not (self.config.min_session_timeout_ms <= req.session_timeout_ms
                <= self.config.max_session_timeout_ms):
            return ErrorCode.INVALID_SESSION_TIMEOUT
        return None

    @staticmethod
    def _protocols_compatible(group: Group, req: JoinRequest) -> bool:
        if not req.protocol_type or not req.protocols:
            return False
        if group.state == S.EMPTY or not group.members:
            return True
        if req.protocol_type != group.protocol_type:
            return False
        wanted = {name for name, _ in req.protocols}
        return any(wanted & {n for n, _ in m.protocols} for m in group.members.values())

    def _join_new_member(self, group: Group, req: JoinRequest, respond: JoinCallback):
        if len(group.members) + len(group.pending_members) >= self.config.max_size:
            return JoinResult.failed(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        member_id = f"{req.client_id or 'member'}-{uuid.uuid4()}"
        if req.require_known_member_id:
            # KIP-394: hand out the id first; the member must rejoin with it.
            deadline = time.monotonic() + req.session_timeout_ms / 1000
            group.pending_members[member_id] = deadline
            self.schedule_expiry(group, member_id, req.session_timeout_ms)
            return JoinResult.failed(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        return self.add_member_and_rebalance(group, req, member_id, respond)

    def _join_known_member(self, group: Group, req: JoinRequest, respond: JoinCallback):
        member_id = req.member_id
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            return self.add_member_and_rebalance(group, req, member_id, respond)
        error = group.validate_member(member_id, req.group_instance_id)
        if error is not None:
            return JoinResult.failed(error, member_id)
        member = group.members[member_id]
        same = req.protocols == member.protocols
        if group.state == S.COMPLETING_REBALANCE and same:
            # It lost our JoinGroup answer: give it again, no new rebalance.
            return join_answer(group, member)
        if group.state == S.STABLE and same and member_id != group.leader_id:
            return join_answer(group, member)
        update_member(member, req, respond)
        if group.state != S.PREPARING_REBALANCE:
            self.prepare_rebalance(group, f"member {member_id} rejoined")
        self.try_complete_join(group)
        return None

    def add_member_and_rebalance(self, group: Group, req: JoinRequest, member_id: str,
                                  respond: JoinCallback) -> None:
        member = Member(
            member_id, req.group_instance_id, req.client_id, req.client_host,
            req.session_timeout_ms,
            req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0
            else req.session_timeout_ms, req.protocol_type, req.protocols)
        if not group.members:
            group.protocol_type = req.protocol_type
        group.members[member_id] = member
        update_member(member, req, respond)
        if group.state != S.PREPARING_REBALANCE:
            self.prepare_rebalance(group, f"member {member_id} joined")
        self.try_complete_join(group)
        return None

    def prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state == S.COMPLETING_REBALANCE:
            self._fail_pending_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
        old_state = group.transition_to(S.PREPARING_REBALANCE)
        log.info("Preparing to rebalance group %s in state %s with old generation %d (%s)",
                 escape(group.group_id), old_state, group.generation_id, escape(reason))
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if old_state == S.EMPTY and self.config.initial_rebalance_delay_ms > 0:
            op = InitialDelayedJoin(self.complete_join, group, min(
                self.config.initial_rebalance_delay_ms, timeout))
        else:
            op = DelayedJoin(self.complete_join, group, timeout)
        self._schedule_join(group, op)

    def _schedule_join(self, group: Group, op: DelayedJoin) -> None:
        group.join_op = op
        self.purgatory.try_complete_else_watch(op, [("join", group.group_id)])

    def try_complete_join(self, group: Group) -> None:
        self.purgatory.check_and_complete(("join", group.group_id))

    def complete_join(self, group: Group) -> None:
        """The rebalance's join phase is over: start the next generation."""
        with group.lock:
            if group.state != S.PREPARING_REBALANCE:
                return
            # Static members that did not rejoin stay: their session timeout governs them.
            for member in [m for m in group.members.values()
                           if m.on_join is None and m.group_instance_id is None]:
                log.info("Member %s of group %s did not rejoin in time; removing it",
                         escape(member.member_id), escape(group.group_id))
                self._remove_member(group, member)
            if group.members and not any(m.on_join for m in group.members.values()):
                log.error("Group %s could not complete rebalance because no members "
                          "rejoined.", escape(group.group_id))
                self._schedule_join(group, DelayedJoin(self.complete_join, group, max(
                    m.rebalance_timeout_ms for m in group.members.values())))
                return
            # Pending members (given an id, not yet rejoined) stay pending: if they
            # rejoin later, that starts the next rebalance.
            group.generation_id += 1
            if not group.members:
                group.transition_to(S.EMPTY)
                group.protocol_name = group.leader_id = None
                group.subscribed_topics = compute_subscribed_topics(group)
                self._store_group(group)   # Kafka stores the empty generation too
                log.info("Group %s with generation %d is now empty",
                         escape(group.group_id), group.generation_id)
                return
            group.protocol_name = select_protocol(group)
            group.subscribed_topics = compute_subscribed_topics(group)
            leader = group.members.get(group.leader_id)
            if leader is None or leader.on_join is None:   # a joined member leads
                group.leader_id = next(m.member_id for m in group.members.values() if m.on_join)
            group.transition_to(S.COMPLETING_REBALANCE)
            log.info("Stabilized group %s generation %d (protocol %s, %d members)",
                     escape(group.group_id), group.generation_id, escape(group.protocol_name),
                     len(group.members))
            for member in group.members.values():
                member.is_new = False
                if member.on_join is not None:
                    member.answer_join(join_answer(group, member))
                    self.schedule_expiry(group, member.member_id, member.session_timeout_ms)

    # -- SyncGroup ----------------------------------------------------------------------

    def sync_group(self, req: SyncRequest, respond: SyncCallback) -> SyncResult | None:
        """The answer, or None: parked until the leader's assignment, then ``respond``."""
        group = self.registry.group(req.group_id)
        if group is None:
            return SyncResult.failed(ErrorCode.UNKNOWN_MEMBER_ID)
        with group.lock:
            if group.modern is not None:
                result = self.consumer.classic_members.classic_sync(group, req)
                self.store_consumer_group(group, req.member_id or None)
                return result
            error = group.validate_member(req.member_id, req.group_instance_id)
            if error is not None:
                return SyncResult.failed(error)
            member = group.members[req.member_id]
            if req.generation_id != group.generation_id:
                return SyncResult.failed(ErrorCode.ILLEGAL_GENERATION)
            if (req.protocol_type not in (None, group.protocol_type)
                    or req.protocol_name not in (None, group.protocol_name)):
                return SyncResult.failed(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if group.state == S.PREPARING_REBALANCE:
                return SyncResult.failed(ErrorCode.REBALANCE_IN_PROGRESS)
            self._heartbeat(group, member)
            if group.state == S.STABLE:
                return self._sync_answer(group, member)
            if self._stopping:
                return SyncResult.failed(ErrorCode.NOT_COORDINATOR)
            member.on_sync = respond
            if member.member_id == group.leader_id:
                self._apply_assignment(group, req.assignments)
            return None

    def _apply_assignment(self, group: Group, assignments: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
        error = self._store_group(group)   # persisted before anyone is answered
        if error:
            # Kafka's resetAndPropagateAssignmentError, then a new rebalance.
            for member in group.members.values():
                member.assignment = b""
            self._fail_pending_syncs(group, error)
            self.prepare_rebalance(group, f"storing the assignment failed with error {error}")
            return
        group.transition_to(S.STABLE)
        log.info("Assignment received from leader %s for group %s generation %d",
                 escape(group.leader_id), escape(group.group_id), group.generation_id)
        for member in group.members.values():
            member.answer_sync(self._sync_answer(group, member))

    @staticmethod
    def _sync_answer(group: Group, member: Member) -> SyncResult:
        return SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name,
                          member.assignment)

    @staticmethod
    def _fail_pending_syncs(group: Group, error: int) -> None:
        for member in group.members.values():
            member.answer_sync(SyncResult.failed(error))

    # -- Heartbeat, LeaveGroup, expiry --------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, generation_id: int,
                  group_instance_id: str | None = None) -> int:
        group = self.registry.group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        with group.lock:
            if group.state == S.DEAD:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            if group.modern is not None:
                error = self.consumer.classic_members.classic_heartbeat(
                    group, member_id, generation_id, group_instance_id)
                self.store_consumer_group(group, member_id or None)
                return error
            error = group.validate_member(member_id, group_instance_id)
            if error is not None:
                return error
            member = group.members[member_id]
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            self._heartbeat(group, member)
            if group.state == S.PREPARING_REBALANCE:
                return ErrorCode.REBALANCE_IN_PROGRESS
            return ErrorCode.NONE

    def _heartbeat(self, group: Group, member: Member) -> None:
        self.schedule_expiry(group, member.member_id, member.session_timeout_ms)

    def schedule_expiry(self, group: Group, member_id: str, timeout_ms: int) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        member = group.members.get(member_id)
        if member is not None:
            member.heartbeat_deadline = deadline
        # Timer only: each heartbeat arms a new one, and an expiry re-checks the
        # member's current deadline, so stale timers are harmless.
        self.purgatory.schedule(DelayedHeartbeat(self.expire, group, member_id, timeout_ms))

    def expire(self, group: Group, member_id: str) -> None:
        with group.lock:
            if member_id in group.pending_members:
                if time.monotonic() >= group.pending_members[member_id]:
                    del group.pending_members[member_id]
                    log.info("Pending member %s of group %s expired",
                             escape(member_id), escape(group.group_id))
                    self.try_complete_join(group)
                return
            member = group.members.get(member_id)
            if member is None or time.monotonic() < member.heartbeat_deadline:
                return  # a later heartbeat moved the deadline
            if member.on_join is not None or member.on_sync is not None:
                # Parked in a rebalance: kept alive (the rebalance timeout, or the
                # leader's expiry, governs it); look again one session later.
                self.schedule_expiry(group, member_id, member.session_timeout_ms)
                return
            log.info("Member %s in group %s has failed (no heartbeat for %d ms); removing it",
                     escape(member_id), escape(group.group_id), member.session_timeout_ms)
            self._remove_member_and_rebalance(group, member, "session timeout")

    def leave_group(self, group_id: str,
                    leaving: list[tuple[str, str | None]]) -> list[LeaveResult]:
        """``leaving``: (member id, group instance id) pairs; one result each, in order."""
        group = self.registry.group(group_id)
        return [LeaveResult(member_id, instance_id, self._leave(group, member_id, instance_id))
                for member_id, instance_id in leaving]

    def _leave(self, group: Group | None, member_id: str, instance_id: str | None) -> int:
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        with group.lock:
            if group.modern is not None:
                error = self.consumer.classic_members.classic_leave(group, member_id, instance_id)
                self.store_consumer_group(group)
                return error
            if group.streams is not None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if not member_id:
                # An admin removing a static member by its instance id alone (KIP-345).
                static_id = None if instance_id is None else group.static_member_id(instance_id)
                if static_id is None:
                    return ErrorCode.UNKNOWN_MEMBER_ID
                member_id = static_id
            elif group.pending_members.pop(member_id, None) is not None:
                self.try_complete_join(group)
                return ErrorCode.NONE
            error = group.validate_member(member_id, instance_id)
            if error is not None:
                return error
            self._remove_member_and_rebalance(group, group.members[member_id], "left the group")
            return ErrorCode.NONE

    def _remove_member_and_rebalance(self, group: Group, member: Member, reason: str) -> None:
        self._remove_member(group, member)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self.prepare_rebalance(group, f"member {member.member_id}: {reason}")
        self.try_complete_join(group)

    @staticmethod
    def _remove_member(group: Group, member: Member) -> None:
        group.members.pop(member.member_id, None)
        # Answer whatever of it is parked, so those connections are unmuted.
        member.answer_join(JoinResult.failed(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        member.answer_sync(SyncResult.failed(ErrorCode.UNKNOWN_MEMBER_ID))
