"""BrokerCore: the one place a broker's API layer is assembled.

Everything a request meets after the RequestChannel, built from one
:class:`ServerConfig`::

    RequestChannel --> KafkaApis --> handlers
                          |-- MetadataCache       (topics, advertised listeners)
                          |-- ReplicaManager      (logs, the fetch purgatory)
                          |-- GroupCoordinator    (groups, its purgatories)
                          |-- TransactionCoordinator (transactions, the timeout check)
                          |-- LogManager          (the periodic retention task)
                          '-- QuotaManagers       (client quotas, the throttle reaper)

:class:`~kafka_net.server.kafka_server.KafkaServer` adds the sockets (a
:class:`SocketServer`, from :meth:`BrokerCore.new_socket_server`) and the
handler threads on top; the API-layer tests (tests/server/conftest.py) and the
benchmarks use a BrokerCore alone, with no socket and no thread, and build
their requests with :meth:`BrokerCore.request_from_frame`, as a Processor
would.

Start and stop order: :meth:`startup` starts the throttle reaper, the
purgatories, then the LogManager's retention task; :meth:`shutdown` stops them
in the reverse order (the reaper last: a handler still running may start a
throttle).  Without ``startup`` nothing
runs in the background: parked requests wait forever and throttled channels
are never muted (``QuotaManagers.can_mute``).
"""

from __future__ import annotations

from kafka_net.config import ServerConfig
from kafka_net.network.channel_builder import AuthenticationHooks
from kafka_net.network.request_channel import Request, RequestChannel
from kafka_net.network.socket_server import SocketServer
from kafka_net.server.apis import KafkaApis
from kafka_net.server.group import ConsumerGroupConfig, GroupConfig, GroupCoordinator
from kafka_net.server.log_manager import LogManager
from kafka_net.server.metadata_cache import MetadataCache
from kafka_net.server.quotas.quota_managers import QuotaManagers
from kafka_net.server.group.metadata_manager import GroupMetadataManager
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME, InternalTopics)
from kafka_net.server.replica_manager import LogFactory, ReplicaManager, in_memory_log
from kafka_net.server.transaction.state_log import TransactionLog
from kafka_net.server.transaction import TransactionConfig, TransactionCoordinator
from kafka_net.security.credential_cache import CredentialCache


def group_config(config: ServerConfig) -> GroupConfig:
    """The group.* keys of ``config``, as the GroupCoordinator takes them."""
    return GroupConfig(config.group_min_session_timeout_ms, config.group_max_session_timeout_ms,
                       config.group_initial_rebalance_delay_ms,
                       config.offset_metadata_max_bytes, config.group_max_size)


def consumer_group_config(config: ServerConfig) -> ConsumerGroupConfig:
    """The group.consumer.* keys: consumer-protocol (KIP-848) groups."""
    return ConsumerGroupConfig(config.group_consumer_heartbeat_interval_ms,
                               config.group_consumer_session_timeout_ms,
                               config.group_consumer_assignors, config.group_consumer_max_size)


def transaction_config(config: ServerConfig) -> TransactionConfig:
    """The transaction.* keys of ``config``, as the TransactionCoordinator takes them."""
    return TransactionConfig(
        config.transaction_max_timeout_ms, config.transactional_id_expiration_ms,
        config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
        config.transaction_remove_expired_transaction_cleanup_interval_ms)


class BrokerCore:
    """A broker's API layer (Kafka's ``BrokerServer`` minus the sockets and threads).

    ``request_channel`` is where deferred and throttled responses go: a
    RequestChannel of ``queued.max.requests`` unless given (tests pass a fake
    that records them).  ``groups`` overrides the group.* keys; ``log_factory``
    gives each partition its log (in memory by default).
    """

    def __init__(self, config: ServerConfig, request_channel=None,
                 groups: GroupConfig | None = None,
                 log_factory: LogFactory = in_memory_log) -> None:
        self.config = config
        self.request_channel = (RequestChannel(config.queued_max_requests)
                                if request_channel is None else request_channel)
        self.metadata_cache = MetadataCache(config.node_id, config.cluster_id)
        self.replica_manager = ReplicaManager(config.message_max_bytes,
                                              config.message_max_uncompressed_bytes,
                                              log_factory=log_factory)
        # __consumer_offsets and __transaction_state, created through KafkaApis
        # (as any topic) once the coordinators need them.
        self.internal_topics = InternalTopics(
            config, self.metadata_cache, self.replica_manager.config_repository,
            lambda name, partitions: self.apis.create_topic(name, partitions))
        group_store = GroupMetadataManager(self.replica_manager, self.internal_topics)
        self.group_coordinator = GroupCoordinator(
            groups or group_config(config), self._partition_count, self.metadata_cache,
            consumer_group_config(config), group_store)
        self.transaction_coordinator = TransactionCoordinator(
            transaction_config(config), self.replica_manager, self.group_coordinator.offsets,
            TransactionLog(self.replica_manager, self.internal_topics,
                           group_store.partition_for))
        self.internal_topics.register_loader(GROUP_METADATA_TOPIC_NAME,
                                             self.group_coordinator.load_groups)
        self.internal_topics.register_loader(TRANSACTION_STATE_TOPIC_NAME,
                                             self.transaction_coordinator.load_transactions)
        self.quotas = QuotaManagers(config, self.request_channel)
        self.log_manager = LogManager(self.replica_manager,
                                      config.log_retention_check_interval_ms,
                                      config.log_initial_task_delay_ms)
        # SCRAM credentials, shared by the SASL authenticators (network threads)
        # and Describe/AlterUserScramCredentials (handler threads).
        self.credential_cache = CredentialCache()
        for spec in config.scram_credentials:
            self.credential_cache.add_scram(spec)
        self.apis = KafkaApis(config, self.metadata_cache, self.request_channel,
                              replica_manager=self.replica_manager,
                              group_coordinator=self.group_coordinator, quotas=self.quotas,
                              transaction_coordinator=self.transaction_coordinator,
                              credential_cache=self.credential_cache,
                              internal_topics=self.internal_topics)

    def _partition_count(self, topic: str) -> int | None:
        metadata = self.metadata_cache.topic(topic)
        return None if metadata is None else metadata.num_partitions

    def new_socket_server(self, clock_ms=None) -> SocketServer:
        """The SocketServer feeding this core's RequestChannel.  ``ip`` entity
        quotas (connection_creation_rate, set through AlterClientQuotas) are
        enforced by its Acceptors' ConnectionQuotas, so they are wired here."""
        hooks = AuthenticationHooks(self.credential_cache, self.apis.api_versions_body,
                                    self.apis.supported_versions, self.apis.error_body)
        socket_server = SocketServer(self.config, self.request_channel,
                                     self.apis.parse_request, clock_ms=clock_ms,
                                     auth_hooks=hooks)
        self.quotas.client_quotas.ip_quotas = socket_server.connection_quotas
        return socket_server

    def request_from_frame(self, frame: bytes, connection_id: str = "c",
                           client_address: tuple = ("127.0.0.1", 1)) -> Request:
        """Parse a frame payload (no size prefix) as a Processor does, into the
        Request it would hand over (processor 0, listener PLAINTEXT)."""
        return Request.from_parsed(0, connection_id, "PLAINTEXT", client_address,
                                   self.apis.parse_request(frame))

    # -- start and stop ------------------------------------------------------------------

    def startup(self) -> None:
        # Internal topics that came back from the metadata log: their coordinators
        # load them before any request is served (Kafka: on becoming their leader).
        self.internal_topics.load_existing()
        self.quotas.startup()
        self.start_purgatories()
        self.log_manager.startup()

    def shutdown(self) -> None:
        self.log_manager.shutdown()
        self.stop_purgatories()
        self.quotas.shutdown()   # after the handlers: no new throttle can start

    def start_purgatories(self) -> None:
        self.replica_manager.fetch_purgatory.start()
        self.group_coordinator.start()
        self.transaction_coordinator.startup()

    def stop_purgatories(self) -> None:
        self.transaction_coordinator.shutdown()
        self.replica_manager.fetch_purgatory.shutdown()
        self.group_coordinator.shutdown()

    def complete_parked(self) -> None:
        """Answer every parked request now (a graceful stop's drain)."""
        self.replica_manager.fetch_purgatory.complete_all()
        self.group_coordinator.complete_parked()
