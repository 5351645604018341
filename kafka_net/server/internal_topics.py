"""The broker's internal topics: ``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``.

Kafka's ``org.apache.kafka.common.internals.Topic`` names them, and its
``AutoTopicCreationManager.creatableTopic`` creates them with the broker's
own layout, never a client's:

========================  =====================================  ==========================
topic                     partitions                             configs
========================  =====================================  ==========================
``__consumer_offsets``    ``offsets.topic.num.partitions`` (50)  cleanup.policy=compact,
                                                                 segment.bytes=
                                                                 ``offsets.topic.segment.bytes``,
                                                                 compression.type=producer
``__transaction_state``   ``transaction.state.log.num.           cleanup.policy=compact,
                          partitions`` (50)                      segment.bytes=``transaction.
                                                                 state.log.segment.bytes``,
                                                                 compression.type=uncompressed
``__share_group_state``   ``share.coordinator.state.topic.       cleanup.policy=compact,
                          num.partitions`` (50)                  segment.bytes=``share.
                                                                 coordinator.state.topic.
                                                                 segment.bytes``
========================  =====================================  ==========================

When: as Kafka does, the first time a coordinator is looked for
(FindCoordinator, through ``AutoTopicCreationManager``), or when a client's
Metadata request names one with auto-creation allowed; kafka-net's
coordinators also make sure of their topic before their first write (a
commit reaching a coordinator that nobody looked up, as the API-layer tests
do).  The replication factor keys are accepted: one node holds one replica.

What clients may do with them (Kafka's rules): read them (Fetch, ListOffsets,
Metadata flags them ``is_internal``); not produce to them (ReplicaManager's
INVALID_TOPIC_EXCEPTION "Cannot append to internal topic"), not create them
(CreateTopics), not delete them (DeleteTopics).

Once a topic exists, its *owners* (the group coordinator for
``__consumer_offsets``, the transaction coordinator for
``__transaction_state``, the share coordinator for ``__share_group_state``) load their state from its partitions: Kafka's
``loadGroupsAndOffsets`` / ``loadTransactionsForTxnTopicPartition``, run when
the broker becomes the partitions' leader.  kafka-net leads every partition,
so that is at creation, or at startup for a topic that came back from the
metadata log (:meth:`InternalTopics.load_existing`).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Iterator

from kafka_net.protocol.records import RecordError, decode_records
from kafka_net.server.partition_limits import TopicCreationError

log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
SHARE_GROUP_STATE_TOPIC_NAME = "__share_group_state"
INTERNAL_TOPICS = frozenset((GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME,
                             SHARE_GROUP_STATE_TOPIC_NAME))


def is_internal(topic: str) -> bool:
    """Kafka's ``Topic.isInternal``."""
    return topic in INTERNAL_TOPICS


def loaded_batches(replica_manager, topic: str, index: int, bad_records) -> Iterator[tuple]:
    """One partition of an internal topic as its owner loads it: each batch as
    (header, its decoded records); a batch that cannot be decoded is skipped with
    a rate-limited error on ``bad_records`` (the owner's RateLimitedLog)."""
    for header, batch in replica_manager.read_batches(topic, index):
        try:
            records = decode_records(batch)
        except RecordError as exc:
            bad_records.log(logging.ERROR, "batch", "Skipping an unreadable batch at "
                            "offset %d of %s-%d: %s", header.base_offset, topic, index, exc)
            continue
        yield header, records


# (topic name, partition count, parsed config overrides) -> (TopicMetadata, created):
# KafkaApis.create_topic.
TopicCreator = Callable[[str, int, dict], tuple]
# Called with the topic's partition count once it exists: load the state it holds;
# may return what to do once the topics' lock is released.
Loader = Callable[[int], "Callable[[], None] | None"]


class InternalTopics:
    """Creates the internal topics and hands them to their owners to load."""

    def __init__(self, config, metadata_cache, config_repository,
                 create_topic: TopicCreator) -> None:
        self._metadata_cache = metadata_cache
        self._config_repository = config_repository
        self._create_topic = create_topic
        self._layouts = {
            GROUP_METADATA_TOPIC_NAME: (config.offsets_topic_num_partitions, {
                "cleanup.policy": "compact",
                "segment.bytes": str(config.offsets_topic_segment_bytes),
                "compression.type": "producer"}),
            TRANSACTION_STATE_TOPIC_NAME: (config.transaction_state_log_num_partitions, {
                "cleanup.policy": "compact",
                "segment.bytes": str(config.transaction_state_log_segment_bytes),
                "compression.type": "uncompressed"}),
            SHARE_GROUP_STATE_TOPIC_NAME: (config.share_coordinator_state_topic_num_partitions, {
                "cleanup.policy": "compact",
                "segment.bytes": str(config.share_coordinator_state_topic_segment_bytes)}),
        }
        self._loaders: dict[str, Loader] = {}
        self._loaded: set[str] = set()
        self._lock = threading.RLock()   # a loader may write to its own topic

    def register_loader(self, topic: str, loader: Loader) -> None:
        self._loaders[topic] = loader

    def partition_count(self, topic: str) -> int:
        """The topic's partitions once it exists, else the configured count."""
        existing = self._metadata_cache.topic(topic)
        return self._layouts[topic][0] if existing is None else existing.num_partitions

    def is_ready(self, topic: str) -> bool:
        return topic in self._loaded

    def load_if_exists(self, topic: str) -> None:
        """Make sure ``topic`` is loaded if it exists; never creates it (a request
        that reads or deletes must not make the internal topic appear)."""
        if topic not in self._loaded and self._metadata_cache.topic(topic) is not None:
            self.ensure(topic)

    def ensure(self, topic: str) -> int:
        """Make sure ``topic`` exists and its owner has loaded it; its partition count.
        Raises TopicCreationError when it cannot be created (max.broker.partitions)."""
        if topic in self._loaded:
            return self.partition_count(topic)
        then: list[Callable[[], None]] = []
        with self._lock:
            if topic not in self._loaded:
                if self._metadata_cache.topic(topic) is None:
                    self._create(topic)
                self._load(topic, then)
        _run(then)
        return self.partition_count(topic)

    def try_ensure(self, topic: str) -> bool:
        """:meth:`ensure`, logging instead of raising; whether the topic is ready."""
        try:
            self.ensure(topic)
            return True
        except TopicCreationError as exc:
            log.warning("Could not create internal topic %s: %s", topic, exc.message)
            return False

    def load_existing(self) -> None:
        """At startup: load the internal topics that came back from the metadata log."""
        then: list[Callable[[], None]] = []
        with self._lock:
            for topic in sorted(self._layouts):
                if self._metadata_cache.topic(topic) is not None and topic not in self._loaded:
                    self._load(topic, then)
        _run(then)

    def _create(self, topic: str) -> None:
        partitions, configs = self._layouts[topic]
        _, created = self._create_topic(topic, partitions,
                                        self._config_repository.validate(topic, configs))
        if created:
            log.info("Created internal topic %s with %d partition(s) and configs %s",
                     topic, partitions, configs)

    def _load(self, topic: str, then: list) -> None:
        """Run ``topic``'s loader (under ``_lock``); what it must do once the lock
        is released (complete a transaction, which writes to the internal topics;
        take a group's lock) goes on ``then``: a loader never waits for a lock
        that a request thread may hold while it waits for ``_lock``."""
        if (topic == TRANSACTION_STATE_TOPIC_NAME and GROUP_METADATA_TOPIC_NAME not in self._loaded
                and self._metadata_cache.topic(GROUP_METADATA_TOPIC_NAME) is not None):
            # Groups first: a transaction completed at load hands its offsets to them.
            self._load(GROUP_METADATA_TOPIC_NAME, then)
        loader = self._loaders.get(topic)
        if loader is not None:
            after = loader(self.partition_count(topic))
            if after is not None:
                then.append(after)
        self._loaded.add(topic)


def _run(then: list[Callable[[], None]]) -> None:
    for step in then:
        step()
