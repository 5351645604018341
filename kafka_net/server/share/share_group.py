"""A share group's members and assignment (Kafka's ``ShareGroup`` / ``ShareGroupMember``),
and the ``simple`` assignor (Kafka's ``SimpleAssignor``).

A share group has no reconciliation to do: a partition may be assigned to
several members at once (the share-partition hands each record to one of
them), so a member moves straight to its target assignment at the group's
epoch, with no revocation step.  States (Kafka's ``ShareGroupState``): Empty
without members, Stable with; Dead once deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Assignment = dict[object, set[int]]   # topic id -> partitions


@dataclass
class ShareGroupMember:
    """A member of a share (KIP-932) group, as its heartbeats describe it."""

    member_id: str
    member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: Assignment = field(default_factory=dict)
    session_deadline: float = 0.0   # monotonic seconds


@dataclass
class ShareGroup:
    """A share (KIP-932) group: its members, epochs and target assignment."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # topic id -> partition count when the target was computed (more partitions: a
    # new assignment)
    partition_counts: dict[object, int] = field(default_factory=dict)

    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}


def simple_assign(members: dict[str, frozenset], partitions: dict[object, int]
                  ) -> dict[str, Assignment]:
    """Kafka's SimpleAssignor: ``members`` maps a member id to the topic ids it
    subscribes to, ``partitions`` a topic id to its partition count.  Per topic,
    among the members subscribed to it (in member id order): with no more
    members than partitions, the partitions are dealt round robin, each to one
    member; with more, each member gets one partition, round robin, so several
    members share each partition.  Every subscribed member gets something."""
    out: dict[str, Assignment] = {m: {} for m in members}
    for topic_id, count in sorted(partitions.items(), key=lambda kv: str(kv[0])):
        subscribers = sorted(m for m, topics in members.items() if topic_id in topics)
        if not subscribers or count <= 0:
            continue
        if len(subscribers) <= count:
            for p in range(count):
                out[subscribers[p % len(subscribers)]].setdefault(topic_id, set()).add(p)
        else:
            for i, member in enumerate(subscribers):
                out[member].setdefault(topic_id, set()).add(i % count)
    return out
