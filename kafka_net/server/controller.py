"""Controller: every metadata change as records in the MetadataLog (KRaft's controller, one node).

In KRaft Kafka a metadata change is made by the controller: a control manager
checks the request against the current state and answers with records
(``ReplicationControlManager``: TopicRecord, PartitionRecord,
RemoveTopicRecord; ``ConfigurationControlManager``: ConfigRecord;
``ScramControlManager``: UserScramCredentialRecord and its removal;
``ClientQuotaControlManager``: ClientQuotaRecord; ``ProducerIdControlManager``:
ProducerIdsRecord; ``DelegationTokenControlManager``: DelegationTokenRecord and
its removal, in server/delegation_token_manager.py through this class's lock
and commit).  The records are committed to ``__cluster_metadata`` and
the broker applies them by replaying them (``BrokerMetadataPublisher``).

On one node this class does both.  A change:

1. takes the metadata log's lock (the controller's single thread: changes are
   serialized, so two CreateTopics of one name, or a CreatePartitions racing
   a DeleteTopics, never interleave between check and write);
2. checks the current state (the MetadataCache, the ConfigRepository, ...);
3. commits its records (:meth:`MetadataLog.commit`): one batch, flushed,
   then applied through the replay handlers registered here -- the very code
   a restart runs, so the state in memory is always what the log replays to.

Readers (Metadata, Produce, Fetch) never take the lock: they read the
MetadataCache and the ReplicaManager, which the handlers update.

The record fields are Kafka's (see :mod:`kafka_net.server.metadata_log`);
topic ids are written as UUID text.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from kafka_net.config.group_keys import parse_group_value
from kafka_net.config.topic_keys import TOPIC_CONFIGS, parse_value, to_string
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.security import scram
from kafka_net.security.scram import ScramCredential
from kafka_net.server.config_helper import ConfigResourceType
from kafka_net.server.metadata_cache import MetadataCache, TopicMetadata
from kafka_net.server.metadata_log import MetadataLog
from kafka_net.server.partition_limits import TopicCreationError
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.transaction.coordinator import PRODUCER_ID_BLOCK_SIZE

log = logging.getLogger(__name__)

# Producer ids are handed out in blocks of PRODUCER_ID_BLOCK_SIZE, one
# ProducerIdsRecord per block, so a restart skips the rest of a block and never
# hands out an id twice.
FIRST_PRODUCER_ID = 1000   # kafka-net's first id (Kafka starts at 0)


def topic_config_record(topic: str, name: str, value: Any | None) -> tuple[str, dict]:
    """A ConfigRecord for topic config ``name`` (a parsed value; None: removed)."""
    text = None if value is None else to_string(TOPIC_CONFIGS[name], value)
    return "ConfigRecord", {"resourceType": int(ConfigResourceType.TOPIC),
                            "resourceName": topic, "name": name, "value": text}


def broker_config_record(resource_name: str, name: str, value: str | None) -> tuple[str, dict]:
    """A ConfigRecord for a dynamic broker config (value as text; None: removed)."""
    return "ConfigRecord", {"resourceType": int(ConfigResourceType.BROKER),
                            "resourceName": resource_name, "name": name, "value": value}


def group_config_record(group: str, name: str, value: int | None) -> tuple[str, dict]:
    """A ConfigRecord for a group config (Kafka 4.0's GROUP resource; None: removed)."""
    return "ConfigRecord", {"resourceType": int(ConfigResourceType.GROUP),
                            "resourceName": group, "name": name,
                            "value": None if value is None else str(value)}


def client_metrics_config_record(name: str, key: str, value: str | None) -> tuple[str, dict]:
    """A ConfigRecord for a client metrics subscription (CLIENT_METRICS; None: removed)."""
    return "ConfigRecord", {"resourceType": int(ConfigResourceType.CLIENT_METRICS),
                            "resourceName": name, "name": key, "value": value}


def scram_credential_record(user: str, mechanism: scram.ScramMechanism,
                            credential: ScramCredential) -> tuple[str, dict]:
    return "UserScramCredentialRecord", {
        "name": user, "mechanism": mechanism.type, "salt": credential.salt,
        "storedKey": credential.stored_key, "serverKey": credential.server_key,
        "iterations": credential.iterations}


def remove_scram_credential_record(user: str, mechanism: scram.ScramMechanism):
    return "RemoveUserScramCredentialRecord", {"name": user, "mechanism": mechanism.type}


class Controller:
    """Writes and applies the metadata records of topics, configs, SCRAM
    credentials, client quotas and producer id blocks.

    ``credential_cache``, ``client_quotas``, ``group_coordinator`` and
    ``transaction_coordinator`` are optional (a KafkaApis built alone in a test
    may lack them); :meth:`register` wires whichever are given.
    """

    def __init__(self, metadata_log: MetadataLog, metadata_cache: MetadataCache,
                 replica_manager: ReplicaManager, credential_cache=None, client_quotas=None,
                 group_coordinator=None, transaction_coordinator=None) -> None:
        self.metadata_log = metadata_log
        self.metadata_cache = metadata_cache
        self.replica_manager = replica_manager
        self.credential_cache = credential_cache
        self.client_quotas = client_quotas
        self.group_coordinator = group_coordinator
        self.transaction_coordinator = transaction_coordinator
        self._next_producer_id = FIRST_PRODUCER_ID   # ProducerIdControlManager's next block
        # GROUP config resources (a GroupConfigRepository) and the feature levels
        # (a FeatureControl); KafkaApis sets both.
        self.group_configs = None
        self.features = None
        # Client metrics subscriptions (a ClientMetricsManager); KafkaApis sets it.
        self.client_metrics = None
        # (user, mechanism type) of the credentials records made, and of those records
        # removed: a snapshot writes these, never the static ones of the config file
        # (but their removal, or a deleted static user would come back).
        self._scram_from_records: set[tuple[str, int]] = set()
        self._scram_removed: set[tuple[str, int]] = set()

    @property
    def lock(self):
        """Held from a change's checks through its commit (re-entrant)."""
        return self.metadata_log.lock

    @property
    def config_repository(self):
        return self.replica_manager.config_repository

    def commit(self, records: list[tuple[str, dict]]) -> None:
        if records:
            self.metadata_log.commit(records)

    # -- wiring ------------------------------------------------------------------------

    def register(self) -> None:
        """Register the replay handlers of every record type written here, and
        route the client quotas' and producer ids' writes through the log."""
        handlers = {
            "TopicRecord": self._replay_topic,
            "PartitionRecord": self._replay_partition,
            "RemoveTopicRecord": self._replay_remove_topic,
            "ConfigRecord": self._replay_config,
            "UserScramCredentialRecord": self._replay_scram,
            "RemoveUserScramCredentialRecord": self._replay_remove_scram,
            "ClientQuotaRecord": self._replay_client_quota,
            "ProducerIdsRecord": self._replay_producer_ids,
            "FeatureLevelRecord": self._replay_feature_level,
            "PartitionChangeRecord": self._replay_partition_change,
        }
        for record_type, handler in handlers.items():
            self.metadata_log.register(record_type, handler)
        self.metadata_log.register_snapshot(self.snapshot_records, handlers)
        if self.client_quotas is not None:
            self.client_quotas.change_lock = self.lock
            self.client_quotas.commit = self.commit
        if self.transaction_coordinator is not None:
            self.transaction_coordinator.producer_id_blocks = self.allocate_producer_ids

    def snapshot_records(self) -> list[tuple[str, dict]]:
        """The state this class owns, as records that rebuild it (a snapshot)."""
        records = []
        repository = self.config_repository
        for topic in self.metadata_cache.topics():
            records.append(("TopicRecord", {"name": topic.name, "topicId": str(topic.topic_id)}))
            records += [topic_config_record(topic.name, key, value)
                        for key, value in sorted(repository.topic_overrides(topic.name).items())]
            records += [self._partition_record(topic.topic_id, index)
                        for index in range(topic.num_partitions)]
        for resource in repository.broker_resources():
            records += [broker_config_record(resource, key, value)
                        for key, value in sorted(repository.broker_configs(resource).items())]
        if self.group_configs is not None:
            for group, values in sorted(self.group_configs.all_overrides().items()):
                records += [group_config_record(group, key, value)
                            for key, value in sorted(values.items())]
        if self.client_metrics is not None:
            for name, values in sorted(self.client_metrics.all_configs().items()):
                records += [client_metrics_config_record(name, key, value)
                            for key, value in sorted(values.items())]
        for user, mechanism_type in sorted(self._scram_from_records):
            mechanism = scram.BY_TYPE[mechanism_type]
            credential = self.credential_cache.get(user, mechanism.mechanism_name)
            if credential is not None:
                records.append(scram_credential_record(user, mechanism, credential))
        records += [remove_scram_credential_record(user, scram.BY_TYPE[mechanism_type])
                    for user, mechanism_type in sorted(self._scram_removed)]
        if self.client_quotas is not None:
            records += self.client_quotas.records()
        if self.features is not None:
            records += [("FeatureLevelRecord", {"name": name, "featureLevel": level})
                        for name, level in sorted(self.features.changed_levels().items())]
        if self._next_producer_id > FIRST_PRODUCER_ID:
            records.append(("ProducerIdsRecord", {"brokerId": 0, "brokerEpoch": 0,
                                                  "nextProducerId": self._next_producer_id}))
        return records

    # -- topics (ReplicationControlManager) ----------------------------------------------

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, Any] | None = None,
                     max_total: int | None = None) -> tuple[TopicMetadata, bool]:
        """Create ``name`` with ``num_partitions`` partitions and config overrides
        ``configs`` (parsed, validated) unless it exists: (topic, created).
        Raises TopicCreationError (a name collision, ``max_total``) and writes nothing."""
        with self.lock:
            existing = self.metadata_cache.topic(name)
            if existing is not None:
                return existing, False
            error = self.metadata_cache.creation_error(name, num_partitions, max_total)
            if error is not None:
                raise error
            topic_id = uuid.uuid4()
            # Configs before partitions, as Kafka orders them: a partition's log is
            # created knowing its topic's configs.
            records = [("TopicRecord", {"name": name, "topicId": str(topic_id)})]
            records += [topic_config_record(name, key, value)
                        for key, value in sorted((configs or {}).items())]
            records += [self._partition_record(topic_id, index)
                        for index in range(num_partitions)]
            self.commit(records)
            created = self.metadata_cache.topic(name)
            if created is None or created.num_partitions < num_partitions:
                # A partition's log could not be created (its log dir failed, logged
                # there): never an OK for a partition that cannot take a record.
                raise TopicCreationError(
                    ErrorCode.KAFKA_STORAGE_ERROR,
                    f"The log of a partition of topic '{name}' could not be created: "
                    f"its log dir is offline")
            return created, True

    def create_partitions(self, name: str, count: int,
                          max_total: int | None = None) -> TopicMetadata | None:
        """Grow ``name`` to ``count`` partitions (None: no such topic).  Raises
        TopicCreationError if ``count`` does not grow it or passes ``max_total``."""
        with self.lock:
            topic = self.metadata_cache.topic(name)
            if topic is None:
                return None
            error = self.metadata_cache.growth_error(name, count, max_total)
            if error is not None:
                raise error
            self.commit([self._partition_record(topic.topic_id, index)
                         for index in range(topic.num_partitions, count)])
            return self.metadata_cache.topic(name)

    def delete_topic(self, name: str, topic_id: uuid.UUID | None = None) -> bool:
        """Delete ``name`` (only if its id is ``topic_id``, when given); False if
        there is no such topic (any more)."""
        with self.lock:
            topic = self.metadata_cache.topic(name)
            if topic is None or (topic_id is not None and topic.topic_id != topic_id):
                return False
            self.commit([("RemoveTopicRecord", {"topicId": str(topic.topic_id)})])
            return True

    def _partition_record(self, topic_id: uuid.UUID, index: int) -> tuple[str, dict]:
        node = self.metadata_cache.node_id
        topic = self.metadata_cache.topic_by_id(topic_id)
        epoch = 0 if topic is None else max(self.replica_manager.leader_epoch(topic.name, index), 0)
        return "PartitionRecord", {"partitionId": index, "topicId": str(topic_id),
                                   "replicas": [node], "isr": [node], "leader": node,
                                   "leaderEpoch": epoch, "partitionEpoch": epoch}

    # -- leader elections across a restart ---------------------------------------------

    def elect_leaders_after_restart(self) -> int:
        """A restart moves every partition's leader epoch on by 2, as KRaft's
        controller does for a single node: the broker's shutdown (controlled or
        fenced) leaves each partition leaderless (epoch + 1), and its return
        unfenced elects it again (epoch + 1).  Written as one PartitionChangeRecord
        per partition, in one batch, when the replayed log had partitions; returns
        how many."""
        with self.lock:
            node = self.metadata_cache.node_id
            records = []
            for topic in self.metadata_cache.topics():
                for index in range(topic.num_partitions):
                    epoch = self.replica_manager.leader_epoch(topic.name, index)
                    if epoch >= 0:
                        records.append(("PartitionChangeRecord", {
                            "partitionId": index, "topicId": str(topic.topic_id),
                            "leader": node, "leaderEpoch": epoch + 2}))
            self.commit(records)
            return len(records)

    def _replay_partition_change(self, fields: dict) -> None:
        topic = self.metadata_cache.topic_by_id(uuid.UUID(fields["topicId"]))
        partition = None if topic is None else self.replica_manager.partition(
            topic.name, fields["partitionId"])
        if partition is not None and fields["leaderEpoch"] > partition.leader_epoch:
            partition.make_leader(fields["leaderEpoch"])

    def _replay_topic(self, fields: dict) -> None:
        self.metadata_cache.add_topic(fields["name"], uuid.UUID(fields["topicId"]))

    def _replay_partition(self, fields: dict) -> None:
        topic_id = uuid.UUID(fields["topicId"])
        topic = self.metadata_cache.topic_by_id(topic_id)
        if topic is None:
            raise KeyError(f"PartitionRecord for unknown topic id {topic_id}")
        # The log first: a client that sees the partition can produce to it.
        self.replica_manager.ensure_partition(topic.name, topic_id, fields["partitionId"],
                                              fields.get("leaderEpoch", 0))
        self.metadata_cache.add_partition(topic_id, fields["partitionId"])

    def _replay_remove_topic(self, fields: dict) -> None:
        topic = self.metadata_cache.remove_topic(uuid.UUID(fields["topicId"]))
        if topic is None:
            return
        self.replica_manager.delete_topic(topic.name)
        self.config_repository.delete_topic(topic.name)
        if self.group_coordinator is not None:
            self.group_coordinator.delete_topic_offsets(topic.name)
        log.info("Deleted topic %s with topic id %s", topic.name, topic.topic_id)

    # -- configs (ConfigurationControlManager) --------------------------------------------

    def alter_topic_configs(self, topic: str, overrides: dict[str, Any]) -> None:
        """Make ``overrides`` (parsed, validated) ``topic``'s whole override set:
        a ConfigRecord per key that changes.  Call holding :attr:`lock` across
        the checks (the topic exists, the set is valid)."""
        with self.lock:
            self.commit(_config_changes(
                lambda key, value: topic_config_record(topic, key, value),
                self.config_repository.topic_overrides(topic), overrides))

    def alter_broker_configs(self, resource_name: str, changes: dict[str, str | None]) -> None:
        """Set (None: remove) dynamic configs of broker ``resource_name`` ("": the
        cluster default), values as text; the caller has validated them."""
        with self.lock:
            self.commit([broker_config_record(resource_name, name, value)
                         for name, value in sorted(changes.items())])

    def alter_group_configs(self, group: str, overrides: dict[str, int]) -> None:
        """Make ``overrides`` (validated) ``group``'s whole override set: a ConfigRecord
        per key that changes (Kafka 4.0's GROUP config resource)."""
        with self.lock:
            self.commit(_config_changes(
                lambda key, value: group_config_record(group, key, value),
                self.group_configs.overrides(group), overrides))

    def alter_client_metrics(self, name: str, values: dict[str, str]) -> None:
        """Make ``values`` (validated) subscription ``name``'s whole config set: a
        ConfigRecord per key that changes; no keys left removes the subscription."""
        with self.lock:
            self.commit(_config_changes(
                lambda key, value: client_metrics_config_record(name, key, value),
                self.client_metrics.configs(name), values))

    def _replay_config(self, fields: dict) -> None:
        kind, resource, name, value = (fields["resourceType"], fields["resourceName"],
                                       fields["name"], fields["value"])
        if kind == ConfigResourceType.TOPIC:
            self.config_repository.set_topic_key(
                resource, name, None if value is None else parse_value(name, value))
        elif kind == ConfigResourceType.BROKER:
            self.config_repository.set_broker_config(resource, name, value)
        elif kind == ConfigResourceType.GROUP and self.group_configs is not None:
            self.group_configs.set_group_key(
                resource, name, None if value is None else parse_group_value(name, value))
        elif kind == ConfigResourceType.CLIENT_METRICS and self.client_metrics is not None:
            self.client_metrics.set_key(resource, name, value)
        else:
            log.warning("Skipping a ConfigRecord for resource type %s", kind)

    # -- feature levels (FeatureControlManager) -------------------------------------------

    def update_features(self, levels: dict[str, int]) -> None:
        """Finalize validated feature levels: a FeatureLevelRecord each."""
        with self.lock:
            self.commit([("FeatureLevelRecord", {"name": name, "featureLevel": level})
                         for name, level in sorted(levels.items())])

    def _replay_feature_level(self, fields: dict) -> None:
        if self.features is not None:
            self.features.set_levels({fields["name"]: fields["featureLevel"]})

    # -- SCRAM credentials (ScramControlManager) ------------------------------------------

    def _replay_scram(self, fields: dict) -> None:
        mechanism = scram.BY_TYPE[fields["mechanism"]]
        self._scram_from_records.add((fields["name"], mechanism.type))
        self._scram_removed.discard((fields["name"], mechanism.type))
        self.credential_cache.put(fields["name"], mechanism.mechanism_name, ScramCredential(
            fields["salt"], fields["storedKey"], fields["serverKey"], fields["iterations"]))

    def _replay_remove_scram(self, fields: dict) -> None:
        self._scram_from_records.discard((fields["name"], fields["mechanism"]))
        self._scram_removed.add((fields["name"], fields["mechanism"]))
        self.credential_cache.remove(fields["name"],
                                     scram.BY_TYPE[fields["mechanism"]].mechanism_name)

    # -- client quotas (ClientQuotaControlManager) -----------------------------------------

    def _replay_client_quota(self, fields: dict) -> None:
        self.client_quotas.apply_record(fields)

    # -- producer ids (ProducerIdControlManager) ------------------------------------------

    def allocate_producer_ids(self, broker_id: int = 0) -> int:
        """A fresh block of PRODUCER_ID_BLOCK_SIZE ids; returns its first id."""
        with self.lock:
            start = self._next_producer_id
            self.commit([("ProducerIdsRecord", {
                "brokerId": broker_id, "brokerEpoch": 0,
                "nextProducerId": start + PRODUCER_ID_BLOCK_SIZE})])
            return start

    def _replay_producer_ids(self, fields: dict) -> None:
        self._next_producer_id = max(self._next_producer_id, fields["nextProducerId"])


def _config_changes(record, current: dict, wanted: dict) -> list:
    """The ConfigRecords that make a resource's ``current`` configs ``wanted``: one
    per key with a new value, a null one per key gone (``record(key, value)``)."""
    return ([record(key, value) for key, value in sorted(wanted.items())
             if current.get(key) != value]
            + [record(key, None) for key in sorted(current) if key not in wanted])
