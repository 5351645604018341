"""Static membership (KIP-345): a member that names a ``group.instance.id``
keeps its place in the group across restarts.

A restarted static consumer joins with its instance id and no member id.
Kafka's ``GroupMetadataManager.classicGroupJoinNewStaticMember`` then:

* gives it a new member id (``<instance id>-<uuid>``) and *replaces* the old
  member (:meth:`~kafka_net.server.group.group.Group.replace_static_member`):
  same assignment, same leadership; the old id is fenced, so a zombie still
  using it gets FENCED_INSTANCE_ID on heartbeats, commits, syncs and leaves;
* in a Stable group whose chosen protocol does not change, answers at once
  with the current generation and **no rebalance**: the other members are not
  disturbed, and the returning member's SyncGroup gets its old assignment.
  Before JoinGroup v9 the answer names the *previous* leader id, so a
  returning leader does not think it must assign; from v9 a leader is told
  so and told to skip the assignment (KIP-814);
* otherwise (the protocol would change, or the group is mid-rebalance)
  joins the rebalance as the old member would have.

Static members also survive the end of a join phase they did not rejoin in:
only their session timeout removes them (and that rebalances the group).

:class:`StaticMembership` is a part the
:class:`~kafka_net.server.group.coordinator.GroupCoordinator` holds: it gets the
group registry (to store the group) and the coordinator's rebalance entry
points (``add_member_and_rebalance``, ``prepare_rebalance``,
``try_complete_join``, ``schedule_expiry``), passed in, not inherited.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace

from kafka_net.log_safety import escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.group import Group, GroupConfig
from kafka_net.server.group.rebalance import join_answer, select_protocol, update_member
from kafka_net.server.group.registry import GroupRegistry
from kafka_net.server.group.results import JoinRequest, JoinResult
from kafka_net.server.group.state import GroupState

log = logging.getLogger(__name__)

S = GroupState


class StaticMembership:
    def __init__(self, config: GroupConfig, registry: GroupRegistry, rebalance) -> None:
        """``rebalance``: the GroupCoordinator, whose rebalance steps a join may take."""
        self.config = config
        self._registry = registry
        self._rebalance = rebalance

    def join_new_static_member(self, group: Group, req: JoinRequest, respond):
        """A JoinGroup with an instance id and no member id (under the group's lock)."""
        instance_id = req.group_instance_id
        new_member_id = f"{instance_id}-{uuid.uuid4()}"
        old_member_id = group.static_member_id(instance_id)
        if old_member_id is None:
            if len(group.members) + len(group.pending_members) >= self.config.max_size:
                return JoinResult.failed(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
            log.info("Static member with groupInstanceId=%s and unknown member id joins group "
                     "%s in %s state. Created a new member id %s for this member and added "
                     "to the group.", escape(instance_id), escape(group.group_id), group.state,
                     escape(new_member_id))
            return self._rebalance.add_member_and_rebalance(group, req, new_member_id, respond)
        log.info("Static member with groupInstanceId=%s and unknown member id joins group %s "
                 "in %s state. Replacing previously mapped member %s with this "
                 "groupInstanceId.", escape(instance_id), escape(group.group_id), group.state,
                 escape(old_member_id))
        return self._update_static_member_and_rebalance(
            group, req, old_member_id, new_member_id, respond)

    def _update_static_member_and_rebalance(self, group: Group, req: JoinRequest,
                                            old_member_id: str, new_member_id: str, respond):
        current_leader = group.leader_id
        member = group.replace_static_member(old_member_id, new_member_id)
        # The old id's heartbeat timer finds no member and does nothing.
        self._rebalance.schedule_expiry(group, new_member_id, member.session_timeout_ms)
        if group.state == S.STABLE:
            member.protocols = req.protocols
            if select_protocol(group) == group.protocol_name:
                log.info("Static member which joins during Stable stage and doesn't affect "
                         "the selected protocol will not trigger a rebalance.")
                update_member(member, req, respond)
                member.on_join = None   # answered here, not parked
                self._registry.store_group(group)   # the new member id, as Kafka persists it
                return self._static_join_answer(group, member, current_leader, req)
            update_member(member, req, respond)
            self._rebalance.prepare_rebalance(
                group, f"Group's selectedProtocol will change because static member "
                       f"{new_member_id} with instance id {req.group_instance_id} joined "
                       f"with change of protocol")
        else:
            update_member(member, req, respond)
            if group.state == S.COMPLETING_REBALANCE:
                # The leader may already hold the old id in its assignment: start over.
                self._rebalance.prepare_rebalance(
                    group, f"Updating metadata for static member {new_member_id} with "
                           f"instance id {req.group_instance_id}")
        self._rebalance.try_complete_join(group)
        return None

    def _static_join_answer(self, group: Group, member, previous_leader: str | None,
                            req: JoinRequest) -> JoinResult:
        if req.supports_skip_assignment:
            answer = join_answer(group, member)   # the leader's lists the members
            return replace(answer, skip_assignment=member.member_id == group.leader_id)
        return JoinResult(ErrorCode.NONE, member.member_id, group.generation_id,
                          group.protocol_type, group.protocol_name, previous_leader or "")
