"""The coordinator's administrative side: describe, list and delete groups,
commit, fetch and delete offsets (Kafka's ``GroupCoordinator`` methods of the
same names; the rebalance protocol is in :mod:`.coordinator`).

:class:`GroupAdmin` works on the one group registry
(:class:`~kafka_net.server.group.registry.GroupRegistry`: the groups and their
``offsets``, :mod:`.offsets`); the
:class:`~kafka_net.server.group.coordinator.GroupCoordinator` holds one and
hands these requests to it.
"""

from __future__ import annotations

import logging

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.consumer_protocol import PROTOCOL_TYPE, subscribed_topics
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.group import Group
from kafka_net.server.group.registry import GroupRegistry
from kafka_net.server.group.results import (
    GroupDescription, GroupOverview, MemberDescription, OffsetAndMetadata, PartitionCommit)
from kafka_net.server.group.state import GroupState

log = logging.getLogger(__name__)
# A client controls the metadata, and every rebalance reads it again: one line
# per interval, however often a group rejoins with metadata that does not parse.
_unparseable = RateLimitedLog(log)

S = GroupState


def compute_subscribed_topics(group: Group) -> frozenset[str] | None:
    """Kafka's ``ClassicGroup.computeSubscribedTopics``: the topics the members of a
    "consumer" group subscribe to, or None when unknown (another protocol type, no
    protocol chosen yet, or metadata that does not parse)."""
    if group.protocol_type != PROTOCOL_TYPE:
        return None
    if not group.members:
        return frozenset()
    if group.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in group.members.values():
        member_topics = subscribed_topics(member.metadata_for(group.protocol_name))
        if member_topics is None:
            _unparseable.log(
                logging.WARNING, "consumer-protocol",
                "Failed to parse Consumer Protocol %s:%s of group %s. Consumer group "
                "coordinator is not aware of the subscribed topics.", PROTOCOL_TYPE,
                escape(group.protocol_name), escape(group.group_id))
            return None
        topics.update(member_topics)
    return frozenset(topics)


def is_subscribed_to_topic(group: Group, topic: str) -> bool:
    """``ClassicGroup.isSubscribedToTopic``: when the topics are unknown, a "consumer"
    group counts as subscribed (to be safe), any other group as not."""
    if group.subscribed_topics is None:
        return group.protocol_type == PROTOCOL_TYPE
    return topic in group.subscribed_topics


def _subscribed(group: Group, topic: str) -> bool:
    if group.modern is not None:   # KIP-848: the members' subscriptions are known
        return topic in group.modern.subscribed_topics()
    if group.streams is not None:  # KIP-1071: the topology's source topics
        return topic in group.streams.source_topics()
    return is_subscribed_to_topic(group, topic)


class GroupAdmin:
    def __init__(self, registry: GroupRegistry) -> None:
        self._registry = registry

    # -- DeleteGroups -------------------------------------------------------------------

    def delete_groups(self, group_ids: list[str]) -> list[int]:
        """One error code per group id, in order (``GroupCoordinatorShard.deleteGroups``):
        GROUP_ID_NOT_FOUND for an unknown (or already deleted) group, NON_EMPTY_GROUP
        for a group with members; otherwise the group and its offsets are gone."""
        errors, deleted = [], []
        for group_id in group_ids:
            error = self._delete_group(group_id)
            errors.append(error)
            if error == ErrorCode.NONE:
                deleted.append(group_id)
        if deleted:
            log.info("The following groups were deleted: %s.",
                     ", ".join(escape(g) for g in deleted))
        return errors

    def _delete_group(self, group_id: str) -> int:
        group = self._registry.group(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        with group.lock:
            if group.state == S.DEAD:
                return ErrorCode.GROUP_ID_NOT_FOUND
            # A consumer-protocol (KIP-848) group keeps its classic state Empty: its
            # members are in ``group.modern``.
            if group.state != S.EMPTY or (group.modern is not None and group.modern.members) \
                    or (group.streams is not None and group.streams.members):
                return ErrorCode.NON_EMPTY_GROUP
            store = self._registry.offsets.store
            if store is not None:
                error = store.remove_group(group_id, list(group.offsets))
                if error:
                    return error
            group.transition_to(S.DEAD)
            group.offsets.clear()
        self._registry.forget(group)
        return ErrorCode.NONE

    # -- OffsetDelete -------------------------------------------------------------------

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]
                       ) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        """(top-level error, [(topic, [(partition, error)])]) for partitions that exist
        (``OffsetMetadataManager.deleteOffsets``): a topic the group consumes gets
        GROUP_SUBSCRIBED_TO_TOPIC on each partition; other offsets are deleted."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self._registry.group(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        with group.lock:
            if group.state == S.DEAD:
                return ErrorCode.GROUP_ID_NOT_FOUND, []
            if (group.is_classic and group.state != S.EMPTY
                    and group.protocol_type != PROTOCOL_TYPE):
                return ErrorCode.NON_EMPTY_GROUP, []
            results = []
            for topic, partitions in topics:
                if _subscribed(group, topic):
                    results.append((topic, [(p, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
                                            for p in partitions]))
                    continue
                error = self._remove_offsets(group, [(topic, p) for p in partitions])
                results.append((topic, [(p, error) for p in partitions]))
            return ErrorCode.NONE, results

    def _remove_offsets(self, group: Group, partitions: list[tuple[str, int]]) -> int:
        """Tombstones for the committed ones among ``partitions``, then forget them."""
        committed = [tp for tp in partitions if tp in group.offsets]
        store = self._registry.offsets.store
        if committed and store is not None:
            error = store.remove_offsets(group.group_id, committed)
            if error:
                return error
        for tp in committed:
            del group.offsets[tp]
        return ErrorCode.NONE

    # -- offsets (kept in offsets.py; the coordinator is the handlers' one door) ---------

    def commit_offsets(self, group_id: str, member_id: str, generation: int,
                       commits: list[PartitionCommit],
                       group_instance_id: str | None = None) -> list[int]:
        """One error code per commit, in order (generation -1: a "simple" consumer)."""
        return self._registry.offsets.commit(group_id, member_id, generation, commits,
                                   group_instance_id)

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None
                      ) -> list[tuple[str, list[tuple[int, OffsetAndMetadata]]]]:
        """(topic, [(partition, committed)]); ``topics`` None means all committed."""
        return self._registry.offsets.fetch(group_id, topics)

    def delete_topic_offsets(self, topic: str) -> None:
        self._registry.offsets.delete_topic(topic)

    # -- describe / list ----------------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription:
        """An unknown group is described as Dead, without an error (as Kafka does)."""
        group = self._registry.group(group_id)
        if group is None or not group.is_classic:
            # A consumer-protocol group is not a classic one: Dead, as Kafka answers.
            return GroupDescription(group_id, S.DEAD.value, "", "")
        with group.lock:
            stable = group.state == S.STABLE
            return GroupDescription(
                group_id, group.state.value, group.protocol_type or "",
                (group.protocol_name or "") if stable else "",
                [MemberDescription(
                    m.member_id, m.group_instance_id, m.client_id, m.client_host,
                    m.metadata_for(group.protocol_name) if stable else b"",
                    m.assignment if stable else b"") for m in group.members.values()])

    def list_groups(self) -> list[GroupOverview]:
        # A streams group lists the protocol type "consumer", as Kafka's StreamsGroup
        # (its type, v5's group_type, is "streams").
        return [GroupOverview(g.group_id, (g.protocol_type or "") if g.is_classic
                              else "consumer",
                              g.state_name(), g.group_type)
                for g in self._registry.groups()]
