"""Server-side assignors of consumer-protocol groups (KIP-848): uniform and range.

In the consumer protocol the *coordinator* computes the assignment (the
classic protocol leaves it to the group leader's client).  An assignor maps
every member's subscription to a *target assignment*; the coordinator then
moves each member towards its target step by step (see
:mod:`kafka_net.server.group.current_assignment`), so a partition is never
owned by two members at once.

Both assignors are pure functions of

* ``members``: member id -> the topic ids it subscribes to (only topics that
  exist), plus the partitions it was last *targeted* (for stickiness);
* ``partitions``: topic id -> partition count;

and return member id -> {topic id -> set of partitions}.  Kafka's names: the
group config ``group.consumer.assignors`` lists them (``uniform`` first, the
default), and a member may pick one with ``group.remote.assignor``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

Assignment = dict[uuid.UUID, set[int]]


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows of a member: the topics it subscribes to and what it holds
    now."""

    topics: frozenset[uuid.UUID]
    current: Assignment = field(default_factory=dict)


def uniform(members: dict[str, MemberSpec], partitions: dict[uuid.UUID, int]
            ) -> dict[str, Assignment]:
    """Spread all subscribed partitions as evenly as possible, keeping a member's
    current partitions while it stays within its fair share (Kafka's
    UniformAssignor: balanced first, sticky second)."""
    result: dict[str, Assignment] = {m: {} for m in members}
    counts = dict.fromkeys(members, 0)
    wanted = [(t, p) for t in sorted(partitions, key=str) for p in range(partitions[t])
              if any(t in spec.topics for spec in members.values())]
    subscribers = len([m for m, spec in members.items() if spec.topics])
    if not subscribers:
        return result
    quota = -(-len(wanted) // subscribers)   # ceiling: nobody keeps more than this
    taken: set[tuple[uuid.UUID, int]] = set()
    for member in sorted(members):
        spec = members[member]
        for topic, owned in sorted(spec.current.items(), key=lambda kv: str(kv[0])):
            for p in sorted(owned):
                if (topic in spec.topics and p < partitions.get(topic, 0)
                        and (topic, p) not in taken and counts[member] < quota):
                    _give(result, counts, taken, member, topic, p)
    for topic, p in wanted:
        if (topic, p) in taken:
            continue
        candidates = [m for m in members if topic in members[m].topics]
        member = min(candidates, key=lambda m: (counts[m], m))
        _give(result, counts, taken, member, topic, p)
    return result


def range_(members: dict[str, MemberSpec], partitions: dict[uuid.UUID, int]
           ) -> dict[str, Assignment]:
    """Per topic, its subscribers (sorted by member id) get consecutive ranges;
    the first ``partitions % members`` get one more (Kafka's RangeAssignor)."""
    result: dict[str, Assignment] = {m: {} for m in members}
    for topic in sorted(partitions, key=str):
        subscribers = sorted(m for m, spec in members.items() if topic in spec.topics)
        if not subscribers:
            continue
        share, extra = divmod(partitions[topic], len(subscribers))
        start = 0
        for i, member in enumerate(subscribers):
            size = share + (1 if i < extra else 0)
            if size:
                result[member][topic] = set(range(start, start + size))
            start += size
    return result


def _give(result, counts, taken, member: str, topic: uuid.UUID, partition: int) -> None:
    result[member].setdefault(topic, set()).add(partition)
    counts[member] += 1
    taken.add((topic, partition))


# group.consumer.assignors: the first is the default.
ASSIGNORS = {"uniform": uniform, "range": range_}
DEFAULT_ASSIGNOR = "uniform"
