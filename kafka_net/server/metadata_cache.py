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

# Kafka's Topic.validate: legal characters, at most 249 of them, not "." or "..".
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def topic_name_error(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name, or None if it is."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name cannot be '{name}'"
    if not _LEGAL_TOPIC.match(name):
        return f"topic name '{name[:300]}' is illegal: at most 249 of [a-zA-Z0-9._-]"
    return None


@dataclass(frozen=True)
class TopicMetadata:
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
        self._lock = threading.Lock()

    def set_advertised_endpoints(self, endpoints: list[EndPoint]) -> None:
        self._advertised = {e.listener_name: e for e in endpoints}

    def endpoint_for(self, listener_name: str) -> EndPoint | None:
        """Kafka answers Metadata with the address of the listener the request came in on."""
        return self._advertised.get(listener_name)

    def topics(self) -> list[TopicMetadata]:
        with self._lock:
            return sorted(self._topics.values(), key=lambda t: t.name)

    def topic(self, name: str) -> TopicMetadata | None:
        with self._lock:
            return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        with self._lock:
            for t in self._topics.values():
                if t.topic_id == topic_id:
                    return t
        return None

    def create_topic(self, name: str, num_partitions: int) -> tuple[TopicMetadata, bool]:
        """Create ``name`` unless it exists; return (topic, created)."""
        with self._lock:
            existing = self._topics.get(name)
            if existing is not None:
                return existing, False
            topic = TopicMetadata(name, uuid.uuid4(), num_partitions)
            self._topics[name] = topic
            return topic, True

    def delete_topic(self, name: str) -> bool:
        with self._lock:
            return self._topics.pop(name, None) is not None

    def set_partition_count(self, name: str, count: int) -> TopicMetadata | None:
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                return None
            updated = TopicMetadata(topic.name, topic.topic_id, count, topic.is_internal)
            self._topics[name] = updated
            return updated
