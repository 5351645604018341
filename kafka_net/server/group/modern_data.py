"""What every consumer (KIP-848) and streams (KIP-1071) group and member has:
Kafka's ``ModernGroup`` and ``ModernGroupMember``, the fields that come first
in both kinds, the static member replacement they share, and the replay of
their records at a load.

A leaf module (it imports nothing of the group package), so that both
groups' data and record modules build on it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar

from kafka_net.log_safety import escape
from kafka_net.protocol.coordinator_records import consumer_group_key, consumer_group_value

log = logging.getLogger(__name__)


@dataclass
class ModernGroupMember:
    """What a member of a consumer (KIP-848) or streams (KIP-1071) group has either way."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300000


@dataclass
class ModernGroup:
    """What consumer (KIP-848) and streams (KIP-1071) groups share: id, epochs, members."""

    # How the log names this kind of group ("consumer group", "streams group").
    KIND: ClassVar[str] = "group"
    # The kind's MemberState.STABLE: a member that reached its target.
    MEMBER_STABLE: ClassVar[Any] = None

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Any] = field(default_factory=dict)
    # member id -> its target assignment (partitions, or tasks)
    target: dict[str, Any] = field(default_factory=dict)

    def progress_state(self) -> str:
        """The last three states both kinds name alike: Assigning while the target
        lags the group epoch, Reconciling while a member has not reached it, else
        Stable."""
        if self.group_epoch != self.assignment_epoch:
            return "Assigning"
        if any(m.member_epoch != self.assignment_epoch or m.state != self.MEMBER_STABLE
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def member_by_instance(self, instance_id: str):
        """The member with this ``group.instance.id``, or None."""
        return next((m for m in self.members.values() if m.instance_id == instance_id),
                    None)

    def replace_static_member(self, existing, member_id: str):
        """A restarted static instance (new ``member_id``) takes ``existing``'s
        place: its assignment and its place in the target assignment, at epoch 0,
        with no group epoch bump and so no rebalance."""
        del self.members[existing.member_id]
        if existing.member_id in self.target:
            self.target[member_id] = self.target.pop(existing.member_id)
        log.info("[GroupId %s] Static member with instance id %s re-joins the %s. "
                 "Created a new member %s to replace the existing member %s.",
                 escape(self.group_id), escape(existing.instance_id), self.KIND,
                 escape(member_id), escape(existing.member_id))
        replaced = replace(existing, member_id=member_id, member_epoch=0,
                           previous_member_epoch=0)
        self.members[member_id] = replaced
        return replaced


# The member-keyed records (after the kind's prefix) and the table each fills.
_MEMBER_TABLES = {"MemberMetadata": "members", "TargetAssignmentMember": "targets",
                  "CurrentMemberAssignment": "current"}


class ModernGroupImage:
    """The records of one kind of group (``PREFIX``: "ConsumerGroup",
    "StreamsGroup") of one load, replayed: the last value per key wins, a
    tombstone removes.  Per group id, its parts: "members", "targets" and
    "current" by member id, and each group-level record's value under its name
    after the prefix ("Metadata", "TargetAssignmentMetadata", "Topology")."""

    PREFIX: ClassVar[str] = ""

    def __init__(self) -> None:
        self._parts: dict[str, dict] = {}

    def replay(self, record) -> None:
        parts = self._parts.setdefault(record.group, {"members": {}, "targets": {},
                                                      "current": {}})
        name = record.record[len(self.PREFIX):]
        table = _MEMBER_TABLES.get(name)
        if table is None:
            parts[name] = record.value
        elif record.value is None:
            parts[table].pop(record.member_id, None)
        else:
            parts[table][record.member_id] = record.value

    def standing(self) -> dict[str, dict]:
        """The parts of the groups whose metadata record stands (a tombstone deleted
        the group)."""
        return {gid: parts for gid, parts in self._parts.items()
                if parts.get("Metadata") is not None}

    @staticmethod
    def assignment_epoch(parts: dict) -> int:
        value = parts.get("TargetAssignmentMetadata")
        return 0 if value is None else value["assignment_epoch"]


def records_in_order(group: ModernGroup, member_records: Callable[[str], dict],
                     group_records: dict[bytes, bytes], target_types: tuple[int, int],
                     target_value: Callable[[Any], dict]) -> dict[bytes, bytes]:
    """Every record of a group, in Kafka's order within a change: each member's
    metadata (the first of ``member_records(member_id)``), the ``group_records``,
    each member's target (``target_value``) and the target's epoch (the record
    types ``target_types``: (target metadata, target member)), then the rest of
    each member's records (its current assignment)."""
    target, target_member = target_types
    gid = group.group_id
    members = {member_id: member_records(member_id) for member_id in group.members}
    out: dict[bytes, bytes] = {}
    for records in members.values():
        metadata_key = next(iter(records))
        out[metadata_key] = records[metadata_key]
    out.update(group_records)
    for member_id, assigned in group.target.items():
        out[consumer_group_key(target_member, gid, member_id)] = consumer_group_value(
            target_member, target_value(assigned))
    out[consumer_group_key(target, gid)] = consumer_group_value(
        target, {"assignment_epoch": group.assignment_epoch})
    for records in members.values():
        out.update(records)   # the metadata keys are there already: adds the assignments
    return out
