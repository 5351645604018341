"""GroupCoordinator: consumer groups with the classic rebalance protocol.

Kafka's ``GroupCoordinator`` / ``GroupMetadata`` for one broker.  A group
moves through five states::

    Empty --join--> PreparingRebalance --all joined/timeout--> CompletingRebalance
      ^                    ^      ^                                   |
      |                    |      +---- member joins/leaves/expires --+
      +-- last member      |                                          | leader's SyncGroup
          leaves/expires   +---------- member joins/leaves/expires -- Stable <-+
                                                                                |
    Dead: the group was deleted (not reachable here: groups live until restart).

A rebalance, step by step:

1. **JoinGroup.**  A new member (v4+) first gets MEMBER_ID_REQUIRED with an
   id to use (KIP-394); joining with it moves the group to
   PreparingRebalance.  Each member's JoinGroup is *parked* (``DEFERRED``):
   the handler thread is free and the connection stays muted.
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

Offsets: OffsetCommit from the current generation (or, for a group with no
members, from "simple" consumers with generation -1) is stored per
partition; OffsetFetch reads it back.  Offsets live in memory, like the logs.

Threads: every method runs on a handler thread or the purgatory timer; each
group has its own re-entrant lock (a completion can run inside a check that
already holds it).  Parked requests are answered with ``ctx.complete``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers import DEFERRED
from kafka_net.server.purgatory import DelayedOperation, Purgatory

log = logging.getLogger(__name__)

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_ctx: object = None          # a parked JoinGroup, answered on rebalance
    join_version: int = 0
    sync_ctx: object = None          # a parked SyncGroup, answered on assignment
    heartbeat_deadline: float = 0.0
    is_new: bool = True

    def metadata_for(self, protocol: str) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")


@dataclass
class Group:
    group_id: str
    state: str = EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, float] = field(default_factory=dict)  # id -> deadline
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    join_op: DelayedOperation | None = None

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_ctx is not None for m in self.members.values())


@dataclass(frozen=True)
class GroupConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    offset_metadata_max_bytes: int = 4096
    max_size: int = 2**31 - 1


class GroupCoordinator:
    def __init__(self, config: GroupConfig, topic_partitions) -> None:
        """``topic_partitions(topic)`` returns a partition count, or None if unknown."""
        self.config = config
        self._topic_partitions = topic_partitions
        self._groups: dict[str, Group] = {}
        self._lock = threading.Lock()
        self.purgatory = Purgatory("Rebalance")
        self._stopping = False   # set by complete_parked: nothing parks any more

    def start(self) -> None:
        self.purgatory.start()

    def shutdown(self) -> None:
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
                    if member.join_ctx is not None:
                        ctx, member.join_ctx = member.join_ctx, None
                        ctx.complete(_join_error(ErrorCode.NOT_COORDINATOR, member.member_id,
                                                 member.join_version))
                    if member.sync_ctx is not None:
                        ctx, member.sync_ctx = member.sync_ctx, None
                        ctx.complete(_sync_error(ErrorCode.NOT_COORDINATOR))

    def _group(self, group_id: str, create: bool = False) -> Group | None:
        with self._lock:
            group = self._groups.get(group_id)
            if group is None and create:
                group = self._groups[group_id] = Group(group_id)
            return group

    def groups(self) -> list[Group]:
        with self._lock:
            return list(self._groups.values())

    # -- JoinGroup ----------------------------------------------------------------------

    def join_group(self, ctx, req: dict):
        error = self._join_precheck(req)
        if error is not None:
            return _join_error(error, req["member_id"], ctx.api_version)
        group = self._group(req["group_id"], create=True)
        with group.lock:
            if self._stopping:
                return _join_error(ErrorCode.NOT_COORDINATOR, req["member_id"], ctx.api_version)
            if group.state == DEAD:
                return _join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, req["member_id"],
                                   ctx.api_version)
            if not self._protocols_compatible(group, req):
                return _join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req["member_id"],
                                   ctx.api_version)
            if not req["member_id"]:
                return self._join_new_member(ctx, group, req)
            return self._join_known_member(ctx, group, req)

    def _join_precheck(self, req: dict) -> int | None:
        if not req["group_id"]:
            return ErrorCode.INVALID_GROUP_ID
        timeout = req["session_timeout_ms"]
        if not (self.config.min_session_timeout_ms <= timeout
                <= self.config.max_session_timeout_ms):
            return ErrorCode.INVALID_SESSION_TIMEOUT
        return None

    @staticmethod
    def _protocols_compatible(group: Group, req: dict) -> bool:
        if not req["protocol_type"] or not req["protocols"]:
            return False
        if group.state == EMPTY or not group.members:
            return True
        if req["protocol_type"] != group.protocol_type:
            return False
        wanted = {p["name"] for p in req["protocols"]}
        return any(wanted & {n for n, _ in m.protocols} for m in group.members.values())

    def _join_new_member(self, ctx, group: Group, req: dict):
        if len(group.members) + len(group.pending_members) >= self.config.max_size:
            return _join_error(ErrorCode.GROUP_MAX_SIZE_REACHED, "", ctx.api_version)
        member_id = f"{ctx.request.header.client_id or 'member'}-{uuid.uuid4()}"
        if ctx.api_version >= 4:
            # KIP-394: hand out the id first; the member must rejoin with it.
            deadline = time.monotonic() + req["session_timeout_ms"] / 1000
            group.pending_members[member_id] = deadline
            self._schedule_expiry(group, member_id, req["session_timeout_ms"])
            return _join_error(ErrorCode.MEMBER_ID_REQUIRED, member_id, ctx.api_version)
        return self._add_member_and_rebalance(ctx, group, req, member_id)

    def _join_known_member(self, ctx, group: Group, req: dict):
        member_id = req["member_id"]
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            return self._add_member_and_rebalance(ctx, group, req, member_id)
        member = group.members.get(member_id)
        if member is None:
            return _join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id, ctx.api_version)
        same = _protocols(req) == member.protocols
        if group.state == COMPLETING and same:
            # It lost our JoinGroup answer: give it again, no new rebalance.
            return self._join_answer(group, member, ctx.api_version)
        if group.state == STABLE and same and member_id != group.leader_id:
            return self._join_answer(group, member, ctx.api_version)
        self._update_member(member, ctx, req)
        if group.state != PREPARING:
            self._prepare_rebalance(group, f"member {member_id} rejoined")
        self._try_complete_join(group)
        return DEFERRED

    def _add_member_and_rebalance(self, ctx, group: Group, req: dict, member_id: str):
        member = Member(
            member_id, req["group_instance_id"], ctx.request.header.client_id,
            f"/{ctx.request.client_address[0]}", req["session_timeout_ms"],
            req["rebalance_timeout_ms"] if req["rebalance_timeout_ms"] > 0
            else req["session_timeout_ms"], req["protocol_type"], _protocols(req))
        if not group.members:
            group.protocol_type = req["protocol_type"]
        group.members[member_id] = member
        self._update_member(member, ctx, req)
        if group.state != PREPARING:
            self._prepare_rebalance(group, f"member {member_id} joined")
        self._try_complete_join(group)
        return DEFERRED

    @staticmethod
    def _update_member(member: Member, ctx, req: dict) -> None:
        member.protocols = _protocols(req)
        member.session_timeout_ms = req["session_timeout_ms"]
        if req["rebalance_timeout_ms"] > 0:
            member.rebalance_timeout_ms = req["rebalance_timeout_ms"]
        if member.join_ctx is not None and member.join_ctx is not ctx:
            # The member joined again, necessarily from another connection (the
            # first one is muted while its JoinGroup is parked): the client gave
            # up on the first request.  Answer it anyway so that its connection
            # is unmuted; the new request is the one that counts.
            member.join_ctx.complete(_join_error(ErrorCode.REBALANCE_IN_PROGRESS,
                                                 member.member_id, member.join_version))
        member.join_ctx = ctx
        member.join_version = ctx.api_version

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state == COMPLETING:
            self._fail_pending_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
        old_state = group.state
        group.state = PREPARING
        log.info("Preparing to rebalance group %s in state %s with old generation %d (%s)",
                 escape(group.group_id), old_state, group.generation_id, escape(reason))
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if old_state == EMPTY and self.config.initial_rebalance_delay_ms > 0:
            op = _InitialDelayedJoin(self, group, min(
                self.config.initial_rebalance_delay_ms, timeout))
        else:
            op = _DelayedJoin(self, group, timeout)
        group.join_op = op
        self.purgatory.try_complete_else_watch(op, [("join", group.group_id)])

    def _try_complete_join(self, group: Group) -> None:
        self.purgatory.check_and_complete(("join", group.group_id))

    def _complete_join(self, group: Group) -> None:
        """The rebalance's join phase is over: start the next generation."""
        with group.lock:
            if group.state != PREPARING:
                return
            for member in [m for m in group.members.values() if m.join_ctx is None]:
                log.info("Member %s of group %s did not rejoin in time; removing it",
                         escape(member.member_id), escape(group.group_id))
                self._remove_member(group, member)
            # Pending members (given an id, not yet rejoined) stay pending: if they
            # rejoin later, that starts the next rebalance.
            group.generation_id += 1
            if not group.members:
                group.state, group.protocol_name, group.leader_id = EMPTY, None, None
                log.info("Group %s with generation %d is now empty",
                         escape(group.group_id), group.generation_id)
                return
            group.protocol_name = _select_protocol(group)
            if group.leader_id not in group.members:
                group.leader_id = next(iter(group.members))
            group.state = COMPLETING
            log.info("Stabilized group %s generation %d (protocol %s, %d members)",
                     escape(group.group_id), group.generation_id, escape(group.protocol_name),
                     len(group.members))
            for member in group.members.values():
                ctx, member.join_ctx = member.join_ctx, None
                member.is_new = False
                ctx.complete(self._join_answer(group, member, member.join_version))
                self._schedule_expiry(group, member.member_id, member.session_timeout_ms)

    def _join_answer(self, group: Group, member: Member, version: int) -> dict:
        is_leader = member.member_id == group.leader_id
        return {
            "error_code": ErrorCode.NONE, "generation_id": group.generation_id,
            "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
            "leader": group.leader_id or "", "skip_assignment": False,
            "member_id": member.member_id,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "metadata": m.metadata_for(group.protocol_name)}
                for m in group.members.values()] if is_leader else [],
        }

    # -- SyncGroup ----------------------------------------------------------------------

    def sync_group(self, ctx, req: dict):
        group = self._group(req["group_id"])
        if group is None:
            return _sync_error(ErrorCode.UNKNOWN_MEMBER_ID)
        with group.lock:
            member = group.members.get(req["member_id"])
            if member is None:
                return _sync_error(ErrorCode.UNKNOWN_MEMBER_ID)
            if req["generation_id"] != group.generation_id:
                return _sync_error(ErrorCode.ILLEGAL_GENERATION)
            if (req.get("protocol_type") not in (None, group.protocol_type)
                    or req.get("protocol_name") not in (None, group.protocol_name)):
                return _sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if group.state == PREPARING:
                return _sync_error(ErrorCode.REBALANCE_IN_PROGRESS)
            self._heartbeat(group, member)
            if group.state == STABLE:
                return self._sync_answer(group, member)
            if self._stopping:
                return _sync_error(ErrorCode.NOT_COORDINATOR)
            member.sync_ctx = ctx
            if member.member_id == group.leader_id:
                self._apply_assignment(group, req["assignments"])
            return DEFERRED

    def _apply_assignment(self, group: Group, assignments: list[dict]) -> None:
        given = {a["member_id"]: a["assignment"] for a in assignments}
        for member in group.members.values():
            member.assignment = given.get(member.member_id, b"")
        group.state = STABLE
        log.info("Assignment received from leader %s for group %s generation %d",
                 escape(group.leader_id), escape(group.group_id), group.generation_id)
        for member in group.members.values():
            if member.sync_ctx is not None:
                ctx, member.sync_ctx = member.sync_ctx, None
                ctx.complete(self._sync_answer(group, member))

    @staticmethod
    def _sync_answer(group: Group, member: Member) -> dict:
        return {"error_code": ErrorCode.NONE, "protocol_type": group.protocol_type,
                "protocol_name": group.protocol_name, "assignment": member.assignment}

    def _fail_pending_syncs(self, group: Group, error: int) -> None:
        for member in group.members.values():
            if member.sync_ctx is not None:
                ctx, member.sync_ctx = member.sync_ctx, None
                ctx.complete(_sync_error(error))

    # -- Heartbeat, LeaveGroup, expiry --------------------------------------------------

    def heartbeat(self, req: dict) -> int:
        group = self._group(req["group_id"])
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        with group.lock:
            if group.state == DEAD:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            member = group.members.get(req["member_id"])
            if group.state == EMPTY or member is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if req["generation_id"] != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            self._heartbeat(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS if group.state == PREPARING else ErrorCode.NONE

    def _heartbeat(self, group: Group, member: Member) -> None:
        self._schedule_expiry(group, member.member_id, member.session_timeout_ms)

    def _schedule_expiry(self, group: Group, member_id: str, timeout_ms: int) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        member = group.members.get(member_id)
        if member is not None:
            member.heartbeat_deadline = deadline
        # Timer only: each heartbeat arms a new one, and an expiry re-checks the
        # member's current deadline, so stale timers are harmless.
        self.purgatory.schedule(_DelayedHeartbeat(self, group, member_id, timeout_ms))

    def _expire(self, group: Group, member_id: str) -> None:
        with group.lock:
            if member_id in group.pending_members:
                if time.monotonic() >= group.pending_members[member_id]:
                    del group.pending_members[member_id]
                    log.info("Pending member %s of group %s expired",
                             escape(member_id), escape(group.group_id))
                    self._try_complete_join(group)
                return
            member = group.members.get(member_id)
            if member is None or time.monotonic() < member.heartbeat_deadline:
                return  # a later heartbeat moved the deadline
            if member.join_ctx is not None or member.sync_ctx is not None:
                # Parked in a rebalance: kept alive (the rebalance timeout, or the
                # leader's expiry, governs it); look again one session later.
                self._schedule_expiry(group, member_id, member.session_timeout_ms)
                return
            log.info("Member %s in group %s has failed (no heartbeat for %d ms); removing it",
                     escape(member_id), escape(group.group_id), member.session_timeout_ms)
            self._remove_member_and_rebalance(group, member, "session timeout")

    def leave_group(self, req: dict, version: int) -> dict:
        leaving = ([(req["member_id"], None)] if version < 3 else
                   [(m["member_id"], m["group_instance_id"]) for m in req["members"]])
        group = self._group(req["group_id"])
        results = []
        for member_id, instance_id in leaving:
            error = ErrorCode.UNKNOWN_MEMBER_ID
            if group is not None:
                with group.lock:
                    member = group.members.get(member_id)
                    if member is not None:
                        self._remove_member_and_rebalance(group, member, "left the group")
                        error = ErrorCode.NONE
                    elif group.pending_members.pop(member_id, None) is not None:
                        self._try_complete_join(group)
                        error = ErrorCode.NONE
            results.append({"member_id": member_id, "group_instance_id": instance_id,
                            "error_code": error})
        top = results[0]["error_code"] if version < 3 else ErrorCode.NONE
        return {"throttle_time_ms": 0, "error_code": top, "members": results}

    def _remove_member_and_rebalance(self, group: Group, member: Member, reason: str) -> None:
        self._remove_member(group, member)
        if group.state in (STABLE, COMPLETING):
            self._prepare_rebalance(group, f"member {member.member_id}: {reason}")
        self._try_complete_join(group)

    def _remove_member(self, group: Group, member: Member) -> None:
        group.members.pop(member.member_id, None)
        # Answer whatever of it is parked, so those connections are unmuted.
        if member.join_ctx is not None:
            member.join_ctx.complete(_join_error(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id,
                                                 member.join_version))
        if member.sync_ctx is not None:
            member.sync_ctx.complete(_sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
        member.join_ctx = member.sync_ctx = None

    # -- offsets ------------------------------------------------------------------------

    def commit_offsets(self, req: dict, version: int) -> dict:
        group_id = req["group_id"]
        generation = req["generation_id_or_member_epoch"] if version >= 1 else -1
        error = self._commit_check(group_id, req["member_id"], generation)
        topics = []
        group = self._group(group_id, create=error is None)
        for topic in req["topics"]:
            parts = []
            for p in topic["partitions"]:
                code = error if error is not None else self._commit_one(group, topic["name"], p)
                parts.append({"partition_index": p["partition_index"], "error_code": code})
            topics.append({"name": topic["name"], "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}

    def _commit_check(self, group_id: str, member_id: str, generation: int) -> int | None:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self._group(group_id)
        if group is None:
            return None if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        with group.lock:
            if generation < 0 and group.state == EMPTY:
                return None  # a "simple" consumer using assign(), not subscribe()
            if group.state == COMPLETING:
                return ErrorCode.REBALANCE_IN_PROGRESS
            if member_id not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            return None

    def _commit_one(self, group: Group, topic: str, p: dict) -> int:
        count = self._topic_partitions(topic)
        if count is None or not 0 <= p["partition_index"] < count:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        metadata = p["committed_metadata"]
        if metadata is not None and len(metadata.encode()) > self.config.offset_metadata_max_bytes:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE
        with group.lock:
            group.offsets[(topic, p["partition_index"])] = (
                p["committed_offset"], p.get("committed_leader_epoch", -1), metadata)
        return ErrorCode.NONE

    def fetch_offsets(self, group_id: str, topics: list[dict] | None) -> list[dict]:
        """Committed offsets; ``topics`` None means every committed partition."""
        group = self._group(group_id)
        offsets = {} if group is None else dict(group.offsets)
        if topics is None:
            names = sorted({t for t, _ in offsets})
            topics = [{"name": n, "partition_indexes": sorted(
                p for t, p in offsets if t == n)} for n in names]
        out = []
        for topic in topics:
            parts = []
            for index in topic["partition_indexes"]:
                offset, epoch, metadata = offsets.get((topic["name"], index), (-1, -1, ""))
                parts.append({"partition_index": index, "committed_offset": offset,
                              "committed_leader_epoch": epoch, "metadata": metadata,
                              "error_code": ErrorCode.NONE})
            out.append({"name": topic["name"], "partitions": parts})
        return out

    def delete_topic_offsets(self, topic: str) -> None:
        for group in self.groups():
            with group.lock:
                for key in [k for k in group.offsets if k[0] == topic]:
                    del group.offsets[key]

    # -- describe / list ------------------------------------------------------------------

    def describe(self, group_id: str) -> dict:
        group = self._group(group_id)
        if group is None:
            return {"error_code": ErrorCode.NONE, "group_id": group_id, "group_state": DEAD,
                    "protocol_type": "", "protocol_data": "", "members": []}
        with group.lock:
            stable = group.state == STABLE
            return {
                "error_code": ErrorCode.NONE, "group_id": group_id, "group_state": group.state,
                "protocol_type": group.protocol_type or "",
                "protocol_data": (group.protocol_name or "") if stable else "",
                "members": [{
                    "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id, "client_host": m.client_host,
                    "member_metadata": m.metadata_for(group.protocol_name) if stable else b"",
                    "member_assignment": m.assignment if stable else b"",
                } for m in group.members.values()],
            }


class _DelayedJoin(DelayedOperation):
    def __init__(self, coordinator: GroupCoordinator, group: Group, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator, self.group = coordinator, group

    def try_complete(self) -> bool:
        with self.group.lock:
            superseded = self.group.join_op is not self
            if superseded or self.group.all_joined():
                return self.force_complete()
            return False

    def on_complete(self) -> None:
        if self.group.join_op is self:
            self.coordinator._complete_join(self.group)


class _InitialDelayedJoin(_DelayedJoin):
    """The first rebalance of an empty group waits its full delay, so that
    consumers starting together join one generation."""

    def try_complete(self) -> bool:
        return False


class _DelayedHeartbeat(DelayedOperation):
    def __init__(self, coordinator, group: Group, member_id: str, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator, self.group, self.member_id = coordinator, group, member_id

    def try_complete(self) -> bool:
        return False  # only its deadline matters; _expire re-checks the member

    def on_complete(self) -> None:
        self.coordinator._expire(self.group, self.member_id)


def _protocols(req: dict) -> list[tuple[str, bytes]]:
    return [(p["name"], p["metadata"]) for p in req["protocols"]]


def _select_protocol(group: Group) -> str:
    """A protocol every member supports, by members' votes for their first choice."""
    members = list(group.members.values())
    common = set.intersection(*({n for n, _ in m.protocols} for m in members))
    votes: dict[str, int] = {}
    for m in members:
        choice = next(n for n, _ in m.protocols if n in common)
        votes[choice] = votes.get(choice, 0) + 1
    return max(sorted(votes), key=votes.__getitem__)


def _join_error(error: int, member_id: str, version: int) -> dict:
    # protocol_name became nullable in v7; before that Kafka sends "" (its
    # UNKNOWN_PROTOCOL_NAME) where there is no protocol.
    return {"error_code": error, "generation_id": -1, "protocol_type": None,
            "protocol_name": None if version >= 7 else "", "leader": "",
            "member_id": member_id, "members": []}


def _sync_error(error: int) -> dict:
    return {"error_code": error, "protocol_type": None, "protocol_name": None,
            "assignment": b""}
