"""ShareGroupCoordinator: share groups (KIP-932), as Kafka's GroupCoordinatorService,
SharePartitionManager and share coordinator run them for one broker.

* Membership: ShareGroupHeartbeat (:meth:`heartbeat`).  A member joins with
  epoch 0 and a member id it made, is given the group's epoch and its
  partitions from the ``simple`` assignor, heartbeats every
  ``share.heartbeat.interval.ms``; one silent for ``share.session.timeout.ms``
  is removed (the sweep, and any heartbeat of its group, check): it loses its
  share session and the records it holds are released.  One that leaves with
  epoch -1 keeps its share session until the client closes it (the final
  ShareAcknowledge, epoch -1, carries the last acknowledgements).  Any change
  of members or subscriptions bumps the group epoch and the assignor runs again.
* Records: ShareFetch / ShareAcknowledge go to the
  :class:`~kafka_net.server.share.share_partition_manager.SharePartitionManager`
  through the member's share session
  (:class:`~kafka_net.server.share.share_session.ShareSessionCache`).
* State: ``__share_group_state`` (:mod:`kafka_net.server.share.persister`).
  A share group's membership is not persisted (Kafka keeps it in
  ``__consumer_offsets``); after a restart a group with persisted state comes
  back Empty, its members rejoin, and every share-partition resumes from its
  state.
* Admin: DescribeShareGroupOffsets, AlterShareGroupOffsets (empty group only),
  DeleteShareGroupOffsets (empty group only), ShareGroupDescribe, ListGroups.

Group ids are one namespace with classic, consumer and streams groups: a share
group cannot take the id of a group the GroupCoordinator holds (GROUP_ID_NOT_FOUND,
"Group X is not a share group."), and the GroupCoordinator's entry points refuse
a share group's id (its ``group_type`` consults this coordinator).

A sweep thread (``kn-share-sweep``) runs every 250 ms: lapsed acquisition locks
are released (and written), silent members removed, and parked ShareFetches
of the partitions where records became available are completed.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from dataclasses import dataclass, replace

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.scheduler import BackgroundTask
from kafka_net.server.share.share_group import ShareGroup, ShareGroupMember, simple_assign
from kafka_net.server.share.share_partition_manager import ShareConfig, SharePartitionManager
from kafka_net.server.share.share_session import ShareSessionCache

log = logging.getLogger(__name__)

JOIN_EPOCH, LEAVE_EPOCH = 0, -1
SWEEP_INTERVAL_S = 0.25


@dataclass(frozen=True)
class ShareHeartbeatRequest:
    """A ShareGroupHeartbeat, decoded."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class ShareHeartbeatResult:
    """The coordinator's answer to a ShareGroupHeartbeat: an error, or the member's epoch
    and assignment."""

    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict | None = None


class ShareGroupError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class ShareGroupCoordinator:
    def __init__(self, config: ShareConfig, replica_manager, metadata_cache,
                 persister=None, classic_groups=None, group_configs=None) -> None:
        """``classic_groups``: the GroupRegistry of the other kinds (its ids are taken:
        ``group_type`` and ``id_claim``); ``persister``: a ShareStatePersister (None:
        state in memory only)."""
        self.config = config
        self._rm = replica_manager
        self._topics = metadata_cache
        self._classic = classic_groups
        self.partitions = SharePartitionManager(config, replica_manager, metadata_cache,
                                                persister, group_configs)
        self.sessions = ShareSessionCache(config.max_share_sessions)
        self.sessions.register_share_group_listener(self)
        self._groups: dict[str, ShareGroup] = {}
        self._persisted_loads = -1   # the persister's load count last folded in
        self._lock = threading.RLock()
        # Members whose session went with its connection, (group id, member id): the
        # Processor thread queues them, the sweep thread releases their records.
        self._left: collections.deque[tuple[str, str]] = collections.deque()
        self._wake = threading.Event()
        self._sweep = BackgroundTask("share-group-sweeper", "kn-share-sweep", self._run_sweep)

    @property
    def persister(self):
        return self.partitions.persister

    @property
    def group_configs(self):
        return self.partitions.group_configs

    @group_configs.setter
    def group_configs(self, value) -> None:
        self.partitions.group_configs = value

    def start(self) -> None:
        self._sweep.startup()

    def shutdown(self) -> None:
        self._sweep.stop.set()
        self._wake.set()
        self._sweep.shutdown()

    # -- ShareGroupListener (a closed connection, see share_session.py) -----------------

    def on_member_leave(self, group_id: str, member_id: str) -> None:
        """Kafka's SharePartitionManager.onMemberLeave: the member's session went
        with its connection; the records it holds are released.  Called on a
        Processor thread, so the release (which writes the share state) is left
        to the sweep thread, woken now."""
        log.debug("[GroupId %s] Removed the share session of member %s: its connection "
                 "closed.", escape(group_id), escape(member_id))
        self._left.append((group_id, member_id))
        self._wake.set()

    def _release_left(self) -> None:
        while self._left:
            group_id, member_id = self._left.popleft()
            if self.partitions.release(group_id, member_id):
                self.notify_all(group_id)

    # -- the registry -------------------------------------------------------------------------

    def _taken_by_other_kind(self, group_id: str) -> bool:
        """The id is a classic, consumer or streams group's (GroupRegistry.group_type,
        the one place that knows every kind)."""
        classic = self._classic
        return classic is not None and classic.group_type(group_id) not in (None, "share")

    def _claim(self, group_id: str) -> None:
        """The share group ``group_id``, made if new, unless another kind of group holds
        the id: checked and made under the GroupRegistry's ``id_claim``, as it
        makes its groups (taken before any other lock)."""
        classic = self._classic
        with classic.id_claim if classic is not None else contextlib.nullcontext():
            if self._taken_by_other_kind(group_id):
                raise ShareGroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                      f"Group {group_id} is not a share group.")
            with self._lock:
                if self.group(group_id) is None:
                    self._groups[group_id] = ShareGroup(group_id)

    def group(self, group_id: str) -> ShareGroup | None:
        self._load_persisted_groups()
        return self._groups.get(group_id)

    def groups(self) -> list[ShareGroup]:
        self._load_persisted_groups()
        with self._lock:
            return list(self._groups.values())

    def _load_persisted_groups(self) -> None:
        """Share groups with persisted state exist (Empty) until deleted.  Only a load
        of ``__share_group_state`` can bring such a group, so the persisted groups
        are listed once per load, not on every lookup (each listing walks every
        share-partition's state, and group_type asks here for any unknown id)."""
        persister = self.persister
        persister.ready()
        loads = persister.loads
        if loads == self._persisted_loads:
            return
        for group_id in persister.groups():
            if group_id not in self._groups:
                with self._lock:
                    self._groups.setdefault(group_id, ShareGroup(group_id))
        self._persisted_loads = loads

    def load(self, partition_count: int):
        """``__share_group_state``'s loader (InternalTopics)."""
        return self.persister.load(partition_count)

    # -- ShareGroupHeartbeat -----------------------------------------------------------------

    def heartbeat(self, req: ShareHeartbeatRequest) -> ShareHeartbeatResult:
        try:
            _validate(req)
            if req.member_epoch == JOIN_EPOCH:
                self._claim(req.group_id)
            elif self._taken_by_other_kind(req.group_id):
                raise ShareGroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                      f"Group {req.group_id} is not a share group.")
            with self._lock:
                group = self.group(req.group_id)
                if group is None:   # never made, or deleted since the claim
                    raise ShareGroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                          f"Group {req.group_id} not found.")
                self._fence_expired(group)
                return self._heartbeat(group, req)
        except ShareGroupError as exc:
            return ShareHeartbeatResult(exc.error_code, str(exc))

    def _heartbeat(self, group: ShareGroup, req: ShareHeartbeatRequest) -> ShareHeartbeatResult:
        if req.member_epoch == LEAVE_EPOCH:
            member = group.members.get(req.member_id)
            if member is None:
                raise ShareGroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                      f"Member {req.member_id} is not a member of group "
                                      f"{group.group_id}.")
            log.info("[GroupId %s] Member %s left the share group.", escape(group.group_id),
                     escape(req.member_id))
            # Its share session stays: the client's final ShareAcknowledge (epoch -1)
            # follows the leave and closes it, releasing what it still holds.
            self._remove(group, member, fenced=False)
            return ShareHeartbeatResult(member_id=req.member_id, member_epoch=LEAVE_EPOCH)
        member = self._member(group, req)
        updated = replace(member, client_id=req.client_id, client_host=req.client_host,
                          session_deadline=time.monotonic()
                          + self._group_value(group.group_id, "share.session.timeout.ms",
                                              self.config.session_timeout_ms) / 1000)
        if req.rack_id is not None:
            updated.rack_id = req.rack_id
        if req.subscribed_topic_names is not None:
            updated.subscribed_topic_names = tuple(sorted(set(req.subscribed_topic_names)))
        if (updated.subscribed_topic_names != member.subscribed_topic_names
                or member.member_id not in group.members):
            group.group_epoch += 1
            log.info("[GroupId %s] Bumped share group epoch to %d.", escape(group.group_id),
                     group.group_epoch)
        group.members[updated.member_id] = updated
        self._update_target_assignment(group)
        target = group.target.get(updated.member_id, {})
        changed = target != member.assigned or req.member_epoch == JOIN_EPOCH
        updated.assigned = {t: set(p) for t, p in target.items()}
        updated.member_epoch = group.assignment_epoch
        return ShareHeartbeatResult(
            member_id=updated.member_id, member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self._group_value(group.group_id,
                                                    "share.heartbeat.interval.ms",
                                                    self.config.heartbeat_interval_ms),
            assignment=updated.assigned if changed else None)

    def _member(self, group: ShareGroup, req: ShareHeartbeatRequest) -> ShareGroupMember:
        member = group.members.get(req.member_id)
        if member is None:
            if req.member_epoch != JOIN_EPOCH:
                raise ShareGroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                      f"Member {req.member_id} is not a member of group "
                                      f"{group.group_id}.")
            if len(group.members) >= self.config.max_size:
                raise ShareGroupError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                      "The share group has reached its maximum capacity of "
                                      f"{self.config.max_size} members.")
            log.info("[GroupId %s] Member %s joins the share group.", escape(group.group_id),
                     escape(req.member_id))
            return ShareGroupMember(req.member_id)
        if req.member_epoch not in (JOIN_EPOCH, member.member_epoch):
            which = "greater" if req.member_epoch > member.member_epoch else "smaller"
            raise ShareGroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a {which} member epoch ({req.member_epoch}) "
                f"than the one known by the group coordinator ({member.member_epoch}). "
                "The member must abandon all its partitions and rejoin.")
        return member

    def _group_value(self, group_id: str, name: str, default: int) -> int:
        return self.partitions.group_value(group_id, name, default)

    def _update_target_assignment(self, group: ShareGroup) -> None:
        """Run the assignor when the group epoch moved or a subscribed topic's
        partition count changed."""
        topics = {}
        for name in group.subscribed_topics():
            meta = self._topics.topic(name)
            if meta is not None:
                topics[name] = (meta.topic_id, meta.num_partitions)
        members = {m.member_id: frozenset(topics[t][0] for t in m.subscribed_topic_names
                                          if t in topics)
                   for m in group.members.values()}
        shape = dict(topics.values())
        if group.group_epoch == group.assignment_epoch and group.partition_counts == shape:
            return
        if group.group_epoch == group.assignment_epoch:
            group.group_epoch += 1   # partitions were added: a new epoch, as Kafka's
        group.target = simple_assign(members, shape)
        group.partition_counts = shape
        group.assignment_epoch = group.group_epoch

    def _remove(self, group: ShareGroup, member: ShareGroupMember, fenced: bool = True) -> None:
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        group.group_epoch += 1
        log.info("[GroupId %s] Bumped share group epoch to %d.", escape(group.group_id),
                 group.group_epoch)
        if not fenced:
            return
        self.sessions.remove(group.group_id, member.member_id)
        released = self.partitions.release(group.group_id, member.member_id)
        if released:
            self.notify_all(group.group_id)

    def _fence_expired(self, group: ShareGroup) -> None:
        now = time.monotonic()
        for member in list(group.members.values()):
            if member.session_deadline and now >= member.session_deadline:
                log.info("[GroupId %s] Member %s fenced from the share group because the "
                         "member session expired.", escape(group.group_id),
                         escape(member.member_id))
                self._remove(group, member)

    # -- the sweep -----------------------------------------------------------------------

    def _run_sweep(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._wake.wait(SWEEP_INTERVAL_S)
            self._wake.clear()
            if stop.is_set():
                return
            try:
                self.sweep()
            except Exception:   # the sweep goes on; the next one retries
                log.exception("Share group sweep failed")

    def sweep(self) -> None:
        self._release_left()
        with self._lock:
            for group in list(self._groups.values()):
                self._fence_expired(group)
            self._drop_orphan_sessions()
        for sp in self.partitions.share_partitions_all():
            with sp.lock:
                expired = sp.expire_locks()
                if expired:
                    self.partitions.write(sp)
            if expired:
                self._rm.fetch_purgatory.check_and_complete((sp.topic, sp.partition))

    def _drop_orphan_sessions(self) -> None:
        """Sessions of members gone from their group (a leave without the final
        request), idle for the group's session timeout: dropped, their records
        released."""
        now = time.monotonic()
        for session in self.sessions.sessions():
            group = self._groups.get(session.group_id)
            if group is not None and session.member_id in group.members:
                continue
            timeout_ms = self._group_value(session.group_id, "share.session.timeout.ms",
                                           self.config.session_timeout_ms)
            if now - session.last_used < timeout_ms / 1000:
                continue
            if self.sessions.discard(session):
                log.info("[GroupId %s] Removed the share session of member %s, gone from "
                         "the group.", escape(session.group_id), escape(session.member_id))
                if self.partitions.release(session.group_id, session.member_id):
                    self.notify_all(session.group_id)

    def notify_all(self, group_id: str) -> None:
        """Records of the group became available: parked ShareFetches re-check."""
        for sp in self.partitions.share_partitions(group_id):
            self._rm.fetch_purgatory.check_and_complete((sp.topic, sp.partition))

    # -- ShareGroupDescribe / ListGroups ---------------------------------------------------

    def describe(self, group_id: str) -> tuple[int, str | None, ShareGroup | None]:
        if self._taken_by_other_kind(group_id):
            return (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.",
                    None)
        with self._lock:
            group = self.group(group_id)
            if group is None:
                return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
            self._fence_expired(group)
            snapshot = replace(group, members={k: replace(m) for k, m in group.members.items()},
                               target=dict(group.target))
            return ErrorCode.NONE, None, snapshot

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group."""
        with self._lock:
            out = []
            for group in self.groups():
                self._fence_expired(group)
                out.append((group.group_id, group.state()))
            return out

    # -- the offset admin APIs -----------------------------------------------------------

    def start_offsets(self, group_id: str) -> dict[tuple[object, int], tuple[int, int]]:
        """(topic id, partition) -> (start offset, leader epoch) of every
        share-partition of the group with state."""
        out = {(t, p): (s.start_offset, s.leader_epoch)
               for (t, p), s in self.persister.states_of(group_id).items()}
        for sp in self.partitions.share_partitions(group_id):
            with sp.lock:
                out[(sp.topic_id, sp.partition)] = (sp.start_offset, sp.leader_epoch)
        return out

    def check_empty(self, group_id: str, create: bool = False) -> tuple[int, str | None]:
        """NONE if the share group exists and has no member (what the alter and
        delete APIs need); else GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP.  With
        ``create`` a missing share group is made, empty (AlterShareGroupOffsets
        since Kafka 4.2, KAFKA-19662: offsets can be set before any member joins)."""
        if self._taken_by_other_kind(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
        group = self.group(group_id)
        if group is None and create:
            try:
                self._claim(group_id)
            except ShareGroupError as e:   # another kind took the id meanwhile
                return e.error_code, str(e)
            group = self.group(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
        self._fence_expired(group)
        if group.members:
            return (ErrorCode.NON_EMPTY_GROUP,
                    "The group is not empty: the share group offsets can only be altered or "
                    "deleted when the group has no members.")
        return ErrorCode.NONE, None

    def alter_start_offset(self, group_id: str, topic_id, partition: int, offset: int) -> int:
        """AlterShareGroupOffsets for one partition (the group is empty): a new
        state epoch starting at ``offset``, nothing in flight."""
        current = self.persister.read_state(group_id, topic_id, partition)
        epoch = 0 if current is None else current.state_epoch + 1
        error = self.persister.write_state(group_id, topic_id, partition, epoch,
                                           0 if current is None else current.leader_epoch,
                                           offset, [])
        if not error:
            self.partitions.forget(group_id, topic_id)
        return error

    def delete_topic_state(self, group_id: str, topic_id, partitions: int) -> int:
        """DeleteShareGroupOffsets for one topic (the group is empty)."""
        for p in range(partitions):
            error = self.persister.delete_state(group_id, topic_id, p)
            if error:
                return error
        self.partitions.forget(group_id, topic_id)
        return ErrorCode.NONE

    def delete_group(self, group_id: str) -> int:
        """Remove an empty share group and all its state."""
        error, _ = self.check_empty(group_id)
        if error:
            return error
        for (topic_id, partition) in list(self.persister.states_of(group_id)):
            error = self.persister.delete_state(group_id, topic_id, partition)
            if error:
                return error
        self.partitions.forget(group_id)
        self.sessions.remove_group(group_id)
        with self._lock:
            self._groups.pop(group_id, None)
        return ErrorCode.NONE


def _validate(req: ShareHeartbeatRequest) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid (the member id is
    required at every epoch: from v1 the client makes it, KIP-1082's rule)."""
    def invalid(message: str) -> ShareGroupError:
        return ShareGroupError(ErrorCode.INVALID_REQUEST, message)
    if not req.group_id:
        raise invalid("GroupId can't be empty.")
    if req.rack_id == "":
        raise invalid("RackId can't be empty.")
    if not req.member_id:
        raise invalid("MemberId can't be empty.")
    if req.member_epoch == JOIN_EPOCH:
        if not req.subscribed_topic_names:
            raise invalid("SubscribedTopicNames must be set in first request.")
    elif req.member_epoch < LEAVE_EPOCH:
        raise invalid("MemberEpoch is invalid.")
