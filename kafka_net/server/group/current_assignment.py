"""Moving one member towards its target assignment: Kafka's CurrentAssignmentBuilder.

A member never gains a partition that another member still owns, and never
moves to a new epoch while it still owns a partition its target takes away:

1. partitions in both its current assignment and its target are kept;
2. partitions only in its current assignment must be **revoked**: the
   member is told its assignment without them and stays at its old epoch
   (UNREVOKED_PARTITIONS) until a heartbeat reports it no longer owns them;
3. partitions only in its target are **assigned** once nobody else owns
   them; until then the member moves to the new epoch without them
   (UNRELEASED_PARTITIONS) and picks them up on a later heartbeat.

``owned`` is what the member's heartbeat said it owns: None when the field
was null (unchanged since the last heartbeat).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Callable

from kafka_net.server.group.assignors import Assignment
from kafka_net.server.group.consumer_group import ConsumerGroupMember, MemberState

PartitionEpoch = Callable[[uuid.UUID, int], int]


class FencedMemberEpoch(Exception):
    """The member must give up all its partitions and rejoin (FENCED_MEMBER_EPOCH)."""


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              owned: Assignment | None, partition_epoch: PartitionEpoch) -> ConsumerGroupMember:
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
    if state == MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, owned,
                     partition_epoch)
    if state == MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
    if owned is None or owned:
        raise FencedMemberEpoch("The consumer group member is in a unknown state. "
                                "The member must abandon all its partitions and rejoin.")
    return _next(member, target_epoch, target_epoch, target, owned, partition_epoch)


def _next(member: ConsumerGroupMember, epoch: int, target_epoch: int, target: Assignment,
          owned: Assignment | None, partition_epoch: PartitionEpoch) -> ConsumerGroupMember:
    keep: Assignment = {}
    revoke: Assignment = {}
    gain: Assignment = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, set())
        current = member.assigned.get(topic, set())
        kept = current & wanted
        free = {p for p in wanted - kept if partition_epoch(topic, p) == -1}
        unreleased = unreleased or len(free) < len(wanted - kept)
        for into, parts in ((keep, kept), (revoke, current - kept), (gain, free)):
            if parts:
                into[topic] = parts
    if revoke and _still_owns(owned, revoke):
        return _moved(member, MemberState.UNREVOKED_PARTITIONS, epoch, keep, revoke)
    for topic, parts in gain.items():
        keep.setdefault(topic, set()).update(parts)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _moved(member, state, target_epoch, keep, {})


def _moved(member: ConsumerGroupMember, state: MemberState, epoch: int,
           assigned: Assignment, pending_revocation: Assignment) -> ConsumerGroupMember:
    previous = member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
    return replace(member, state=state, member_epoch=epoch, previous_member_epoch=previous,
                   assigned=assigned, pending_revocation=pending_revocation)


def _still_owns(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether the member still owns any of ``partitions``; a null ``owned`` (not
    reported) counts as yes, as in Kafka's ownsRevokedPartitions."""
    if owned is None:
        return True
    return any(owned.get(topic, set()) & parts for topic, parts in partitions.items())
