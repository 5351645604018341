"""A streams group (KIP-1071) as Kafka's records in ``__consumer_offsets``.

=====================================  ==========================================
record (key version)                   value
=====================================  ==========================================
StreamsGroupMetadata (17)              group epoch, metadata hash, validated
                                       topology epoch and last assignment
                                       configs (num.standby.replicas), both
                                       tagged as in Kafka 4.3 and 4.4, the
                                       stored topology description's epoch
                                       (tagged, KIP-1331) and description
                                       (kafka-net's tag 10000)
StreamsGroupMemberMetadata (19)        a member's ids, rebalance timeout, topology
                                       epoch, process id, user endpoint, tags
StreamsGroupTargetAssignmentMetadata   the assignment epoch
(20)
StreamsGroupTargetAssignmentMember     a member's target active, standby and
(21)                                   warm-up tasks
StreamsGroupCurrentMemberAssignment    a member's epochs, state, tasks and tasks
(22)                                   pending revocation
StreamsGroupTopology (23)              the topology, as the first member sent it
=====================================  ==========================================

Written as the consumer group's records are (see
:mod:`kafka_net.server.group.consumer_group_records`): the GroupMetadataManager
appends those that differ from what it wrote last and tombstones those that
went.  The members' task offsets are not records in Kafka either: they come
again with the next heartbeats.
"""

from __future__ import annotations

from typing import ClassVar

from kafka_net.protocol.coordinator_records import (  # noqa: F401  (STREAMS_RECORD_NAMES: re-exported)
    STREAMS_RECORD_NAMES, consumer_group_key, consumer_group_value)
from kafka_net.server.group.modern_data import ModernGroupImage, records_in_order
from kafka_net.server.group.streams_group import (
    MemberState, StreamsGroup, StreamsGroupMember, Tasks, TasksTuple)

GROUP, MEMBER, TARGET, TARGET_MEMBER, CURRENT, TOPOLOGY = 17, 19, 20, 21, 22, 23


def _task_ids(tasks: Tasks) -> list[dict]:
    return [{"subtopology_id": sid, "partitions": sorted(parts)}
            for sid, parts in sorted(tasks.items()) if parts]


def _tasks(value: list[dict]) -> Tasks:
    return {t["subtopology_id"]: set(t["partitions"]) for t in value}


def _tuple_value(tasks: TasksTuple, suffix: str = "") -> dict:
    return {f"active_tasks{suffix}": _task_ids(tasks.active),
            f"standby_tasks{suffix}": _task_ids(tasks.standby),
            f"warmup_tasks{suffix}": _task_ids(tasks.warmup)}


def _tuple(value: dict, suffix: str = "") -> TasksTuple:
    return TasksTuple(_tasks(value[f"active_tasks{suffix}"]),
                      _tasks(value[f"standby_tasks{suffix}"]),
                      _tasks(value[f"warmup_tasks{suffix}"]))


def member_records(sg: StreamsGroup, member_id: str) -> dict[bytes, bytes]:
    """A member's metadata and current assignment records."""
    m = sg.members[member_id]
    gid = sg.group_id
    endpoint = None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                      "port": m.user_endpoint[1]}
    return {
        consumer_group_key(MEMBER, gid, member_id): consumer_group_value(MEMBER, {
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "topology_epoch": m.topology_epoch, "process_id": m.process_id,
            "user_endpoint": endpoint,
            "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())]}),
        consumer_group_key(CURRENT, gid, member_id): consumer_group_value(CURRENT, {
            "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": m.state.value, **_tuple_value(m.assigned),
            **_tuple_value(m.pending_revocation, "_pending_revocation")}),
    }


def records_of(sg: StreamsGroup) -> dict[bytes, bytes]:
    """Every record of the group, in Kafka's order within a change."""
    gid = sg.group_id
    group_records: dict[bytes, bytes] = {}
    if sg.topology is not None:
        group_records[consumer_group_key(TOPOLOGY, gid)] = consumer_group_value(
            TOPOLOGY, sg.topology)
    group_records[consumer_group_key(GROUP, gid)] = consumer_group_value(GROUP, {
        "epoch": sg.group_epoch, "metadata_hash": sg.metadata_hash,
        "validated_topology_epoch": sg.validated_topology_epoch,
        "last_assignment_configs": [{"key": k, "value": v}
                                    for k, v in sorted(sg.assignment_configs.items())],
        "stored_description_topology_epoch": sg.topology_description_epoch,
        "failed_description_topology_epoch": -1,
        "topology_description": sg.topology_description})
    return records_in_order(sg, lambda member_id: member_records(sg, member_id),
                            group_records, (TARGET, TARGET_MEMBER), _tuple_value)


def shape(sg: StreamsGroup) -> tuple:
    """What, unchanged, lets a heartbeat write only its member's records."""
    return (sg.group_epoch, sg.assignment_epoch, frozenset(sg.members), frozenset(sg.target),
            sg.topology_epoch(), sg.metadata_hash)


class StreamsGroupImage(ModernGroupImage):
    """The KIP-1071 records of one load, replayed (modern_data.ModernGroupImage)."""

    PREFIX: ClassVar[str] = "StreamsGroup"

    def groups(self) -> dict[str, StreamsGroup]:
        return {gid: _group(gid, parts) for gid, parts in self.standing().items()}


def _group(group_id: str, parts: dict) -> StreamsGroup:
    meta = parts["Metadata"]
    sg = StreamsGroup(group_id, meta["epoch"], ModernGroupImage.assignment_epoch(parts),
                      topology=parts.get("Topology"), metadata_hash=meta["metadata_hash"],
                      validated_topology_epoch=meta["validated_topology_epoch"],
                      assignment_configs={c["key"]: c["value"]
                                          for c in meta["last_assignment_configs"] or ()},
                      topology_description=meta["topology_description"],
                      topology_description_epoch=meta["stored_description_topology_epoch"])
    for member_id, m in parts["members"].items():
        current = parts["current"].get(member_id)
        progress = {} if current is None else dict(
            member_epoch=current["member_epoch"],
            previous_member_epoch=current["previous_member_epoch"],
            state=_state(current["state"]), assigned=_tuple(current),
            pending_revocation=_tuple(current, "_pending_revocation"))
        endpoint = m["user_endpoint"]
        sg.members[member_id] = StreamsGroupMember(
            member_id, m["instance_id"], m["rack_id"], m["client_id"], m["client_host"],
            m["rebalance_timeout_ms"], m["topology_epoch"], m["process_id"],
            None if endpoint is None else (endpoint["host"], endpoint["port"]),
            {t["key"]: t["value"] for t in m["client_tags"]}, **progress)
    sg.target = {member_id: _tuple(t) for member_id, t in parts["targets"].items()}
    return sg


def _state(value: int) -> MemberState:
    try:
        return MemberState(value)
    except ValueError:
        return MemberState.UNKNOWN


__all__ = ["StreamsGroupImage", "member_records", "records_of", "shape",
           "STREAMS_RECORD_NAMES"]
