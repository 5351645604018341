"""The sticky task assignor of streams groups: Kafka's ``StickyTaskAssignor``
(group-coordinator .../streams/assignor), the one ``group.streams`` assignor.

Input: the tasks (sub-topology id, partition), each member's process id and
its current *target* (the previous assignment), and the number of standby
replicas wanted (``group.streams.num.standby.replicas``).  Output: each
member's active and standby tasks.  Warm-up tasks are not assigned: Kafka's
assignors assign none either (in Kafka 4.4 they are the coordinator's, whose
default derives none; see :mod:`~kafka_net.server.group.streams_coordinator`).

Active tasks, balanced first, sticky second:

1. with ``n`` tasks and ``m`` members each member gets ``n // m`` tasks, and
   ``n % m`` of them one more: the counts differ by at most one;
2. a member first keeps the tasks it had, up to ``n // m``;
3. a task left over goes back to its previous owner if that member may still
   take one more (the ``n % m`` extra places), else to another member of the
   same process (which shares its state directory), else to the least loaded
   member (ties: the member id), so an unchanged group gets the same answer.

Standby tasks: each *stateful* task (its sub-topology has state changelog
topics; a stateless task has no state to keep warm, so Kafka gives it none)
gets up to ``num_standby_replicas`` standbys, never
on a member of the process that runs its active task, nor twice on one
process; a member that had the standby keeps it when allowed, else the
member with the fewest tasks takes it.  With too few processes a task gets
fewer standbys (Kafka logs this too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kafka_net.server.group.streams_group import Tasks, TasksTuple

log = logging.getLogger(__name__)

# Kafka's StickyTaskAssignor.name(): what StreamsGroupDescribe v1 reports as a
# group's assignor (KIP-1357's AssignorName).
NAME = "sticky"

Task = tuple[str, int]


@dataclass(frozen=True)
class MemberSpec:
    """What the streams assignor knows of a member: its process and the tasks it had."""

    process_id: str
    previous: TasksTuple = field(default_factory=TasksTuple)


def _task_set(tasks: Tasks) -> set[Task]:
    return {(sid, p) for sid, parts in tasks.items() for p in parts}


def _as_tasks(tasks: set[Task]) -> Tasks:
    out: Tasks = {}
    for sid, p in tasks:
        out.setdefault(sid, set()).add(p)
    return out


def assign(members: dict[str, MemberSpec], tasks: list[Task], num_standby_replicas: int = 0,
           stateful: frozenset[str] | None = None) -> dict[str, TasksTuple]:
    """``stateful``: the sub-topologies with state (None: all of them)."""
    if not members:
        return {}
    active = _assign_active(members, sorted(tasks))
    with_state = sorted(t for t in tasks if stateful is None or t[0] in stateful)
    standby = _assign_standby(members, active, with_state, num_standby_replicas)
    return {m: TasksTuple(_as_tasks(active[m]), _as_tasks(standby[m])) for m in members}


def _assign_active(members: dict[str, MemberSpec], tasks: list[Task]) -> dict[str, set[Task]]:
    ids = sorted(members)
    base, extras = divmod(len(tasks), len(ids))
    result: dict[str, set[Task]] = {m: set() for m in ids}
    wanted = set(tasks)
    owner: dict[Task, str] = {}
    for m in ids:
        for task in sorted(_task_set(members[m].previous.active) & wanted):
            owner.setdefault(task, m)   # a task two members had: the first id keeps it
    for task, m in sorted(owner.items()):   # 2: keep up to the base share
        if len(result[m]) < base:
            result[m].add(task)
    assigned = set().union(*result.values())
    full = 0   # members holding base + 1

    def may_take(m: str) -> bool:
        return len(result[m]) < base or (len(result[m]) == base and full < extras)

    for task in tasks:   # 3: leftovers to their previous owner, then the least loaded
        if task in assigned:
            continue
        m = owner.get(task)
        if m is not None and not may_take(m):   # another member of its process (its state)
            mates = [c for c in ids if members[c].process_id == members[m].process_id
                     and may_take(c)]
            m = min(mates, key=lambda c: (len(result[c]), c)) if mates else None
        if m is None:
            m = min((c for c in ids if may_take(c)), key=lambda c: (len(result[c]), c))
        result[m].add(task)
        assigned.add(task)
        if len(result[m]) == base + 1:
            full += 1
    return result


def _assign_standby(members: dict[str, MemberSpec], active: dict[str, set[Task]],
                    tasks: list[Task], replicas: int) -> dict[str, set[Task]]:
    result: dict[str, set[Task]] = {m: set() for m in members}
    if replicas <= 0:
        return result
    active_process = {t: members[m].process_id for m, ts in active.items() for t in ts}
    load = {m: len(active[m]) for m in members}
    short = 0
    for task in tasks:
        used = {active_process[task]}
        for _ in range(replicas):
            allowed = [m for m in members if members[m].process_id not in used]
            if not allowed:
                short += 1
                break
            previous = [m for m in allowed if task in _task_set(members[m].previous.standby)]
            pick = min(previous or allowed, key=lambda c: (load[c], c))
            result[pick].add(task)
            load[pick] += 1
            used.add(members[pick].process_id)
    if short:
        log.warning("Unable to assign %d of the %d standby task replicas wanted: there are "
                    "not enough processes without the active task.", short,
                    replicas * len(tasks))
    return result
