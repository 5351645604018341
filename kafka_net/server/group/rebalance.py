"""The timers of a rebalance (Kafka's ``DelayedJoin``, ``InitialDelayedJoin``,
``DelayedHeartbeat``) and the protocol vote.

They live in the coordinator's "Rebalance" purgatory and call back the one
step they were made for (the classic coordinator's ``complete_join`` or an
``expire``: the consumer and streams protocols' members get their session
and rebalance timers from :func:`arm_member_timers`).  Callbacks, not the
coordinator itself, so this module imports no coordinator.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.group import Group, Member
from kafka_net.server.group.results import JoinedMember, JoinRequest, JoinResult
from kafka_net.server.purgatory import DelayedOperation

# complete_join(group); expire(group, member_id)
CompleteJoin = Callable[[Group], None]
Expire = Callable[[Group, str], None]
JoinCallback = Callable[[JoinResult], None]


class DelayedJoin(DelayedOperation):
    """Completes the join phase when every member has rejoined, or at the
    rebalance timeout."""

    def __init__(self, complete_join: CompleteJoin, group: Group, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.complete_join, self.group = complete_join, group

    def try_complete(self) -> bool:
        with self.group.lock:
            superseded = self.group.join_op is not self
            if superseded or self.group.all_joined():
                return self.force_complete()
            return False

    def on_complete(self) -> None:
        if self.group.join_op is self:
            self.complete_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """The first rebalance of an empty group waits its full delay, so that
    consumers starting together join one generation."""

    def try_complete(self) -> bool:
        return False


class DelayedHeartbeat(DelayedOperation):
    def __init__(self, expire: Expire, group: Group, member_id: str, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.expire, self.group, self.member_id = expire, group, member_id

    def try_complete(self) -> bool:
        return False  # only its deadline matters; expire() re-checks the member

    def on_complete(self) -> None:
        self.expire(self.group, self.member_id)


def arm_member_timers(purgatory, expire: Expire, group: Group, member,
                      session_timeout_ms: int, revoking: bool):
    """A consumer or streams group member with its deadlines set (Kafka's session
    and rebalance timers of both protocols): a new session from now, and while
    it is ``revoking`` (owns what its target takes away) the rebalance timeout
    from when it started to; each deadline gets a DelayedHeartbeat that calls
    ``expire`` (which re-checks, so stale timers are harmless)."""
    now = time.monotonic()
    purgatory.schedule(DelayedHeartbeat(expire, group, member.member_id,
                                        session_timeout_ms))
    revocation = member.revocation_deadline if revoking else None
    if revoking and revocation is None:
        revocation = now + member.rebalance_timeout_ms / 1000
        purgatory.schedule(DelayedHeartbeat(expire, group, member.member_id,
                                            member.rebalance_timeout_ms))
    return replace(member, session_deadline=now + session_timeout_ms / 1000,
                   revocation_deadline=revocation)


def member_expiry(member, owned: str) -> str | None:
    """Why a consumer or streams group member is fenced now (a passed session or
    revocation deadline), None while it is not; ``owned``: "partitions", "tasks"."""
    now = time.monotonic()
    if now >= member.session_deadline:
        return "the member session expired"
    if member.revocation_deadline is not None and now >= member.revocation_deadline:
        return f"the member failed to revoke its {owned} within the rebalance timeout"
    return None


def select_protocol(group: Group) -> str:
    """A protocol every member supports, by members' votes for their first choice."""
    members = list(group.members.values())
    common = set.intersection(*({n for n, _ in m.protocols} for m in members))
    votes: dict[str, int] = {}
    for m in members:
        choice = next(n for n, _ in m.protocols if n in common)
        votes[choice] = votes.get(choice, 0) + 1
    return max(sorted(votes), key=votes.__getitem__)


# -- the classic join's answers (the coordinator's and a returning static member's) --


def update_member(member: Member, req: JoinRequest, respond: JoinCallback) -> None:
    member.protocols = req.protocols
    member.session_timeout_ms = req.session_timeout_ms
    if req.rebalance_timeout_ms > 0:
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
    # A JoinGroup already parked for this member came, necessarily, from another
    # connection (the first one is muted while its JoinGroup is parked): the
    # client gave up on it.  Answer it anyway so that its connection is
    # unmuted; the new request is the one that counts.
    member.answer_join(JoinResult.failed(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
    member.on_join = respond


def join_answer(group: Group, member: Member) -> JoinResult:
    is_leader = member.member_id == group.leader_id
    return JoinResult(
        ErrorCode.NONE, member.member_id, group.generation_id, group.protocol_type,
        group.protocol_name, group.leader_id or "",
        [JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
         for m in group.members.values()] if is_leader else [])
