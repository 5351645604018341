"""MetadataCache: what this broker knows about the cluster (itself) and its topics.

A single node is its own controller and the leader of every partition.  The
topic table is guarded by a lock because handler threads read and create
topics concurrently.
"""

from __future__ import annotations

import re
import threading
import uuid
from dataclasses import dataclass

from kafka_net.config import EndPoint
from kafka_net.server.internal_topics import is_internal
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.partition_limits import (
    TopicCreationError, broker_limit_error, not_growing_error)

# Kafka's org.apache.kafka.common.internals.Topic.  fullmatch, never "$": "$"
# also matches before a trailing newline, so "t\n" would pass.
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249


def topic_name_error(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's Topic.validate message), or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return ("Topic name is illegal, it can't be longer than "
                f"{MAX_NAME_LENGTH} characters, topic name: {name}")
    if not _LEGAL_TOPIC.fullmatch(name):
        return (f'Topic name "{name}" is illegal, it contains a character other than '
                "ASCII alphanumerics, '.', '_' and '-'")
    return None


def unify_collision_chars(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: '.' and '_' become one character in
    metric names, so two topics differing only there would share metrics."""
    return name.replace(".", "_")


@dataclass(frozen=True)
class TopicMetadata:
    """A topic as Metadata answers describe it: name, id, partition count."""

    name: str
    topic_id: uuid.UUID
    num_partitions: int
    is_internal: bool = False


class MetadataCache:
    def __init__(self, node_id: int, cluster_id: str) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self._advertised: dict[str, EndPoint] = {}
        self._topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, str] = {}   # topic id -> name
        self._unified: dict[str, str] = {}     # unify_collision_chars(name) -> name
        self._total_partitions = 0
        # Goes up with every topic added: consumer groups resolve their regular
        # expressions again when it passed their last resolution (Kafka's
        # lastMetadataImageWithNewTopics).
        self.new_topics_version = 0
        # Goes up with every change of a topic (added, removed, grown): consumer
        # groups recompute their subscribed topics' metadata only when it moved.
        self.topics_version = 0
        self._lock = threading.Lock()

    def set_advertised_endpoints(self, endpoints: list[EndPoint]) -> None:
        self._advertised = {e.listener_name: e for e in endpoints}

    def endpoint_for(self, listener_name: str) -> EndPoint | None:
        """Kafka answers Metadata with the address of the listener the request came in on."""
        return self._advertised.get(listener_name)

    def advertised_endpoints(self) -> list[EndPoint]:
        return list(self._advertised.values())

    def topics(self) -> list[TopicMetadata]:
        with self._lock:
            return sorted(self._topics.values(), key=lambda t: t.name)

    def topic(self, name: str) -> TopicMetadata | None:
        with self._lock:
            return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        with self._lock:
            name = self._by_id.get(topic_id)
            return None if name is None else self._topics.get(name)

    def total_partitions(self) -> int:
        with self._lock:
            return self._total_partitions

    def creation_error(self, name: str, num_partitions: int,
                       max_total: int | None = None) -> TopicCreationError | None:
        """Why a new topic ``name`` may not be created now (collision or partition
        limit), or None.  ``create_topic`` checks the same under its lock."""
        with self._lock:
            return self._creation_error_locked(name, num_partitions, max_total)

    def _creation_error_locked(self, name, num_partitions, max_total):
        colliding = self._unified.get(unify_collision_chars(name))
        if colliding is not None and colliding != name:
            return TopicCreationError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                      f"Topic '{name}' collides with existing topic: {colliding}")
        return broker_limit_error(self._total_partitions, num_partitions, max_total)

    def create_topic(self, name: str, num_partitions: int,
                     max_total: int | None = None) -> tuple[TopicMetadata, bool]:
        """Create ``name`` unless it exists; return (topic, created).

        Raises TopicCreationError if it collides with a topic or would take the
        broker past ``max_total`` partitions; nothing is created then.
        """
        with self._lock:
            existing = self._topics.get(name)
            if existing is not None:
                return existing, False
            error = self._creation_error_locked(name, num_partitions, max_total)
            if error is not None:
                raise error
            topic = self._add_locked(name, uuid.uuid4(), num_partitions)
            return topic, True

    def delete_topic(self, name: str) -> bool:
        with self._lock:
            return self._remove_locked(name) is not None

    def _add_locked(self, name: str, topic_id: uuid.UUID, num_partitions: int) -> TopicMetadata:
        # Kafka's Metadata flags a topic internal by its name (Topic.isInternal).
        topic = TopicMetadata(name, topic_id, num_partitions, is_internal(name))
        self._topics[name] = topic
        self._by_id[topic_id] = name
        self._unified[unify_collision_chars(name)] = name
        self._total_partitions += num_partitions
        self.new_topics_version += 1
        self.topics_version += 1
        return topic

    def _remove_locked(self, name: str) -> TopicMetadata | None:
        topic = self._topics.pop(name, None)
        if topic is None:
            return None
        self._by_id.pop(topic.topic_id, None)
        if self._unified.get(unify_collision_chars(name)) == name:
            del self._unified[unify_collision_chars(name)]
        self._total_partitions -= topic.num_partitions
        self.topics_version += 1
        return topic

    # -- applying metadata records (server/controller.py; the same at replay) ------------

    def add_topic(self, name: str, topic_id: uuid.UUID) -> TopicMetadata:
        """TopicRecord: a topic with no partitions yet (PartitionRecords follow).
        The same topic again (a snapshot replayed after the records it sums up)
        changes nothing."""
        with self._lock:
            existing = self._topics.get(name)
            if existing is not None and existing.topic_id == topic_id:
                return existing
            self._remove_locked(name)
            return self._add_locked(name, topic_id, 0)

    def add_partition(self, topic_id: uuid.UUID, partition_id: int) -> TopicMetadata | None:
        """PartitionRecord: the topic now has partitions 0..partition_id."""
        with self._lock:
            name = self._by_id.get(topic_id)
            if name is None:
                return None
            topic = self._topics[name]
            count = max(topic.num_partitions, partition_id + 1)
            updated = TopicMetadata(name, topic_id, count, topic.is_internal)
            self._topics[name] = updated
            self._total_partitions += count - topic.num_partitions
            self.topics_version += 1
            return updated

    def remove_topic(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        """RemoveTopicRecord."""
        with self._lock:
            name = self._by_id.get(topic_id)
            return None if name is None else self._remove_locked(name)

    def set_partition_count(self, name: str, count: int,
                            max_total: int | None = None) -> TopicMetadata | None:
        """Grow ``name`` to ``count`` partitions (None if unknown).

        Raises TopicCreationError if ``count`` is not larger than the current
        count or would take the broker past ``max_total``.
        """
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                return None
            adding = count - topic.num_partitions
            error = (not_growing_error(topic.num_partitions, count)   # a concurrent grower won
                     or broker_limit_error(self._total_partitions, adding, max_total))
            if error is not None:
                raise error
            updated = TopicMetadata(topic.name, topic.topic_id, count, topic.is_internal)
            self._topics[name] = updated
            self._total_partitions += adding
            self.topics_version += 1
            return updated

    def growth_error(self, name: str, count: int,
                     max_total: int | None = None) -> TopicCreationError | None:
        """Why ``name`` may not grow to ``count`` partitions now (see set_partition_count)."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                return None
            return (not_growing_error(topic.num_partitions, count)
                    or broker_limit_error(self._total_partitions,
                                          count - topic.num_partitions, max_total))
