"""A consumer-protocol (KIP-848) group as records of ``__consumer_offsets``.

Kafka's new group coordinator keeps a consumer group as these records
(``GroupCoordinatorRecordHelpers``), each key holding the latest state of
one part, so that compaction keeps exactly the group:

=====================================  ==========================================
record (key version)                   holds
=====================================  ==========================================
ConsumerGroupMetadata (3)              the group epoch
ConsumerGroupMemberMetadata (5)        a member: instance id, rack, client id and
                                       host, subscribed topics, rebalance timeout,
                                       server assignor; a classic member's session
                                       timeout and protocols
ConsumerGroupTargetAssignmentMetadata  the assignment epoch
(6)
ConsumerGroupTargetAssignmentMember    a member's target partitions
(7)
ConsumerGroupCurrentMemberAssignment   a member's epoch, previous epoch, state,
(8)                                    assigned and pending-revocation partitions
=====================================  ==========================================

:func:`records_of` gives a group's records as {key: value} bytes; the
GroupMetadataManager writes those that differ from what it wrote last, and
tombstones for the keys that went (a member fenced or gone).  A heartbeat
that changes no epoch and no membership changes at most its own member's
records, so only those are encoded (:func:`member_records`).
:class:`ConsumerGroupImage` rebuilds groups from the records at load.
(ConsumerGroupPartitionMetadata, the subscribed topics' partition counts,
is not written: kafka-net recomputes the target from the topics; nor is
ConsumerGroupRegularExpression: a member's regex is in its metadata record,
and the first heartbeat after a load resolves it again.)
"""

from __future__ import annotations

from typing import ClassVar

from kafka_net.protocol.coordinator_records import (
    consumer_group_key, consumer_group_value)
from kafka_net.server.group.assignors import Assignment
from kafka_net.server.group.consumer_group import (
    ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, MemberState)
from kafka_net.server.group.modern_data import ModernGroupImage, records_in_order

# Kafka's MemberState ids (the CurrentMemberAssignment's State byte).
STATE_IDS = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1,
             MemberState.UNRELEASED_PARTITIONS: 2, MemberState.UNKNOWN: 127}
STATES = {v: k for k, v in STATE_IDS.items()}

GROUP, MEMBER, TARGET, TARGET_MEMBER, CURRENT = 3, 5, 6, 7, 8


def _partitions(assignment: Assignment) -> list[dict]:
    return [{"topic_id": topic_id, "partitions": sorted(parts)}
            for topic_id, parts in sorted(assignment.items(), key=lambda kv: str(kv[0]))
            if parts]


def _assignment(value: list[dict]) -> Assignment:
    return {tp["topic_id"]: set(tp["partitions"]) for tp in value}


def member_records(cg: ConsumerGroup, member_id: str) -> dict[bytes, bytes]:
    """A member's own two records (its metadata and its current assignment)."""
    m = cg.members[member_id]
    gid = cg.group_id
    return {
        consumer_group_key(MEMBER, gid, member_id): consumer_group_value(MEMBER, {
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "server_assignor": m.server_assignor,
            "classic_member_metadata": None if m.classic is None else {
                "session_timeout_ms": m.classic.session_timeout_ms,
                "supported_protocols": [{"name": n, "metadata": md}
                                        for n, md in m.classic.supported_protocols]}}),
        consumer_group_key(CURRENT, gid, member_id): consumer_group_value(CURRENT, {
            "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": STATE_IDS[m.state], "assigned_partitions": _partitions(m.assigned),
            "partitions_pending_revocation": _partitions(m.pending_revocation)}),
    }


def records_of(cg: ConsumerGroup) -> dict[bytes, bytes]:
    """Every record of the group, in Kafka's order within a change."""
    group_record = {consumer_group_key(GROUP, cg.group_id):
                    consumer_group_value(GROUP, {"epoch": cg.group_epoch})}
    return records_in_order(cg, lambda member_id: member_records(cg, member_id), group_record,
                            (TARGET, TARGET_MEMBER),
                            lambda target: {"topic_partitions": _partitions(target)})


def shape(cg: ConsumerGroup) -> tuple:
    """What, unchanged, lets a heartbeat write only its member's records."""
    return cg.group_epoch, cg.assignment_epoch, frozenset(cg.members), frozenset(cg.target)


class ConsumerGroupImage(ModernGroupImage):
    """The KIP-848 records of one load, replayed (modern_data.ModernGroupImage)."""

    PREFIX: ClassVar[str] = "ConsumerGroup"

    def groups(self) -> dict[str, ConsumerGroup]:
        return {gid: _group(gid, parts) for gid, parts in self.standing().items()}


def _group(group_id: str, parts: dict) -> ConsumerGroup:
    cg = ConsumerGroup(group_id, parts["Metadata"]["epoch"],
                       ModernGroupImage.assignment_epoch(parts))
    for member_id, m in parts["members"].items():
        current = parts["current"].get(member_id)
        progress = {} if current is None else dict(
            member_epoch=current["member_epoch"],
            previous_member_epoch=current["previous_member_epoch"],
            state=STATES.get(current["state"], MemberState.UNKNOWN),
            assigned=_assignment(current["assigned_partitions"]),
            pending_revocation=_assignment(current["partitions_pending_revocation"]))
        cg.members[member_id] = ConsumerGroupMember(
            member_id, m["instance_id"], m["rack_id"], m["client_id"], m["client_host"],
            m["rebalance_timeout_ms"], tuple(m["subscribed_topic_names"]), m["server_assignor"],
            subscribed_topic_regex=m.get("subscribed_topic_regex") or None,
            classic=_classic(m.get("classic_member_metadata")), **progress)
    cg.target = {member_id: _assignment(t["topic_partitions"])
                 for member_id, t in parts["targets"].items()}
    return cg


def _classic(value: dict | None) -> ClassicMemberMetadata | None:
    if value is None:
        return None
    return ClassicMemberMetadata(value["session_timeout_ms"], tuple(
        (p["name"], p["metadata"] or b"") for p in value["supported_protocols"]))


__all__ = ["ConsumerGroupImage", "member_records", "records_of", "shape"]
