"""The data of a streams group (KIP-1071): Kafka's ``StreamsGroup``,
``StreamsGroupMember``, ``StreamsTopology`` and ``ConfiguredTopology``.

A streams group is a KIP-848 group whose unit of work is a **task**, not a
partition: task ``(subtopology, p)`` processes partition ``p`` of every source
topic of one sub-topology of the application's topology.  A member owns three
kinds of tasks: *active* (it processes), *standby* (it keeps a replica of the
task's state stores) and *warm-up* (a standby catching up to take over).

The epochs work as in a consumer group (see
:mod:`kafka_net.server.group.consumer_group`): the group epoch goes up when
membership, the topology or its topics change; the assignment epoch is the
group epoch the target assignment was computed for; a member's epoch moves to
the assignment epoch once it has revoked the active tasks its target takes
away, so no task is active on two members at once.

The **topology** comes with a member's first heartbeat; the first member's
initializes the group's.  It is *configured* against the topics that exist
(:func:`configure`): the number of tasks of each sub-topology is the largest
partition count of its source topics; repartition topics take theirs from the
sub-topologies writing to them; changelog topics get the task count.  Until
every source topic exists, copartitioned topics agree and every internal topic
exists with the right count, the topology is not ready: no task is assigned,
and each heartbeat answer carries the reason as a status.

Plain data, changed under the owning :class:`~kafka_net.server.group.group.Group`'s lock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Iterable

from kafka_net.server.group.modern_data import ModernGroup, ModernGroupMember

Tasks = dict[str, set[int]]          # sub-topology id -> partitions
TASK_KINDS = ("active", "standby", "warmup")

ASSIGNMENT_DELAYED_DETAIL = "Assignment delayed due to the configured initial rebalance delay."

# StreamsGroupHeartbeatResponse's status codes.
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5


class MemberState(enum.Enum):
    """Kafka's streams MemberState (its id is the CurrentMemberAssignment's State byte)."""

    STABLE = 0
    UNREVOKED_TASKS = 1
    UNRELEASED_TASKS = 2
    UNKNOWN = 127


@dataclass(frozen=True)
class TasksTuple:
    """Active, standby and warm-up tasks (Kafka's TasksTuple)."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not any(parts for kind in (self.active, self.standby, self.warmup)
                       for parts in kind.values())

    def kinds(self) -> tuple[Tasks, Tasks, Tasks]:
        return self.active, self.standby, self.warmup

    def normalized(self) -> "TasksTuple":
        """Without empty partition sets: equal tuples compare equal."""
        return TasksTuple(*({s: set(p) for s, p in kind.items() if p} for kind in self.kinds()))


EMPTY_TASKS = TasksTuple()


@dataclass
class StreamsGroupMember(ModernGroupMember):
    """A member of a streams (KIP-1071) group, as its heartbeats describe it."""

    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    task_offsets: list[dict] = field(default_factory=list)
    task_end_offsets: list[dict] = field(default_factory=list)
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: TasksTuple = EMPTY_TASKS
    pending_revocation: TasksTuple = EMPTY_TASKS
    session_deadline: float = 0.0
    revocation_deadline: float | None = None


@dataclass(frozen=True)
class ConfiguredTopology:
    """A topology against the topics that exist (Kafka's ConfiguredTopology)."""

    epoch: int
    # sub-topology id -> number of tasks; None while not ready
    task_counts: dict[str, int] | None
    # internal topics to create: name -> (partitions, replication factor, configs)
    to_create: dict[str, tuple[int, int, dict[str, str]]] = field(default_factory=dict)
    status: tuple[int, str] | None = None   # why it is not ready
    # every topic of the topology that exists -> its partition count (for describe)
    partitions: dict[str, int] = field(default_factory=dict)
    # the sub-topologies with state stores (changelog topics): they get standbys
    stateful: frozenset[str] = frozenset()

    def is_ready(self) -> bool:
        return self.task_counts is not None and self.status is None


@dataclass
class StreamsGroup(ModernGroup):
    """A streams (KIP-1071) group: its topology, members, epochs and target assignment."""

    KIND: ClassVar[str] = "streams group"
    MEMBER_STABLE: ClassVar[MemberState] = MemberState.STABLE

    # The request's topology (wire form, as StreamsGroupTopologyValue keeps it); None
    # until the first member brings one.
    topology: dict | None = None
    configured: ConfiguredTopology | None = None
    # The MetadataCache.topics_version ``configured`` was computed at (Kafka keys
    # it on a hash of the topics' metadata, written as MetadataHash).
    configured_version: int = -1
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    # The assignment configs of the last group epoch bump (Kafka's
    # lastAssignmentConfigs): num.standby.replicas -> its value, as strings.
    assignment_configs: dict[str, str] = field(default_factory=dict)
    shutdown_requested_by: str | None = None
    # Bumped when a member with a user endpoint gets other tasks; a member whose
    # endpoint_information_epoch differs is sent every endpoint's partitions.
    # Not persisted, as in Kafka.
    endpoint_information_epoch: int = 0
    # While the first rebalance of a new (previously empty) group waits
    # (group.streams.initial.rebalance.delay.ms): its monotonic deadline.  Not
    # persisted: a group loaded after a restart assigns at once.
    initial_delay_deadline: float | None = None
    # KIP-1331: the description of the topology a member sent with
    # StreamsGroupTopologyDescriptionUpdate, and the topology epoch it describes.
    # Kafka hands it to its topology description plugin and records the epoch in
    # StreamsGroupMetadata; kafka-net records both there, so a durable broker
    # serves it again after a restart without asking a member for it.
    topology_description: dict | None = None
    topology_description_epoch: int = -1

    def state(self) -> str:
        """Kafka's StreamsGroupState names: Empty, NotReady, Assigning, Reconciling, Stable."""
        if not self.members:
            return "Empty"
        if self.configured is None or not self.configured.is_ready():
            return "NotReady"
        return self.progress_state()

    def topology_epoch(self) -> int:
        return -1 if self.topology is None else self.topology["epoch"]

    def stored_description(self) -> dict | None:
        """The topology description, if one was sent for the current topology epoch."""
        if self.topology is None or self.topology_description_epoch != self.topology_epoch():
            return None
        return self.topology_description

    def task_owners(self, subtopology: str, partition: int, excluding: str
                    ) -> tuple[str | None, set[str], set[str]]:
        """The processes of the other members owning a task (assigned or pending
        revocation): (active's process or None, standby processes, warm-up
        processes): Kafka's currentActiveTaskProcessId / currentStandbyTaskProcessIds /
        currentWarmupTaskProcessIds."""
        active, standby, warmup = None, set(), set()
        for m in self.members.values():
            if m.member_id == excluding:
                continue
            held = [partition in a.get(subtopology, ()) or partition in p.get(subtopology, ())
                    for a, p in zip(m.assigned.kinds(), m.pending_revocation.kinds())]
            if held[0]:
                active = m.process_id
            if held[1]:
                standby.add(m.process_id)
            if held[2]:
                warmup.add(m.process_id)
        return active, standby, warmup

    def source_topics(self) -> set[str]:
        """Every topic the topology reads (OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC)."""
        if self.topology is None:
            return set()
        topics = set()
        for sub in self.topology["subtopologies"]:
            topics.update(sub["source_topics"])
            topics.update(t["name"] for t in sub["repartition_source_topics"])
        return topics


# -- the topology -----------------------------------------------------------------------------

class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY, with Kafka's message."""


class TopicConfigurationProblem(Exception):
    """A status code and detail: the topology cannot be configured yet."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def validate_topology(topology: dict) -> None:
    """The checks of a joining member's topology (Kafka's throwIfInvalidTopology and
    what configuring it would refuse whatever the topics): raises InvalidTopology."""
    seen = set()
    sinks = set()
    for sub in topology["subtopologies"]:
        sid = sub["subtopology_id"]
        if sid in seen:
            raise InvalidTopology(f"Subtopology {sid} is defined more than once.")
        seen.add(sid)
        sinks.update(sub["repartition_sink_topics"])
        if not sub["source_topics"] and not sub["repartition_source_topics"]:
            raise InvalidTopology(f"No source topics found for subtopology {sid}")
        for info in sub["state_changelog_topics"]:
            if info["partitions"] != 0:
                raise InvalidTopology(
                    f"Changelog topic {info['name']} must have an undefined partition "
                    f"count, but it is set to {info['partitions']}.")
        sources = len(sub["source_topics"])
        repartitions = len(sub["repartition_source_topics"])
        for group in sub["copartition_groups"]:
            if (any(not 0 <= i < sources for i in group["source_topics"])
                    or any(not 0 <= i < repartitions for i in group["repartition_source_topics"])):
                raise InvalidTopology(
                    f"Copartition group of subtopology {sid} refers to an unknown topic index.")
    for sub in topology["subtopologies"]:
        for info in sub["repartition_source_topics"]:
            if info["partitions"] == 0 and info["name"] not in sinks:
                raise InvalidTopology(
                    "Failed to compute number of partitions for all repartition topics, "
                    "because a repartition source topic is never used as a sink topic.")


def _repartition_counts(topology: dict, partitions: Callable[[str], int | None]) -> dict[str, int]:
    """Each repartition topic's partition count: its own, else the largest task count
    of the sub-topologies writing to it (Kafka's RepartitionTopics, to a fixed point)."""
    subs = topology["subtopologies"]
    counts = {t["name"]: t["partitions"] for s in subs for t in s["repartition_source_topics"]
              if t["partitions"] > 0}
    changed = True
    while changed:
        changed = False
        for sub in subs:
            for info in sub["repartition_source_topics"]:
                name = info["name"]
                if name in counts:
                    continue
                upstream = [_task_count(s, partitions, counts) for s in subs
                            if name in s["repartition_sink_topics"]]
                known = [c for c in upstream if c]
                if known:
                    counts[name] = max(known)
                    changed = True
    return counts


def _task_count(sub: dict, partitions: Callable[[str], int | None],
                repartition: dict[str, int]) -> int | None:
    counts = [partitions(t) for t in sub["source_topics"]]
    counts += [repartition.get(t["name"]) for t in sub["repartition_source_topics"]]
    known = [c for c in counts if c]
    return max(known) if known else None


def configure(topology: dict, partitions: Callable[[str], int | None]) -> ConfiguredTopology:
    """The topology against the topics (``partitions(name)``: a count, None if absent):
    Kafka's InternalTopicManager.configureTopics."""
    epoch = topology["epoch"]
    subs = topology["subtopologies"]
    stateful = frozenset(s["subtopology_id"] for s in subs if s["state_changelog_topics"])
    repartition_names = {t["name"] for s in subs for t in s["repartition_source_topics"]}
    existing = {}
    for name in _all_topics(topology):
        count = partitions(name)
        if count is not None:
            existing[name] = count
    try:
        missing = sorted({t for s in subs for t in s["source_topics"]
                          if t not in repartition_names and t not in existing})
        if missing:
            raise TopicConfigurationProblem(
                MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing.")
        repartition = _repartition_counts(topology, partitions)
        _enforce_copartitioning(subs, existing, repartition)
        task_counts = {s["subtopology_id"]: _task_count(s, partitions, repartition) or 0
                       for s in subs}
        wanted = {}
        for sub in subs:
            for info in sub["repartition_source_topics"]:
                wanted[info["name"]] = (repartition[info["name"]], info)
            sources = set(sub["source_topics"])
            for info in sub["state_changelog_topics"]:
                if info["name"] not in sources:   # a source table's topic is its changelog
                    wanted[info["name"]] = (task_counts[sub["subtopology_id"]], info)
        to_create = {}
        for name, (count, info) in sorted(wanted.items()):
            have = existing.get(name)
            if have is None:
                to_create[name] = (count, info["replication_factor"],
                                   {c["key"]: c["value"] for c in info["topic_configs"]})
            elif have != count:
                raise TopicConfigurationProblem(
                    INCORRECTLY_PARTITIONED_TOPICS,
                    f"Existing internal topic {name} has invalid number of partitions: "
                    f"{have}, expected: {count}")
        if to_create:
            return ConfiguredTopology(epoch, task_counts, to_create, (
                MISSING_INTERNAL_TOPICS,
                f"Internal topics are missing: {', '.join(sorted(to_create))}"), existing,
                stateful)
        return ConfiguredTopology(epoch, task_counts, {}, None, existing, stateful)
    except TopicConfigurationProblem as problem:
        return ConfiguredTopology(epoch, None, {}, (problem.code, problem.detail), existing,
                                  stateful)


def _enforce_copartitioning(subs: list[dict], existing: dict[str, int],
                            repartition: dict[str, int]) -> None:
    """Copartitioned source topics must agree; repartition topics of a copartition
    group without a fixed count follow the group (Kafka's CopartitionedTopicsEnforcer)."""
    fixed = {t["name"] for s in subs for t in s["repartition_source_topics"]
             if t["partitions"] > 0}
    for sub in subs:
        for group in sub["copartition_groups"]:
            names = [sub["source_topics"][i] for i in group["source_topics"]]
            names += [sub["repartition_source_topics"][i]["name"]
                      for i in group["repartition_source_topics"]]
            external = {n: existing[n] for n in names if n not in repartition}
            if len(set(external.values())) > 1:
                listed = ", ".join(f"{n}={c}" for n, c in sorted(external.items()))
                raise TopicConfigurationProblem(   # Kafka prints a sorted Java map
                    INCORRECTLY_PARTITIONED_TOPICS,
                    f"Following topics do not have the same number of partitions: [{{{listed}}}]")
            if external:
                count = next(iter(external.values()))
            else:
                count = max((repartition[n] for n in names if n in repartition), default=0)
            for n in names:
                if n in repartition and n not in fixed:
                    repartition[n] = count
                elif n in fixed and repartition[n] != count and external:
                    raise TopicConfigurationProblem(
                        INCORRECTLY_PARTITIONED_TOPICS,
                        f"Number of partitions [{repartition[n]}] of repartition topic [{n}] "
                        f"doesn't match number of partitions [{count}] of the source topic.")


def _all_topics(topology: dict) -> Iterable[str]:
    for sub in topology["subtopologies"]:
        yield from sub["source_topics"]
        yield from (t["name"] for t in sub["repartition_source_topics"])
        yield from (t["name"] for t in sub["state_changelog_topics"])


def all_tasks(task_counts: dict[str, int]) -> list[tuple[str, int]]:
    return [(sid, p) for sid in sorted(task_counts) for p in range(task_counts[sid])]

