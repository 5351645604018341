"""What every consumer (KIP-848) and streams (KIP-1071) group and member has:
Kafka's ``ModernGroup`` and ``ModernGroupMember``, the fields that come first
in both kinds, and the static member replacement they share.

A leaf module (it imports nothing of the group package), so that both
groups' data modules build on it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from kafka_net.log_safety import escape

log = logging.getLogger(__name__)


@dataclass
class ModernGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300000


@dataclass
class ModernGroup:
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
