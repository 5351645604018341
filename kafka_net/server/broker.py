"""BrokerCore: the one place a broker's API layer is assembled.

Everything a request meets after the RequestChannel, built from one
:class:`ServerConfig`::

    RequestChannel --> KafkaApis --> handlers
                          |-- MetadataCache       (topics, advertised listeners)
                          |-- ReplicaManager      (logs, the fetch purgatory)
                          |-- GroupCoordinator    (groups, its purgatories)
                          |-- ShareGroupCoordinator (share groups, their state;
                          |                          built on first use)
                          |-- TransactionCoordinator (transactions, the timeout check)
                          |-- LogManager          (log.dirs, the logs, their tasks)
                          |-- LogCleaner          (compaction threads)
                          |-- QuotaManagers       (client quotas, the throttle reaper)
                          '-- Controller          (metadata changes, as records in
                                                   the MetadataLog: core.metadata_log)

:class:`~kafka_net.server.kafka_server.KafkaServer` adds the sockets (a
:class:`SocketServer`, from :meth:`BrokerCore.new_socket_server`) and the
handler threads on top; the API-layer tests (tests/server/conftest.py) and the
benchmarks use a BrokerCore alone, with no socket and no thread, and build
their requests with :meth:`BrokerCore.request_from_frame`, as a Processor
would.

The metadata log (KRaft's ``__cluster_metadata``, see
:mod:`~kafka_net.server.metadata_log`) holds every metadata change: topics,
partitions, configs, SCRAM credentials, client quotas, producer id blocks.
``__init__`` builds it and the parts it feeds, then, in this order:

1. the static SCRAM credentials of the config file go into the cache (they
   are not records; a record for the same user, written later, wins);
2. every owner of a record type registers its replay handler: the
   Controller (topics, partitions, configs, SCRAM, client quotas, producer
   ids), then the owners listed in the marked block of ``__init__``;
3. the log is replayed: each record, in log order, to its handler -- the
   state the broker acknowledged before it stopped.

Nothing reads the state before step 3 ends, and nothing registers after it.

Start and stop order: :meth:`startup` starts the LogManager (loading the
logs of ``log.dirs`` with ``log.store=disk``, and its retention, flush and
checkpoint tasks), then the LogCleaner's threads, then the coordinators load
the internal topics that came back (``__consumer_offsets``,
``__transaction_state``), then the throttle reaper and the purgatories;
:meth:`shutdown` stops the LogCleaner, the purgatories, then the reaper (a
handler still running may start a throttle), then the LogManager, which
closes the logs cleanly once nothing can read or write them, then the
metadata log.  Without ``startup`` nothing
runs in the background: parked requests wait forever and throttled channels
are never muted (``QuotaManagers.can_mute``).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import Callable

from kafka_net.config import ServerConfig
from kafka_net.network.channel_builder import AuthenticationHooks
from kafka_net.network.request_channel import Request, RequestChannel
from kafka_net.network.socket_server import SocketServer
from kafka_net.server.apis import KafkaApis
from kafka_net.server.controller import Controller
from kafka_net.server.features import TRANSACTION_VERSION
from kafka_net.server.group.consumer_coordinator import ConsumerGroupConfig
from kafka_net.server.group.coordinator import GroupCoordinator
from kafka_net.server.group.group import GroupConfig, StreamsGroupConfig
from kafka_net.server.authorizer import new_authorizer
from kafka_net.server.config_repository import ConfigRepository
from kafka_net.server.log_manager import LogDirsConfig, LogManager
from kafka_net.server.storage.checkpoint import new_cluster_id
from kafka_net.server.log_cleaner import LogCleaner
from kafka_net.server.metadata_cache import MetadataCache
from kafka_net.server.metadata_log import METADATA_TOPIC, MetadataLog, refuse_damaged_log
from kafka_net.server.quotas.quota_managers import QuotaManagers
from kafka_net.server.group.metadata_manager import GroupMetadataManager
from kafka_net.server.group.zookeeper_offsets import (
    FILE_NAME as ZOOKEEPER_OFFSETS_FILE, ZooKeeperOffsets)
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME,
    InternalTopics)
from kafka_net.server.replica_manager import LogFactory, ReplicaManager
from kafka_net.server.storage import InMemoryLog, PartitionLog
from kafka_net.server.storage.unified_log import UnifiedLog
from kafka_net.server.transaction.state_log import TransactionLog
from kafka_net.server.transaction import TransactionConfig, TransactionCoordinator
from kafka_net.security.credential_cache import CredentialCache

log = logging.getLogger(__name__)


def group_config(config: ServerConfig) -> GroupConfig:
    """The group.* keys of ``config``, as the GroupCoordinator takes them."""
    return GroupConfig(config.group_min_session_timeout_ms, config.group_max_session_timeout_ms,
                       config.group_initial_rebalance_delay_ms,
                       config.offset_metadata_max_bytes, config.group_max_size,
                       config.offsets_retention_minutes * 60_000,
                       config.offsets_retention_check_interval_ms)


def consumer_group_config(config: ServerConfig) -> ConsumerGroupConfig:
    """The group.consumer.* keys: consumer-protocol (KIP-848) groups."""
    return ConsumerGroupConfig(config.group_consumer_heartbeat_interval_ms,
                               config.group_consumer_session_timeout_ms,
                               config.group_consumer_assignors, config.group_consumer_max_size,
                               config.group_consumer_regex_refresh_interval_ms,
                               config.group_consumer_migration_policy, config.group_max_size)


def share_config(config: ServerConfig) -> "ShareConfig":
    """The group.share.* keys: share groups (KIP-932)."""
    from kafka_net.server.share.share_partition_manager import ShareConfig
    return ShareConfig(config.group_share_record_lock_duration_ms,
                       config.group_share_delivery_count_limit,
                       config.group_share_partition_max_record_locks,
                       config.group_share_session_timeout_ms,
                       config.group_share_heartbeat_interval_ms,
                       config.group_share_max_size, config.group_share_max_share_sessions)


def streams_group_config(config: ServerConfig) -> StreamsGroupConfig:
    """The group.streams.* keys: streams groups (KIP-1071)."""
    return StreamsGroupConfig(config.group_streams_heartbeat_interval_ms,
                              config.group_streams_session_timeout_ms,
                              config.group_streams_num_standby_replicas,
                              config.group_streams_max_size,
                              config.group_streams_initial_rebalance_delay_ms)


def log_dirs_config(config: ServerConfig) -> LogDirsConfig:
    """Where the logs live: ``log.dirs`` (else ``log.dir``) with ``log.store=disk``;
    no folder (in memory) with ``log.store=memory``."""
    dirs = () if config.log_store == "memory" else (config.log_dirs or (config.log_dir,))
    return LogDirsConfig(dirs, config.node_id, config.cluster_id,
                         config.log_flush_scheduler_interval_ms,
                         config.log_flush_offset_checkpoint_interval_ms,
                         config.log_flush_start_offset_checkpoint_interval_ms)


def retention_ms(config: ServerConfig) -> int:
    """Kafka's ``logRetentionTimeMillis``: log.retention.ms, else .minutes, else
    .hours; any negative value is -1 (no time limit)."""
    if config.log_retention_ms is not None:
        millis = config.log_retention_ms
    elif config.log_retention_minutes is not None:
        millis = config.log_retention_minutes * 60_000
    else:
        millis = config.log_retention_hours * 3_600_000
    return -1 if millis < 0 else millis


def apply_log_defaults(repository: ConfigRepository, config: ServerConfig) -> None:
    """The broker's log keys become the defaults of their topic configs
    (Kafka's ``ServerTopicConfigSynonyms``)."""
    roll_ms = config.log_roll_ms if config.log_roll_ms is not None \
        else config.log_roll_hours * 3_600_000
    flush_ms = config.log_flush_interval_ms if config.log_flush_interval_ms is not None \
        else config.log_flush_scheduler_interval_ms
    for name, value in (("segment.bytes", config.log_segment_bytes), ("segment.ms", roll_ms),
                        ("retention.ms", retention_ms(config)),
                        ("retention.bytes", config.log_retention_bytes),
                        ("index.interval.bytes", config.log_index_interval_bytes),
                        ("segment.index.bytes", config.log_index_size_max_bytes),
                        ("flush.messages", config.log_flush_interval_messages),
                        ("flush.ms", flush_ms),
                        ("file.delete.delay.ms", config.log_segment_delete_delay_ms)):
        repository.set_broker_default(name, value)


def transaction_config(config: ServerConfig) -> TransactionConfig:
    """The transaction.* keys of ``config``, as the TransactionCoordinator takes them."""
    return TransactionConfig(
        config.transaction_max_timeout_ms, config.transactional_id_expiration_ms,
        config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
        config.transaction_remove_expired_transaction_cleanup_interval_ms)


# ServerConfig -> the PartitionLog the metadata log is kept in.
MetadataLogFactory = Callable[[ServerConfig], PartitionLog]


def in_memory_metadata_log(config: ServerConfig) -> PartitionLog:
    """The fixture's and --dev's metadata log: gone with the process."""
    return InMemoryLog()


def metadata_log_dir(config: ServerConfig) -> str:
    """``metadata.log.dir``, else the first of ``log.dirs`` (else ``log.dir``): Kafka's rule."""
    return config.metadata_log_dir or (config.log_dirs or (config.log_dir,))[0]


def durable_metadata_log(config: ServerConfig) -> PartitionLog:
    """``__cluster_metadata-0`` under :func:`metadata_log_dir`, a UnifiedLog of its
    own (the LogManager leaves the folder alone, as Kafka's does).  It is always
    recovered on open -- every batch's CRC checked, a torn tail cut -- whatever
    the clean-shutdown marker says: it is small (snapshots bound it), and a
    half-written record must never be replayed."""
    path = os.path.join(metadata_log_dir(config), f"{METADATA_TOPIC}-0")
    refuse = None if config.metadata_log_truncate_on_corruption else refuse_damaged_log
    return UnifiedLog(path, had_clean_shutdown=False, refuse_truncation=refuse)


def default_metadata_log(config: ServerConfig) -> PartitionLog:
    """Where ``log.store`` keeps the partitions, the metadata log is kept too."""
    if config.log_store == "memory":
        return in_memory_metadata_log(config)
    return durable_metadata_log(config)


def zookeeper_offsets(config: ServerConfig) -> ZooKeeperOffsets:
    """OffsetCommit v0's store: on disk next to the metadata log where ``log.store``
    keeps the partitions there, else in memory."""
    if config.log_store == "memory":
        return ZooKeeperOffsets()
    return ZooKeeperOffsets(os.path.join(metadata_log_dir(config), ZOOKEEPER_OFFSETS_FILE))


def cleaner_topic_defaults(config: ServerConfig) -> dict:
    """The log.cleaner.* keys that set topic configs' defaults (Kafka's
    ServerTopicConfigSynonyms), by topic config name."""
    return {"delete.retention.ms": config.log_cleaner_delete_retention_ms,
            "min.compaction.lag.ms": config.log_cleaner_min_compaction_lag_ms,
            "max.compaction.lag.ms": config.log_cleaner_max_compaction_lag_ms,
            "min.cleanable.dirty.ratio": config.log_cleaner_min_cleanable_ratio}


class BrokerCore:
    """A broker's API layer (Kafka's ``BrokerServer`` minus the sockets and threads).

    ``request_channel`` is where deferred and throttled responses go: a
    RequestChannel of ``queued.max.requests`` unless given (tests pass a fake
    that records them).  ``groups`` overrides the group.* keys.
    ``metadata_log_factory`` gives the store of the metadata log (unless
    given: :func:`default_metadata_log`; a test may pass the same in-memory
    store to two cores to restart); ``log_factory``, the partitions' logs
    (unless given: the LogManager's, in memory with ``log.store=memory``; a
    test may pass one that hands two cores the same logs).
    """

    def __init__(self, config: ServerConfig, request_channel=None,
                 groups: GroupConfig | None = None,
                 metadata_log_factory: MetadataLogFactory | None = None,
                 log_factory: LogFactory | None = None) -> None:
        self.config = config
        self.request_channel = (RequestChannel(config.queued_max_requests)
                                if request_channel is None else request_channel)
        # cluster.id, else (durable) the log dirs' own (the LogManager's, below),
        # else (in memory) a new random one per start, as a freshly formatted Kafka.
        self.metadata_cache = MetadataCache(config.node_id,
                                            config.cluster_id or new_cluster_id())
        self.replica_manager = ReplicaManager(config.message_max_bytes,
                                              config.message_max_uncompressed_bytes)
        repository = self.replica_manager.config_repository
        apply_log_defaults(repository, config)
        # The logs (LogManager): log.store=disk opens them under log.dirs, as
        # the ReplicaManager asks for them (Kafka's LogManager.getOrCreateLog).
        self.log_manager = LogManager(self.replica_manager,
                                      config.log_retention_check_interval_ms,
                                      config.log_initial_task_delay_ms,
                                      log_dirs_config(config),
                                      lambda topic: repository.log_config(topic).segment)
        if self.log_manager.durable:
            self.replica_manager.log_factory = self.log_manager.get_or_create_log
            self.metadata_cache.cluster_id = self.log_manager.cluster_id
            self.log_manager.defer_epoch_writes = True   # until the replay's end
        for name, value in cleaner_topic_defaults(config).items():
            repository.set_broker_default(name, value)
        self.log_cleaner = LogCleaner(
            self.replica_manager, enable=config.log_cleaner_enable,
            threads=config.log_cleaner_threads, backoff_ms=config.log_cleaner_backoff_ms,
            dedupe_buffer_size=config.log_cleaner_dedupe_buffer_size)
        self.log_manager.on_log_moved = self.log_cleaner.manager.alter_checkpoint_dir
        if metadata_log_factory is None and self.log_manager.durable:
            # The folders locked before the metadata log in one of them is opened:
            # a second broker on the same folders stops here.
            try:
                self.log_manager.load_logs()
                self.log_manager.lock_metadata_dir(metadata_log_dir(config))
            except Exception:
                self.log_manager.release_locks()
                raise
        self.metadata_log = MetadataLog((metadata_log_factory or default_metadata_log)(config),
                                        config.metadata_log_max_record_bytes_between_snapshots,
                                        config.metadata_log_max_snapshot_interval_ms)
        if metadata_log_factory is None and self.log_manager.durable:
            self.metadata_log.on_storage_failure = functools.partial(
                self.log_manager.metadata_dir_failure,
                os.path.abspath(metadata_log_dir(config)))
        if log_factory is not None:
            self.replica_manager.log_factory = log_factory
        # __consumer_offsets and __transaction_state, created through KafkaApis
        # (as any topic: their records go to the metadata log) once the
        # coordinators need them.
        self.internal_topics = InternalTopics(
            config, self.metadata_cache, repository,
            lambda name, partitions, configs: self.apis.create_topic(name, partitions, configs))
        group_store = GroupMetadataManager(self.replica_manager, self.internal_topics)
        self.group_coordinator = GroupCoordinator(
            groups or group_config(config), self._partition_count, self.metadata_cache,
            consumer_group_config(config), group_store, streams_group_config(config),
            zookeeper_offsets(config))
        transaction_version = lambda: self.apis.features.level(TRANSACTION_VERSION)  # noqa: E731
        self.transaction_coordinator = TransactionCoordinator(
            transaction_config(config), self.replica_manager, self.group_coordinator.offsets,
            TransactionLog(self.replica_manager, self.internal_topics,
                           group_store.partition_for, transaction_version),
            transaction_version)
        self.internal_topics.register_loader(GROUP_METADATA_TOPIC_NAME,
                                             self.group_coordinator.load_groups)
        self.internal_topics.register_loader(TRANSACTION_STATE_TOPIC_NAME,
                                             self.transaction_coordinator.load_transactions)
        # Share groups (KIP-932), their state in __share_group_state: built on
        # first use (see share_coordinator); a __share_group_state that came back
        # builds them at startup, when its loader runs.
        self._share = None
        self._share_lock = threading.Lock()   # guards _share and _share_running
        self._share_running = False           # start_purgatories ran, stop did not
        self.internal_topics.register_loader(
            SHARE_GROUP_STATE_TOPIC_NAME,
            lambda partition_count: self.share_coordinator.load(partition_count))
        self.quotas = QuotaManagers(config, self.request_channel)
        # SCRAM credentials, shared by the SASL authenticators (network threads)
        # and Describe/AlterUserScramCredentials (handler threads).
        self.credential_cache = CredentialCache()
        for spec in config.scram_credentials:
            self.credential_cache.add_scram(spec)
        self.controller = Controller(
            self.metadata_log, self.metadata_cache, self.replica_manager,
            self.credential_cache, self.quotas.client_quotas, self.group_coordinator,
            self.transaction_coordinator)
        # authorizer.class.name: None, or a StandardAuthorizer whose ACLs are
        # AccessControlEntryRecords in the metadata log (it registers their replay
        # handlers and its snapshot source on the log as it is built).
        self.authorizer = new_authorizer(config, self.metadata_log)
        # KafkaApis reads the parts above from this core (server/services.py).
        self.apis = KafkaApis(config, self.metadata_cache, self.request_channel, services=self)
        # -- metadata record owners register here, before the replay ----------------
        # (self.metadata_log.register(record type, handler); see the module docstring)
        self.controller.register()
        # (the authorizer registered its ACL records when it was built, above)
        # -- end of registration -------------------------------------------------------
        self.apis.dynamic_config.add_reconfigurable(self.log_cleaner.reconfigure)
        self.group_coordinator.use_group_configs(self.apis.group_configs)
        replayed = self.metadata_log.replay()
        if replayed:
            log.info("Replayed %d metadata record(s): %d topic(s)", replayed,
                     len(self.metadata_cache.topics()))
            # Each partition is led again, at a new leader epoch (clients validate
            # their positions against it, KIP-320).
            self.controller.elect_leaders_after_restart()
        self.log_manager.end_replay()

    @property
    def share_coordinator(self):
        """The ShareGroupCoordinator (KIP-932), built the first time anything asks
        for it: a share API's request (``RequestContext.share_coordinator``), or
        the loader of a ``__share_group_state`` that exists at startup.

        Why on first use: most brokers never serve a share group, and the share
        modules and their dataclasses were a few milliseconds of every start
        (issue 28).  Nothing changes for a client: until it is built there is no
        share group to find (none was made, none was persisted), so
        ``GroupCoordinator.share`` stays None, which ListGroups, DeleteGroups and
        the group id checks read as "no share groups" -- as they always have for a
        GroupCoordinator without one.  Built under a lock, so two first requests
        on two handler threads build one; started if the purgatories run."""
        share = self._share
        if share is None:
            with self._share_lock:
                if self._share is None:
                    self._share = self._new_share_coordinator()
                share = self._share
        return share

    def _new_share_coordinator(self):
        from kafka_net.server.share.coordinator import ShareGroupCoordinator
        from kafka_net.server.share.persister import ShareStatePersister
        config = self.config
        share = ShareGroupCoordinator(
            share_config(config), self.replica_manager, self.metadata_cache,
            ShareStatePersister(self.replica_manager, self.internal_topics,
                                config.share_coordinator_snapshot_update_records_per_snapshot),
            classic_groups=self.group_coordinator.registry,
            group_configs=self.apis.group_configs)
        # Dead-letter queues (KIP-1191) follow the finalized share.version, and may
        # create their topic through the broker's own CreateTopics path.
        share.partitions.share_version = lambda: self.apis.features.level("share.version")
        share.partitions.attach_broker(self.apis)
        if self._share_running:
            share.start()
        self.group_coordinator.share = share   # last: now other kinds' checks see it
        log.debug("Share group coordinator built (first use)")
        return share

    def _partition_count(self, topic: str) -> int | None:
        metadata = self.metadata_cache.topic(topic)
        return None if metadata is None else metadata.num_partitions

    def new_socket_server(self, clock_ms=None) -> SocketServer:
        """The SocketServer feeding this core's RequestChannel.  ``ip`` entity
        quotas (connection_creation_rate, set through AlterClientQuotas) are
        enforced by its Acceptors' ConnectionQuotas, so they are wired here."""
        hooks = AuthenticationHooks(self.credential_cache, self.apis.api_versions_body,
                                    self.apis.supported_versions, self.apis.error_body)
        # Kafka's BrokerServer registers these two: what a connection created (a
        # client-telemetry instance, share sessions) goes when it closes.
        listeners = (self.apis.client_metrics.connection_disconnect_listener(),
                     _ShareSessionsDisconnect(self))
        socket_server = SocketServer(self.config, self.request_channel,
                                     self.apis.parse_request, clock_ms=clock_ms,
                                     auth_hooks=hooks,
                                     connection_disconnect_listeners=listeners)
        self.quotas.client_quotas.set_ip_quotas(socket_server.connection_quotas)
        # max.connections & co. changed by AlterConfigs act on the Acceptors' quotas.
        self.apis.dynamic_config.add_reconfigurable(socket_server.connection_quotas.reconfigure)
        return socket_server

    def request_from_frame(self, frame: bytes, connection_id: str = "c",
                           client_address: tuple = ("127.0.0.1", 1)) -> Request:
        """Parse a frame payload (no size prefix) as a Processor does, into the
        Request it would hand over (processor 0, listener PLAINTEXT)."""
        return Request.from_parsed(0, connection_id, "PLAINTEXT", client_address,
                                   self.apis.parse_request(frame))

    # -- start and stop ------------------------------------------------------------------

    def startup(self) -> None:
        # The logs first, as Kafka loads them before anything serves: a log dir
        # that cannot be used stops the startup before any thread runs.
        self.log_manager.startup()
        self.log_cleaner.startup()
        # Internal topics that came back from the metadata log: their coordinators
        # load them before any request is served (Kafka: on becoming their leader).
        self.internal_topics.load_existing()
        self.quotas.startup()
        self.apis.delegation_tokens.startup()
        self.start_purgatories()
        self._warn_of_stray_logs()
        highest = self.log_manager.highest_producer_id()
        if highest >= 0:
            self.transaction_coordinator.skip_producer_ids_through(highest)
        # Last: the replay's leader-epoch checkpoints were written while the
        # rest started; they are on disk before anything is served.
        self.log_manager.await_epoch_writes()

    def _warn_of_stray_logs(self) -> None:
        """Partition folders of no topic in the metadata log (left by a build that
        kept no metadata, or copied in): kept on disk untouched, never served."""
        stray = sorted(f"{topic}-{index}" for topic, index in self.log_manager.logs()
                       if self.replica_manager.partition(topic, index) is None)
        if stray:
            log.warning("Found %d stray log dir(s) of no topic in the metadata log, left as "
                        "they are: %s", len(stray), ", ".join(stray[:20]))

    def shutdown(self) -> None:
        self.log_cleaner.shutdown()   # first: a cleaning writes the logs
        self.stop_purgatories()
        self.quotas.shutdown()   # after the handlers: no new throttle can start
        self.apis.delegation_tokens.shutdown()   # its expiry check writes the metadata log
        # Last: nothing reads or writes a log any more (Kafka's clean shutdown:
        # flush, checkpoints, producer snapshots, then the marker).
        self.log_manager.shutdown()
        self.metadata_log.close()

    def start_purgatories(self) -> None:
        self.replica_manager.fetch_purgatory.start()
        self.group_coordinator.start()
        with self._share_lock:
            self._share_running = True
            if self._share is not None:
                self._share.start()
        self.transaction_coordinator.startup()

    def stop_purgatories(self) -> None:
        self.transaction_coordinator.shutdown()
        with self._share_lock:
            self._share_running = False
            if self._share is not None:
                self._share.shutdown()
        self.replica_manager.fetch_purgatory.shutdown()
        self.group_coordinator.shutdown()

    def complete_parked(self) -> None:
        """Answer every parked request now (a graceful stop's drain)."""
        self.replica_manager.fetch_purgatory.complete_all()
        self.group_coordinator.complete_parked()


class _ShareSessionsDisconnect:
    """The share session cache's ConnectionDisconnectListener, for a share
    coordinator built on first use: a connection that closes before it is built
    had no share session."""

    def __init__(self, core: BrokerCore) -> None:
        self._core = core

    def on_disconnect(self, connection_id: str) -> None:
        share = self._core._share
        if share is not None:
            share.sessions.connection_disconnect_listener().on_disconnect(connection_id)
