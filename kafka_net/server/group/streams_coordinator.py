"""StreamsGroupHeartbeat and StreamsGroupDescribe: the streams rebalance protocol
(KIP-1071), as Kafka's GroupMetadataManager runs it for one broker.

One heartbeat, in Kafka's order (``streamsGroupHeartbeat``):

1. validate the request (INVALID_REQUEST with Kafka's messages; a joining
   member's topology: STREAMS_INVALID_TOPOLOGY);
2. find the member: ``member_epoch`` 0 joins (making the group if needed),
   otherwise the epoch must be the member's, or its previous one while it
   owns no task it should not (FENCED_MEMBER_EPOCH);
3. the topology (Kafka's maybeUpdateTopology): the first joining member's
   initializes the group's (a StreamsGroupTopology record); a later member
   with an older topology epoch joins with a STALE_TOPOLOGY status, one with
   another topology at the same or a newer epoch gets INVALID_REQUEST
   "Topology updates are not supported yet." (Kafka 4.2 defines
   STREAMS_INVALID_TOPOLOGY_EPOCH and STREAMS_TOPOLOGY_FENCED but its
   coordinator returns neither);
4. record the member's metadata (process, endpoint, tags, ...); a new member,
   changed metadata, a change of the topology's topics (the metadata hash) or
   a topology validated for the first time bumps the **group epoch**;
   owned tasks outside a ready topology get INVALID_REQUEST;
5. the topology is *configured* against the topics
   (:func:`~kafka_net.server.group.streams_group.configure`); internal topics
   it lacks are handed to the handler to create (Kafka's KafkaApis creates
   them with the heartbeat's answer), and the reason the topology is not
   ready is reported in ``status``;
6. when the group epoch ran ahead, the sticky assignor
   (:mod:`~kafka_net.server.group.streams_assignor`) computes a new target -
   except during the initial rebalance delay of a new (previously empty)
   group (``group.streams.initial.rebalance.delay.ms``): its members get an
   empty target at epoch 1 and the status ASSIGNMENT_DELAYED, and a purgatory
   timer computes the first target when the delay ends;
7. reconcile the member towards its target (:func:`reconcile`): it keeps its
   epoch until it has revoked the active tasks the target takes away, and
   gains an active task only once no other member owns it;
8. answer with its epoch, the heartbeat interval, the status, its tasks when
   it joined or they changed and, when the group's endpoint information epoch
   (bumped when a member with a user endpoint gets other tasks) differs from
   the member's, which partitions each user endpoint serves.

Warm-up tasks (Kafka 4.4): not derived.  In Kafka 4.4 warm-ups are not the
assignor's but the coordinator's job: an ``AssignmentRefiner`` would turn the
target into an intermediate assignment in which a stateful task moving to a
member without its state stays with its processing owner while the new owner
warms it up, within ``streams.num.warmup.replicas``, until its lag is at most
``streams.acceptable.recovery.lag``.  Kafka's broker default is the no-op
refiner; the real one is still being built (an internal, testing-only broker
config selects it, and its ``refine`` hands the target back unchanged until
the derivation is wired in), so a 4.4 broker hands out no warm-up task and
neither does this one: every ``warmup_tasks`` it sends is empty.  The two
group configs are accepted, validated and described, and the lag is sent to
the members.

A member silent for ``group.streams.session.timeout.ms`` is fenced; one that
does not revoke within its rebalance timeout too.  Leaving (epoch -1) or
fencing bumps the group epoch so the others get its tasks.  Static members
(``instance_id``) get INVALID_REQUEST "Static membership is not yet supported."
(Kafka's streams coordinator has no static members either: it throws before
using one), and source topic regexes get Kafka's INVALID_REQUEST "Regular
expressions for source topics are not supported yet."
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group import streams_assignor
# StreamsGroupConfig lives with GroupConfig: the broker builds it at every start,
# the streams modules only on first use (GroupCoordinator.streams).
from kafka_net.server.group.group import Group, StreamsGroupConfig
from kafka_net.server.group.modern_group import (
    JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, GroupKind, ModernGroups, member_epoch_error,
    static_member_error)
from kafka_net.server.group.registry import GroupRegistry
from kafka_net.server.group.streams_group import (
    ASSIGNMENT_DELAYED, ASSIGNMENT_DELAYED_DETAIL, EMPTY_TASKS, SHUTDOWN_APPLICATION, STALE_TOPOLOGY, InvalidTopology, MemberState,
    StreamsGroup, StreamsGroupMember, TasksTuple, all_tasks, configure, validate_topology)
from kafka_net.server.group_config_repository import group_config_value
from kafka_net.server.purgatory import DelayedOperation

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class StreamsHeartbeatResult:
    """The coordinator's answer to a StreamsGroupHeartbeat: an error, or the member's
    epoch, tasks and status."""

    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    status: list[tuple[int, str]] | None = None
    tasks: TasksTuple | None = None
    endpoint_information_epoch: int = 0
    endpoints: list[dict] | None = None
    # internal topics to create: name -> (partitions, replication factor, configs)
    to_create: dict = field(default_factory=dict)
    acceptable_recovery_lag: int = 0
    task_offset_interval_ms: int = 0
    # KIP-1331 (v1): the broker holds no description of the member's topology yet.
    topology_description_required: bool = False


class StreamsError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def _invalid(message: str) -> StreamsError:
    return StreamsError(ErrorCode.INVALID_REQUEST, message)


def validate_request(req: dict) -> None:
    """Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid (and the features 4.2
    does not serve)."""
    for name, label in (("member_id", "MemberId"), ("group_id", "GroupId"),
                        ("instance_id", "InstanceId"), ("rack_id", "RackId")):
        if req[name] is not None and not req[name].strip():
            raise _invalid(f"{label} can't be empty.")
    topology = req["topology"]
    if topology is not None and any(s["source_topic_regex"] for s in topology["subtopologies"]):
        raise _invalid("Regular expressions for source topics are not supported yet.")
    epoch = req["member_epoch"]
    owned = (req["active_tasks"], req["standby_tasks"], req["warmup_tasks"])
    if epoch == JOIN_EPOCH:
        if req["rebalance_timeout_ms"] == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        for tasks, label in zip(owned, ("ActiveTasks", "StandbyTasks", "WarmupTasks")):
            if tasks:
                raise _invalid(f"{label} must be empty when (re-)joining.")
        if topology is None:
            raise _invalid("Topology must be non-null when (re-)joining.")
        if not req["process_id"]:
            raise _invalid("ProcessId can't be empty.")
        try:
            validate_topology(topology)
        except InvalidTopology as e:
            raise StreamsError(ErrorCode.STREAMS_INVALID_TOPOLOGY, str(e)) from None
    elif epoch == STATIC_LEAVE_EPOCH and req["instance_id"] is None:
        raise _invalid("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise _invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    if any(t is not None for t in owned) and any(t is None for t in owned):
        raise _invalid("If one task-type is non-null, all must be non-null.")
    if epoch != JOIN_EPOCH and topology is not None:
        raise _invalid("Topology can only be provided when (re-)joining.")


def _tasks_of(wire: list[dict] | None):
    return None if wire is None else {t["subtopology_id"]: set(t["partitions"]) for t in wire}


STREAMS = GroupKind(
    "streams", lambda group: group.streams, "tasks", StreamsError,
    "Streams group {} not found.",
    "[GroupId %s][MemberId %s] Member fenced from the streams group because %s.")


class StreamsGroupCoordinator:
    def __init__(self, registry: GroupRegistry, purgatory, topics,
                 config: StreamsGroupConfig) -> None:
        """``registry``: the one group registry; ``purgatory``: the coordinator's
        "Rebalance" purgatory (member and initial-delay timers); ``topics``: the
        MetadataCache."""
        self._registry = registry
        self._purgatory = purgatory
        self._topics = topics
        self.config = config
        self.group_configs = None   # a GroupConfigRepository (set by the broker)
        # What consumer and streams groups share (lookup, member sessions, describe).
        self._modern = ModernGroups(registry, purgatory, STREAMS,
                                    lambda group, sg, member: self._fence(sg, member),
                                    registry.store_streams_group)

    # -- StreamsGroupHeartbeat ---------------------------------------------------------

    def heartbeat(self, req: dict, client_id: str = "", client_host: str = ""
                  ) -> StreamsHeartbeatResult:
        try:
            validate_request(req)
            group = self._streams_group(req["group_id"],
                                        create=req["member_epoch"] == JOIN_EPOCH)
            with group.lock:
                try:
                    return self._heartbeat(group, group.streams, req, client_id, client_host)
                finally:
                    self._registry.store_streams_group(group, req["member_id"])
        except StreamsError as e:
            return StreamsHeartbeatResult(e.error_code, str(e))

    def _streams_group(self, group_id: str, create: bool) -> Group:
        group = self._modern.find(group_id, create)
        with group.lock:
            if group.streams is None:
                if group.members or group.modern is not None or not create:
                    raise StreamsError(ErrorCode.GROUP_ID_NOT_FOUND,
                                       self._modern.not_this_kind(group_id))
                group.streams = StreamsGroup(group_id)   # an empty classic group (offsets)
        return group

    def _heartbeat(self, group: Group, sg: StreamsGroup, req: dict, client_id: str,
                   client_host: str) -> StreamsHeartbeatResult:
        if req["member_epoch"] in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, sg, req)
        owned = None if req["active_tasks"] is None else TasksTuple(
            _tasks_of(req["active_tasks"]), _tasks_of(req["standby_tasks"]),
            _tasks_of(req["warmup_tasks"]))
        member = self._member(sg, req, owned)
        updated = self._updated(member, req, client_id, client_host)
        # Checked before anything changes: a refused heartbeat writes nothing (Kafka).
        self._check_topology(sg, req["topology"], updated.member_id)
        if sg.topology is None:
            sg.topology = req["topology"]
            log.info("[GroupId %s][MemberId %s] Member initialized the topology with epoch %d",
                     escape(sg.group_id), escape(updated.member_id), sg.topology["epoch"])
        bump = self._configure(sg, updated.member_id)
        validated = sg.topology["epoch"] if sg.configured.is_ready() else -1
        if validated != -1:
            for tasks in () if owned is None else owned.kinds():
                _check_tasks(sg.configured.task_counts, tasks)
        # A new member or changed metadata, a new metadata hash (above) or a newly
        # validated topology bump the group epoch (Kafka's streamsGroupHeartbeat).
        bump |= _metadata(updated) != _metadata(member) or member.member_id not in sg.members
        bump |= validated != sg.validated_topology_epoch
        sg.validated_topology_epoch = validated
        configs = self._assignment_configs(sg.group_id)
        if not bump and configs != sg.assignment_configs:
            log.info("[GroupId %s][MemberId %s] Assignment configurations changed to %s. "
                     "Triggering rebalance.", escape(sg.group_id), escape(updated.member_id),
                     configs)
            bump = True
        if bump:
            sg.assignment_configs = configs
        if not sg.members and req["member_epoch"] == JOIN_EPOCH:
            self._maybe_delay_first_assignment(group, sg)
        sg.members[updated.member_id] = updated
        if bump:
            sg.group_epoch += 1
            log.info("[GroupId %s][MemberId %s] Bumped streams group epoch to %d with "
                     "validated topology epoch %d.", escape(sg.group_id),
                     escape(updated.member_id), sg.group_epoch, validated)
        delayed = False
        target_epoch, target = sg.assignment_epoch, sg.target.get(updated.member_id, EMPTY_TASKS)
        if sg.group_epoch > sg.assignment_epoch:
            if sg.initial_delay_deadline is not None:
                # The first members of a new group get nothing until the delay ends
                # (more may join meanwhile), at epoch 1 at least (Kafka's initial delay).
                delayed = True
                target_epoch, target = max(1, sg.assignment_epoch), EMPTY_TASKS
            else:
                self._update_target_assignment(sg)
                target_epoch = sg.assignment_epoch
                target = sg.target.get(updated.member_id, EMPTY_TASKS)
        reconciled = reconcile(updated, target_epoch, target, owned,
                               lambda s, p: sg.task_owners(s, p, updated.member_id))
        reconciled = self._arm_timers(group, reconciled)
        sg.members[reconciled.member_id] = reconciled
        if req["shutdown_application"]:
            sg.shutdown_requested_by = reconciled.member_id
        # Tasks go out on a join or when they changed; then a member with an
        # endpoint moves the endpoint information epoch.
        send = (req["member_epoch"] == JOIN_EPOCH
                or reconciled.assigned.normalized() != member.assigned.normalized())
        if send and reconciled.user_endpoint is not None:
            sg.endpoint_information_epoch += 1
        return self._answer(sg, reconciled, req, send, delayed)

    def _assignment_configs(self, group_id: str) -> dict[str, str]:
        """Kafka's streamsGroupAssignmentConfigs."""
        standbys = group_config_value(self.group_configs, group_id,
                                      "streams.num.standby.replicas",
                                      self.config.num_standby_replicas)
        return {"num.standby.replicas": str(standbys)}

    def _maybe_delay_first_assignment(self, group: Group, sg: StreamsGroup) -> None:
        delay_ms = group_config_value(self.group_configs, sg.group_id,
                                      "streams.initial.rebalance.delay.ms",
                                      self.config.initial_rebalance_delay_ms)
        if delay_ms <= 0:
            return
        sg.initial_delay_deadline = deadline = time.monotonic() + delay_ms / 1000
        self._purgatory.schedule(
            DelayedInitialAssignment(self, group, deadline, delay_ms))

    def end_initial_delay(self, group: Group, deadline: float) -> None:
        """The initial delay of a group ended: compute its first target assignment,
        which its members pick up at their next heartbeats."""
        with group.lock:
            sg = group.streams
            if sg is None or sg.initial_delay_deadline != deadline:
                return   # deleted, or emptied and started over with another delay
            sg.initial_delay_deadline = None
            if sg.members and sg.group_epoch > sg.assignment_epoch:
                self._update_target_assignment(sg)
            self._registry.store_streams_group(group)

    def _member(self, sg: StreamsGroup, req: dict, owned: TasksTuple | None
                ) -> StreamsGroupMember:
        if req["instance_id"] is not None:
            return self._static_member(sg, req, owned)
        member_id = req["member_id"]
        member = sg.members.get(member_id)
        if req["member_epoch"] == JOIN_EPOCH:
            max_size = self.config.max_size
            if len(sg.members) >= max_size:   # a rejoining member too, as Kafka checks
                raise StreamsError(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The streams group has reached its maximum capacity of {max_size} "
                    "members.")
            if member is None:
                log.info("[GroupId %s][MemberId %s] Member joins the streams group.",
                         escape(sg.group_id), escape(member_id))
                return StreamsGroupMember(member_id)
            return member
        if member is None:
            raise StreamsError(ErrorCode.UNKNOWN_MEMBER_ID,
                               f"Member {member_id} is not a member of group {sg.group_id}.")
        _check_epoch(member, req["member_epoch"], owned)
        return member

    def _static_member(self, sg: StreamsGroup, req: dict, owned: TasksTuple | None
                       ) -> StreamsGroupMember:
        """A member with an instance id (static membership, as KIP-848's): a restarted
        instance (new member id) takes the place of the one that left with epoch -2,
        its tasks and its place in the target assignment, with no rebalance; an
        instance still in the group cannot be replaced (UNRELEASED_INSTANCE_ID); an
        old member id of a replaced instance is fenced (FENCED_INSTANCE_ID)."""
        member_id, instance_id = req["member_id"], req["instance_id"]
        existing = sg.member_by_instance(instance_id)
        joining = req["member_epoch"] == JOIN_EPOCH
        if joining and existing is not None and existing.member_id == member_id:
            return existing
        error = static_member_error(existing, member_id, instance_id, joining)
        if error is not None:
            raise StreamsError(*error)
        if not joining:
            _check_epoch(existing, req["member_epoch"], owned)
            return existing
        if existing is None:
            if len(sg.members) >= self.config.max_size:
                raise StreamsError(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    "The streams group has reached its maximum capacity of "
                    f"{self.config.max_size} members.")
            return StreamsGroupMember(member_id, instance_id=instance_id)
        return sg.replace_static_member(existing, member_id)

    def _check_topology(self, sg: StreamsGroup, topology: dict | None, member_id: str) -> None:
        """A joining member's topology against the group's (Kafka's maybeUpdateTopology):
        an older epoch is taken as stale (the member is told STALE_TOPOLOGY), another
        topology at the same or a newer epoch is refused: 4.2 does not update a
        group's topology."""
        if topology is None or sg.topology is None:
            return
        if sg.topology["epoch"] > topology["epoch"]:
            log.info("[GroupId %s][MemberId %s] Member joined with stale topology epoch %d",
                     escape(sg.group_id), escape(member_id), topology["epoch"])
        elif topology != sg.topology:
            raise _invalid("Topology updates are not supported yet.")

    @staticmethod
    def _updated(member: StreamsGroupMember, req: dict, client_id: str,
                 client_host: str) -> StreamsGroupMember:
        changes = {"client_id": client_id, "client_host": client_host}
        if req["rack_id"] is not None:
            changes["rack_id"] = req["rack_id"]
        if req["rebalance_timeout_ms"] != -1:
            changes["rebalance_timeout_ms"] = req["rebalance_timeout_ms"]
        if req["topology"] is not None:
            changes["topology_epoch"] = req["topology"]["epoch"]
        if req["process_id"] is not None:
            changes["process_id"] = req["process_id"]
        if req["user_endpoint"] is not None:
            changes["user_endpoint"] = (req["user_endpoint"]["host"],
                                        req["user_endpoint"]["port"])
        if req["client_tags"] is not None:
            changes["client_tags"] = {t["key"]: t["value"] for t in req["client_tags"]}
        if req["task_offsets"] is not None:
            changes["task_offsets"] = list(req["task_offsets"])
        if req["task_end_offsets"] is not None:
            changes["task_end_offsets"] = list(req["task_end_offsets"])
        return replace(member, **changes)

    def _configure(self, sg: StreamsGroup, member_id: str = "") -> bool:
        """Configure the topology against the topics when they or it changed (Kafka
        does on a new metadata hash); True if the metadata hash changed."""
        version = self._topics.topics_version
        if sg.topology is None or (sg.configured is not None
                                   and sg.configured_version == version):
            return False
        configured = self._configured(sg.topology)
        sg.configured, sg.configured_version = configured, version
        metadata_hash = _hash(configured)
        changed = metadata_hash != sg.metadata_hash
        if changed:
            log.info("[GroupId %s][MemberId %s] Computed new metadata hash: %d.",
                     escape(sg.group_id), escape(member_id), metadata_hash)
        sg.metadata_hash = metadata_hash
        if configured.status is not None:
            log.info("[GroupId %s] The topology of epoch %d is not ready: %s",
                     escape(sg.group_id), configured.epoch, escape(configured.status[1]))
        return changed

    def _configured(self, topology: dict):
        def partitions(name: str) -> int | None:
            meta = self._topics.topic(name)
            return None if meta is None else meta.num_partitions
        return configure(topology, partitions)

    def _update_target_assignment(self, sg: StreamsGroup) -> None:
        configured = sg.configured
        tasks = all_tasks(configured.task_counts) if configured and configured.is_ready() else []
        specs = {m.member_id: streams_assignor.MemberSpec(
                     m.process_id, sg.target.get(m.member_id, EMPTY_TASKS))
                 for m in sg.members.values()}
        standbys = int(sg.assignment_configs.get(
            "num.standby.replicas", self.config.num_standby_replicas))
        stateful = configured.stateful if configured is not None else frozenset()
        sg.target = streams_assignor.assign(specs, tasks, standbys, stateful)
        sg.assignment_epoch = sg.group_epoch
        log.info("[GroupId %s] Computed a new target assignment for epoch %d with %d task(s) "
                 "for %d member(s).", escape(sg.group_id), sg.assignment_epoch, len(tasks),
                 len(specs))

    def _answer(self, sg: StreamsGroup, m: StreamsGroupMember, req: dict,
                send_tasks: bool, delayed: bool = False) -> StreamsHeartbeatResult:
        status = []   # in Kafka's order
        if m.topology_epoch < sg.topology_epoch():
            status.append((STALE_TOPOLOGY, f"The member's topology epoch {m.topology_epoch} "
                           f"is behind the group's topology epoch {sg.topology_epoch()}."))
        if delayed:
            status.append((ASSIGNMENT_DELAYED, ASSIGNMENT_DELAYED_DETAIL))
        configured = sg.configured
        to_create = {}
        if configured is not None and configured.status is not None:
            status.append(configured.status)
            to_create = dict(configured.to_create)
        if sg.shutdown_requested_by is not None:
            status.append((SHUTDOWN_APPLICATION, f"Streams group member "
                           f"{sg.shutdown_requested_by} encountered a fatal error and "
                           "requested a shutdown for the entire application."))
        endpoints = None
        if sg.endpoint_information_epoch != req["endpoint_information_epoch"]:
            endpoints = self._endpoints(sg, m)
        return StreamsHeartbeatResult(
            member_id=m.member_id, member_epoch=m.member_epoch,
            heartbeat_interval_ms=group_config_value(
                self.group_configs, sg.group_id, "streams.heartbeat.interval.ms",
                self.config.heartbeat_interval_ms),
            status=status, tasks=m.assigned if send_tasks else None,
            endpoint_information_epoch=sg.endpoint_information_epoch, endpoints=endpoints,
            to_create=to_create,
            acceptable_recovery_lag=group_config_value(
                self.group_configs, sg.group_id, "streams.acceptable.recovery.lag",
                self.config.acceptable_recovery_lag),
            task_offset_interval_ms=group_config_value(
                self.group_configs, sg.group_id, "streams.task.offset.interval.ms",
                self.config.task_offset_interval_ms),
            topology_description_required=(
                m.topology_epoch == sg.topology_epoch() >= 0
                and sg.stored_description() is None))

    def _endpoints(self, sg: StreamsGroup, member: StreamsGroupMember) -> list[dict]:
        """Each member's user endpoint with the source partitions of its active and
        standby tasks, the heartbeating member last (Kafka's EndpointToPartitionsManager)."""
        counts = sg.configured.partitions if sg.configured is not None else {}
        others = sorted((m for m in sg.members.values() if m.member_id != member.member_id),
                        key=lambda m: m.member_id)
        return [{"user_endpoint": {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
                 "active_partitions": _partitions(sg.topology, m.assigned.active, counts),
                 "standby_partitions": _partitions(sg.topology, m.assigned.standby, counts)}
                for m in others + [member] if m.user_endpoint is not None]

    # -- leaving, fencing, timers -------------------------------------------------------

    def _leave(self, group: Group, sg: StreamsGroup, req: dict) -> StreamsHeartbeatResult:
        member = sg.members.get(req["member_id"])
        if member is None:
            raise StreamsError(ErrorCode.UNKNOWN_MEMBER_ID,
                               f"Member {req['member_id']} is not a member of group "
                               f"{sg.group_id}.")
        if req["instance_id"] is not None and member.instance_id != req["instance_id"]:
            raise StreamsError(ErrorCode.FENCED_INSTANCE_ID,
                               f"Static member {req['member_id']} was fenced.")
        if req["member_epoch"] == STATIC_LEAVE_EPOCH:
            # Kept with its tasks for one session: its restart takes them back.
            log.info("[GroupId %s] Static member %s with instance id %s temporarily left "
                     "the streams group.", escape(sg.group_id), escape(member.member_id),
                     escape(member.instance_id))
            sg.members[member.member_id] = self._arm_timers(
                group, replace(member, member_epoch=STATIC_LEAVE_EPOCH))
            return StreamsHeartbeatResult(member_id=req["member_id"],
                                          member_epoch=req["member_epoch"])
        log.info("[GroupId %s][MemberId %s] Member left the streams group.",
                 escape(sg.group_id), escape(member.member_id))
        self._fence(sg, member)
        return StreamsHeartbeatResult(member_id=req["member_id"],
                                      member_epoch=req["member_epoch"])

    def _fence(self, sg: StreamsGroup, member: StreamsGroupMember) -> None:
        sg.members.pop(member.member_id, None)
        sg.target.pop(member.member_id, None)
        if not sg.members:
            sg.shutdown_requested_by = None   # an application restarts from empty
        sg.group_epoch += 1
        log.info("[GroupId %s] Bumped streams group epoch to %d.", escape(sg.group_id),
                 sg.group_epoch)

    def _arm_timers(self, group: Group, member: StreamsGroupMember) -> StreamsGroupMember:
        timeout_ms = group_config_value(self.group_configs, group.group_id,
                                        "streams.session.timeout.ms",
                                        self.config.session_timeout_ms)
        revoking = member.state == MemberState.UNREVOKED_TASKS
        return self._modern.arm_timers(group, member, timeout_ms, revoking)

    def on_loaded(self, group: Group) -> None:
        """A loaded group: each member gets a session to heartbeat in."""
        self._modern.on_loaded(group, self._arm_timers)

    # -- StreamsGroupTopologyDescriptionUpdate (KIP-1331) --------------------------------

    def update_topology_description(self, group_id: str, member_id: str, epoch: int,
                                    description: dict) -> tuple[int, str | None]:
        """Keep a member's description of its topology at ``epoch``: (error, message).
        A member (or group) that is gone gets UNKNOWN_MEMBER_ID, so the client
        rejoins; a description of another topology epoch than the group's
        STREAMS_INVALID_TOPOLOGY_EPOCH."""
        group = self._registry.group(group_id)
        if group is None or group.streams is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, f"Streams group {group_id} not found."
        with group.lock:
            sg = group.streams
            if member_id not in sg.members:
                return (ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Member {member_id} is not a member of streams group {group_id}.")
            if epoch != sg.topology_epoch():
                return (ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH,
                        f"The topology description is for topology epoch {epoch}, but the "
                        f"group's topology epoch is {sg.topology_epoch()}.")
            sg.topology_description, sg.topology_description_epoch = description, epoch
            # With the group's metadata record, as Kafka records the stored epoch.
            self._registry.store_streams_group(group)
        return ErrorCode.NONE, None

    # -- StreamsGroupDescribe -----------------------------------------------------------

    def describe(self, group_id: str) -> tuple[int, str | None, StreamsGroup | None]:
        return self._modern.describe(group_id, self._snapshot)

    def _snapshot(self, sg: StreamsGroup) -> StreamsGroup:
        configured = sg.configured
        if configured is None and sg.topology is not None:
            # Loaded, not heartbeated yet: configured for the answer only; the
            # next heartbeat configures it for the group (and bumps its epoch
            # if the topics changed meanwhile).
            configured = self._configured(sg.topology)
        return replace(sg, members=dict(sg.members), target=dict(sg.target),
                       configured=configured)


class DelayedInitialAssignment(DelayedOperation):
    """The end of a new group's initial rebalance delay (a purgatory timer)."""

    def __init__(self, coordinator: StreamsGroupCoordinator, group: Group, deadline: float,
                 delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.coordinator, self.group, self.group_deadline = coordinator, group, deadline

    def try_complete(self) -> bool:
        return False   # only its deadline matters

    def on_complete(self) -> None:
        self.coordinator.end_initial_delay(self.group, self.group_deadline)


def _hash(configured) -> int:
    """A stand-in for Kafka's metadata hash: it changes when the topology's topics do.
    Stable across processes (it is written, and compared again after a restart)."""
    key = (tuple(sorted(configured.partitions.items())), configured.status,
           tuple(sorted((configured.task_counts or {}).items())))
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFFFFFFFFFF


def _partitions(topology: dict, tasks: dict, counts: dict[str, int]) -> list[dict]:
    parts: dict[str, set[int]] = {}
    for sub in topology["subtopologies"] if topology else ():
        wanted = tasks.get(sub["subtopology_id"])
        if not wanted:
            continue
        names = list(sub["source_topics"]) + [t["name"] for t in sub["repartition_source_topics"]]
        for name in names:
            parts.setdefault(name, set()).update(p for p in wanted if p < counts.get(name, 0))
    return [{"topic": t, "partitions": sorted(p)} for t, p in sorted(parts.items()) if p]


def _check_epoch(member: StreamsGroupMember, epoch: int, owned: TasksTuple | None) -> None:
    """Kafka's throwIfStreamsGroupMemberEpochIsInvalid."""
    error = member_epoch_error(member, epoch, lambda: _is_subset(owned, member.assigned),
                               "streams")
    if error is not None:
        raise StreamsError(ErrorCode.FENCED_MEMBER_EPOCH, error)


def _is_subset(owned: TasksTuple | None, assigned: TasksTuple) -> bool:
    """Kafka's areOwnedTasksContainedInAssignedTasks: unknown (null) is not."""
    if owned is None:
        return False
    return all(parts <= mine.get(sid, set())
               for theirs, mine in zip(owned.kinds(), assigned.kinds())
               for sid, parts in theirs.items())


def _metadata(m: StreamsGroupMember) -> tuple:
    """What a StreamsGroupMemberMetadata record holds: a change bumps the group epoch."""
    return (m.instance_id, m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.topology_epoch, m.process_id, m.user_endpoint, tuple(sorted(m.client_tags.items())))


def _check_tasks(task_counts: dict[str, int], tasks: dict) -> None:
    """Kafka's throwIfRequestContainsInvalidTasks."""
    for sid, parts in tasks.items():
        count = task_counts.get(sid)
        if count is None:
            raise _invalid(f"Subtopology {sid} does not exist in the topology.")
        for p in sorted(parts):
            if not 0 <= p < count:
                raise _invalid(f"Task {p} for subtopology {sid} is invalid. Number of tasks "
                               f"for this subtopology: {count}")


# -- reconciliation: Kafka's streams CurrentAssignmentBuilder ------------------------------

TaskOwners = Callable[[str, int], tuple]


def reconcile(member: StreamsGroupMember, target_epoch: int, target: TasksTuple,
              owned: TasksTuple | None, owners: TaskOwners) -> StreamsGroupMember:
    """Move a member towards its target: tasks taken away are revoked first (the
    member keeps its epoch, UNREVOKED_TASKS, until its heartbeat no longer lists
    them); a task is gained only once it is released (UNRELEASED_TASKS meanwhile):
    an active task while no other member runs it and no other member of this
    process keeps it as standby or warm-up; a standby or warm-up task while no
    other member of this process holds the task in any role."""
    if member.state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, owned, owners)
    if member.state == MemberState.UNREVOKED_TASKS:
        if _still_owns(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, owned, owners)
    if member.state == MemberState.UNRELEASED_TASKS:
        return _next(member, member.member_epoch, target_epoch, target, owned, owners)
    if owned is None or not owned.is_empty():
        raise StreamsError(ErrorCode.FENCED_MEMBER_EPOCH,
                           "The streams group member is in a unknown state. The member must "
                           "abandon all its tasks and rejoin.")
    return _next(member, target_epoch, target_epoch, target, owned, owners)


def _unreleased(kind: int, process: str, owners: tuple) -> bool:
    active, standby, warmup = owners
    if kind == 0:
        return active is not None or process in standby or process in warmup
    return active == process or process in standby or process in warmup


def _next(member: StreamsGroupMember, epoch: int, target_epoch: int, target: TasksTuple,
          owned: TasksTuple | None, owners: TaskOwners) -> StreamsGroupMember:
    """Kafka's computeNextAssignment and buildNewMember."""
    keep, revoke, gain = [], [], []
    unreleased = False
    for kind, (current, wanted) in enumerate(zip(member.assigned.kinds(), target.kinds())):
        kept, gone, new = {}, {}, {}
        for sid in set(current) | set(wanted):
            have, want = current.get(sid, set()), wanted.get(sid, set())
            if have & want:
                kept[sid] = have & want
            if have - want:
                gone[sid] = have - want
            free = {p for p in want - have
                    if not _unreleased(kind, member.process_id, owners(sid, p))}
            unreleased = unreleased or len(free) < len(want - have)
            if free:
                new[sid] = free
        keep.append(kept)
        revoke.append(gone)
        gain.append(new)
    to_revoke = TasksTuple(*revoke)
    if not to_revoke.is_empty() and _still_owns(owned, to_revoke):
        return _moved(member, MemberState.UNREVOKED_TASKS, epoch, TasksTuple(*keep), to_revoke)
    merged = TasksTuple(*({**k, **{s: k.get(s, set()) | g[s] for s in g}}
                          for k, g in zip(keep, gain)))
    state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
    return _moved(member, state, target_epoch, merged, EMPTY_TASKS)


def _moved(member: StreamsGroupMember, state: MemberState, epoch: int, assigned: TasksTuple,
           pending: TasksTuple) -> StreamsGroupMember:
    previous = member.member_epoch if epoch != member.member_epoch \
        else member.previous_member_epoch
    return replace(member, state=state, member_epoch=epoch, previous_member_epoch=previous,
                   assigned=assigned, pending_revocation=pending)


def _still_owns(owned: TasksTuple | None, tasks: TasksTuple) -> bool:
    """A null ``owned`` (not reported) counts as still owning."""
    if owned is None:
        return True
    return any(have.get(sid, set()) & parts
               for have, gone in zip(owned.kinds(), tasks.kinds())
               for sid, parts in gone.items())


__all__ = ["StreamsGroupConfig", "StreamsGroupCoordinator", "StreamsHeartbeatResult",
           "reconcile", "validate_request"]
