"""What the consumer (KIP-848) and streams (KIP-1071) group coordinators share.

Kafka builds both kinds on one ``ModernGroup``: a group that lives in the
coordinator's one map beside the classic ones, whose members hold a session
(and, while they revoke, a rebalance deadline) kept by their heartbeats, and
are fenced when either passes.  :class:`ModernGroups` is that shared half,
written once and held by each coordinator with its :class:`GroupKind` (which
state of the registry's :class:`~kafka_net.server.group.group.Group` it
serves, what its members own, the error it raises) and the two steps that
differ, fencing a member and storing the group:

* finding (or making) the group for a heartbeat, refusing another kind's id;
* arming a member's timers, and expiring it when one fires;
* the timers of a group loaded from ``__consumer_offsets``;
* the Describe answer: GROUP_ID_NOT_FOUND, or a snapshot under the lock;
* the member epoch check of a heartbeat (:func:`member_epoch_error`) and a
  static member's (:func:`static_member_error`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.group import Group
from kafka_net.server.group.rebalance import arm_member_timers, member_expiry
from kafka_net.server.group.registry import GroupRegistry

log = logging.getLogger(__name__)

# A heartbeat's member epoch: joining, leaving, leaving for a restart (static).
JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2


@dataclass(frozen=True)
class GroupKind:
    """One kind of modern group, as the shared code needs to know it."""

    name: str                              # the group type: "consumer", "streams"
    state: Callable[[Group], Any]          # the group's state of this kind, or None
    owned: str                             # what a member owns: "partitions", "tasks"
    error: type[Exception]                 # raised with (error code, message)
    not_found: str                         # a heartbeat's unknown id ({} the id)
    fenced: str                            # the log line of a fenced member (group, member, why)


class ModernGroups:
    def __init__(self, registry: GroupRegistry, purgatory, kind: GroupKind,
                 fence: Callable[[Group, Any, Any], None],
                 store: Callable[[Group], int]) -> None:
        """``fence(group, state, member)`` removes an expired member (under the
        group's lock); ``store(group)`` persists the group after it."""
        self._registry = registry
        self._purgatory = purgatory
        self.kind = kind
        self._fence = fence
        self._store = store

    def find(self, group_id: str, create: bool) -> Group:
        """The registry's group ``group_id`` (made with ``create``), or ``kind.error``
        with GROUP_ID_NOT_FOUND: a share group's id, or no such group."""
        if self._registry.group_type(group_id) == "share":
            raise self.kind.error(ErrorCode.GROUP_ID_NOT_FOUND, self.not_this_kind(group_id))
        group = self._registry.group(group_id, create=create)
        if group is None:
            raise self.kind.error(ErrorCode.GROUP_ID_NOT_FOUND,
                                  self.kind.not_found.format(group_id))
        return group

    def not_this_kind(self, group_id: str) -> str:
        return f"Group {group_id} is not a {self.kind.name} group."

    # -- sessions -----------------------------------------------------------------------

    def arm_timers(self, group: Group, member, session_timeout_ms: int, revoking: bool):
        """The member with a new session from now (and a rebalance deadline while
        ``revoking``), each deadline on a purgatory timer that calls :meth:`expire`."""
        return arm_member_timers(self._purgatory, self.expire, group, member,
                                 session_timeout_ms, revoking)

    def on_loaded(self, group: Group, arm: Callable[[Group, Any], Any]) -> None:
        """A group loaded from ``__consumer_offsets`` (not yet published): each member
        gets ``arm``'s timers (Kafka's onLoaded)."""
        members = self.kind.state(group).members
        for member_id, member in list(members.items()):
            members[member_id] = arm(group, member)

    def expire(self, group: Group, member_id: str) -> None:
        """A timer fired: fence the member if its session or its revocation deadline
        has passed (a later heartbeat moves the first, a completed revocation
        clears the second); stale timers find nothing to do."""
        with group.lock:
            state = self.kind.state(group)
            member = None if state is None else state.members.get(member_id)
            if member is None:
                return
            reason = member_expiry(member, self.kind.owned)
            if reason is None:
                return
            log.info(self.kind.fenced, escape(state.group_id), escape(member_id), reason)
            self._fence(group, state, member)
            self._store(group)

    # -- Describe -----------------------------------------------------------------------

    def describe(self, group_id: str, snapshot: Callable[[Any], Any]
                 ) -> tuple[int, str | None, Any]:
        """(error, message, ``snapshot(state)`` taken under the group's lock)."""
        group = self._registry.group(group_id)
        if group is None or self.kind.state(group) is None:
            message = f"Group {group_id} not found." \
                if self._registry.group_type(group_id) is None \
                else self.not_this_kind(group_id)
            return ErrorCode.GROUP_ID_NOT_FOUND, message, None
        with group.lock:
            return ErrorCode.NONE, None, snapshot(self.kind.state(group))


def member_epoch_error(member, epoch: int, owns_only_assigned: Callable[[], bool],
                       kind: str) -> str | None:
    """Kafka's throwIf{Consumer,Streams}GroupMemberEpochIsInvalid: why a heartbeat at
    ``epoch`` is fenced, or None.  An epoch behind the member's is accepted when it
    is the previous one and the member owns nothing it was not assigned (the
    answer with the new epoch may have been lost): ``owns_only_assigned()``."""
    if epoch > member.member_epoch:
        relation = "greater"
    elif epoch < member.member_epoch and (epoch != member.previous_member_epoch
                                          or not owns_only_assigned()):
        relation = "smaller"
    else:
        return None
    return (f"The {kind} group member has a {relation} member epoch ({epoch}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin.")


def static_member_error(existing, member_id: str, instance_id: str,
                        joining: bool) -> tuple[int, str] | None:
    """A heartbeat naming ``instance_id``, whose member now is ``existing`` (None if
    none): (error code, message) when it is refused, else None.  A joining
    instance may replace only a member that left for a restart (epoch -2);
    otherwise the instance must be known and held by this member id."""
    if joining:
        if existing is not None and existing.member_epoch != STATIC_LEAVE_EPOCH:
            return (ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {existing.member_id} with instance id {instance_id} "
                    "cannot be replaced because it has not left the group.")
        return None
    if existing is None:
        return ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
    if existing.member_id != member_id:
        return (ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {existing.member_id}.")
    return None
