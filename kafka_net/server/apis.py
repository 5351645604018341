"""KafkaApis: the dispatch table, and turning a handler's answer into a Response.

``HANDLERS`` below is the single list of what this broker serves.  Three
things are derived from it, so they cannot disagree:

* which requests the Processor accepts (:meth:`KafkaApis.parse_request`, given
  to the Processors; a key or version outside the table closes the connection);
* which handler runs (:meth:`KafkaApis.build_response`);
* what ApiVersions advertises (:meth:`KafkaApis.supported_versions`).

With ``as.version`` set, :func:`served_versions` cuts that table to what the
Kafka release served (:mod:`kafka_net.protocol.kafka_releases`), so all three
follow it.

Error policy for a request that parsed (the bad-input cases are in
:mod:`kafka_net.protocol.codec`): a handler that raises is logged with its
request, and the client gets the API's error response with
UNKNOWN_SERVER_ERROR, or the connection is closed where Kafka would close it
(``sendErrorOrCloseConnection``).  The handler thread goes on either way.
"""

from __future__ import annotations

import importlib
import logging
import struct
import threading
import time
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING

from kafka_net.config import ServerConfig
from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.metrics import RequestMetrics
from kafka_net.network.request_channel import (
    CloseConnectionResponse, NoOpResponse, Request, RequestChannel, Response, SendResponse)
from kafka_net.protocol import readable
from kafka_net.protocol.api_keys import ApiKey, api_name
from kafka_net.protocol.chunked import ChunkedFrame
from kafka_net.protocol.codec import ParsedRequest, encode_response, parse_request
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.kafka_releases import APIS as KAFKA_RELEASE_APIS
from kafka_net.protocol.kafka_releases import RELEASES as KAFKA_RELEASES
from kafka_net.protocol.schema import Versions
from kafka_net.security.credential_cache import CredentialCache
from kafka_net.server.controller import Controller
from kafka_net.server.delegation_token_manager import DelegationTokenManager
from kafka_net.server.handlers import CLOSE_CONNECTION, DEFERRED, NO_RESPONSE

if TYPE_CHECKING:
    from kafka_net.server.faults.registry import FaultRegistry
from kafka_net.config.dynamic_rules import LOG_KEYS
from kafka_net.server.authorizer import (
    CLUSTER_NAME, AclOperation, Action, AuthorizationResult, ResourceType, StandardAuthorizer)
from kafka_net.server.authorizer.acl import host_address
from kafka_net.server.client_metrics import ClientMetricsManager
from kafka_net.server.dynamic_config import DynamicBrokerConfig
from kafka_net.server.features import FeatureControl
from kafka_net.server.group_config_repository import GroupConfigRepository
from kafka_net.server.metadata_cache import MetadataCache
from kafka_net.server.metadata_log import MetadataLog
from kafka_net.server.quotas import request_helper as quota_helper
from kafka_net.server.quotas.quota_managers import QuotaManagers
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.services import BrokerServices, standalone_services
from kafka_net.server.storage.base import CorruptRecordException, KafkaStorageException
from kafka_net.server.transaction import TransactionCoordinator

log = logging.getLogger(__name__)
# Damaged segments met outside Fetch (ListOffsets by timestamp, ...): one line per
# API per interval, as the Fetch path logs its own.
_damage_lines = RateLimitedLog(log)
_CORRELATION_ID = struct.Struct(">i")   # a response frame's bytes 4..8, any header version

class ApiHandler:
    """One row of the dispatch table: an API's key, the versions this broker
    serves, and the handler module (in :mod:`kafka_net.server.handlers`) that
    answers it, imported on the first request of that API.

    Why: a broker answers the few APIs its clients use, and importing all ~70
    handler modules (and what only they use) was 5-10% of its start-up.  The
    Processors and ApiVersions need only the versions, which are here; a
    handler module is imported when ``handle`` or ``error_response`` is first
    read.  The row then holds the module's functions, so a request after the
    first pays no more than a module's attribute lookup.  Two handler threads
    may load a row at once: the import system runs the module once, and both
    store the same functions.

    ``legacy_low``: the oldest version, served only while ``as.version`` plays
    a release before 4.0 (legacy message sets, KIP-896's removals).  A row reads
    like a module (``API_KEY``, ``VERSIONS``, ``LEGACY_LOW``, ``handle``,
    ``error_response``), so a test may put a module of its own in the table.
    """

    def __init__(self, api_key: ApiKey, module: str, versions: Versions,
                 legacy_low: int | None = None) -> None:
        self.API_KEY = api_key
        self.VERSIONS = versions
        self.LEGACY_LOW = legacy_low
        self.module_name = f"kafka_net.server.handlers.{module}"

    def __getattr__(self, name: str):
        # Called only for what the row does not hold yet: the module's names.
        if name.startswith("__"):
            raise AttributeError(name)   # copy, pickle and friends probing
        return getattr(self.load(), name)

    def load(self) -> ModuleType:
        module = importlib.import_module(self.module_name)
        self.handle = module.handle
        self.error_response = module.error_response
        return module

    def __repr__(self) -> str:
        return f"ApiHandler({self.API_KEY.name}, {self.module_name}, {self.VERSIONS})"


# In API-key order.  Adding an API = writing its module and adding its row here.
HANDLERS: dict[int, ApiHandler] = {row.API_KEY: row for row in (
    ApiHandler(ApiKey.PRODUCE, "produce", Versions(0, 13)),
    ApiHandler(ApiKey.FETCH, "fetch", Versions(4, 18), legacy_low=0),
    ApiHandler(ApiKey.LIST_OFFSETS, "list_offsets", Versions(1, 11), legacy_low=0),
    ApiHandler(ApiKey.METADATA, "metadata", Versions(0, 13)),
    ApiHandler(ApiKey.OFFSET_COMMIT, "offset_commit", Versions(2, 10), legacy_low=0),
    ApiHandler(ApiKey.OFFSET_FETCH, "offset_fetch", Versions(1, 10), legacy_low=0),
    ApiHandler(ApiKey.FIND_COORDINATOR, "find_coordinator", Versions(0, 6)),
    ApiHandler(ApiKey.JOIN_GROUP, "join_group", Versions(0, 9)),
    ApiHandler(ApiKey.HEARTBEAT, "heartbeat", Versions(0, 4)),
    ApiHandler(ApiKey.LEAVE_GROUP, "leave_group", Versions(0, 5)),
    ApiHandler(ApiKey.SYNC_GROUP, "sync_group", Versions(0, 5)),
    ApiHandler(ApiKey.DESCRIBE_GROUPS, "describe_groups", Versions(0, 6)),
    ApiHandler(ApiKey.LIST_GROUPS, "list_groups", Versions(0, 5)),
    # SaslHandshake and SaslAuthenticate: after authentication; before it, the authenticator.
    ApiHandler(ApiKey.SASL_HANDSHAKE, "sasl_handshake", Versions(0, 1)),
    ApiHandler(ApiKey.API_VERSIONS, "api_versions", Versions(0, 4)),
    ApiHandler(ApiKey.CREATE_TOPICS, "create_topics", Versions(2, 7), legacy_low=0),
    ApiHandler(ApiKey.DELETE_TOPICS, "delete_topics", Versions(1, 6), legacy_low=0),
    ApiHandler(ApiKey.DELETE_RECORDS, "delete_records", Versions(0, 2)),
    ApiHandler(ApiKey.INIT_PRODUCER_ID, "init_producer_id", Versions(0, 5)),
    ApiHandler(ApiKey.OFFSET_FOR_LEADER_EPOCH, "offset_for_leader_epoch",
               Versions(2, 4), legacy_low=0),
    ApiHandler(ApiKey.ADD_PARTITIONS_TO_TXN, "add_partitions_to_txn", Versions(0, 5)),
    ApiHandler(ApiKey.ADD_OFFSETS_TO_TXN, "add_offsets_to_txn", Versions(0, 4)),
    ApiHandler(ApiKey.END_TXN, "end_txn", Versions(0, 5)),
    ApiHandler(ApiKey.TXN_OFFSET_COMMIT, "txn_offset_commit", Versions(0, 6)),
    ApiHandler(ApiKey.DESCRIBE_ACLS, "describe_acls", Versions(1, 3), legacy_low=0),
    ApiHandler(ApiKey.CREATE_ACLS, "create_acls", Versions(1, 3), legacy_low=0),
    ApiHandler(ApiKey.DELETE_ACLS, "delete_acls", Versions(1, 3), legacy_low=0),
    ApiHandler(ApiKey.DESCRIBE_CONFIGS, "describe_configs", Versions(1, 4), legacy_low=0),
    ApiHandler(ApiKey.ALTER_CONFIGS, "alter_configs", Versions(0, 2)),
    ApiHandler(ApiKey.ALTER_REPLICA_LOG_DIRS, "alter_replica_log_dirs", Versions(1, 2),
               legacy_low=0),
    ApiHandler(ApiKey.DESCRIBE_LOG_DIRS, "describe_log_dirs", Versions(1, 5), legacy_low=0),
    ApiHandler(ApiKey.SASL_AUTHENTICATE, "sasl_authenticate", Versions(0, 2)),
    ApiHandler(ApiKey.CREATE_PARTITIONS, "create_partitions", Versions(0, 3)),
    ApiHandler(ApiKey.CREATE_DELEGATION_TOKEN, "create_delegation_token",
               Versions(1, 3), legacy_low=0),
    ApiHandler(ApiKey.RENEW_DELEGATION_TOKEN, "renew_delegation_token",
               Versions(1, 2), legacy_low=0),
    ApiHandler(ApiKey.EXPIRE_DELEGATION_TOKEN, "expire_delegation_token",
               Versions(1, 2), legacy_low=0),
    ApiHandler(ApiKey.DESCRIBE_DELEGATION_TOKEN, "describe_delegation_token",
               Versions(1, 3), legacy_low=0),
    ApiHandler(ApiKey.DELETE_GROUPS, "delete_groups", Versions(0, 3)),
    ApiHandler(ApiKey.ELECT_LEADERS, "elect_leaders", Versions(0, 2)),
    ApiHandler(ApiKey.INCREMENTAL_ALTER_CONFIGS, "incremental_alter_configs", Versions(0, 1)),
    ApiHandler(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "alter_partition_reassignments",
               Versions(0, 1)),
    ApiHandler(ApiKey.LIST_PARTITION_REASSIGNMENTS, "list_partition_reassignments",
               Versions(0, 0)),
    ApiHandler(ApiKey.OFFSET_DELETE, "offset_delete", Versions(0, 0)),
    ApiHandler(ApiKey.DESCRIBE_CLIENT_QUOTAS, "describe_client_quotas", Versions(0, 1)),
    ApiHandler(ApiKey.ALTER_CLIENT_QUOTAS, "alter_client_quotas", Versions(0, 1)),
    ApiHandler(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "describe_user_scram_credentials",
               Versions(0, 0)),
    ApiHandler(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "alter_user_scram_credentials",
               Versions(0, 0)),
    ApiHandler(ApiKey.DESCRIBE_QUORUM, "describe_quorum", Versions(0, 2)),
    ApiHandler(ApiKey.UPDATE_FEATURES, "update_features", Versions(0, 2)),
    ApiHandler(ApiKey.DESCRIBE_CLUSTER, "describe_cluster", Versions(0, 2)),
    ApiHandler(ApiKey.DESCRIBE_PRODUCERS, "describe_producers", Versions(0, 0)),
    ApiHandler(ApiKey.DESCRIBE_TRANSACTIONS, "describe_transactions", Versions(0, 0)),
    ApiHandler(ApiKey.LIST_TRANSACTIONS, "list_transactions", Versions(0, 2)),
    ApiHandler(ApiKey.CONSUMER_GROUP_HEARTBEAT, "consumer_group_heartbeat", Versions(0, 1)),
    ApiHandler(ApiKey.CONSUMER_GROUP_DESCRIBE, "consumer_group_describe", Versions(0, 1)),
    # Telemetry: advertised only with an exporter (client_metrics.py), served either way.
    ApiHandler(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, "get_telemetry_subscriptions", Versions(0, 0)),
    ApiHandler(ApiKey.PUSH_TELEMETRY, "push_telemetry", Versions(0, 0)),
    ApiHandler(ApiKey.LIST_CLIENT_METRICS_RESOURCES, "list_config_resources", Versions(0, 1)),
    ApiHandler(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "describe_topic_partitions", Versions(0, 0)),
    ApiHandler(ApiKey.SHARE_GROUP_HEARTBEAT, "share_group_heartbeat", Versions(1, 1)),
    ApiHandler(ApiKey.SHARE_GROUP_DESCRIBE, "share_group_describe", Versions(1, 1)),
    ApiHandler(ApiKey.SHARE_FETCH, "share_fetch", Versions(1, 2)),
    ApiHandler(ApiKey.SHARE_ACKNOWLEDGE, "share_acknowledge", Versions(1, 2)),
    ApiHandler(ApiKey.STREAMS_GROUP_HEARTBEAT, "streams_group_heartbeat", Versions(0, 1)),
    ApiHandler(ApiKey.STREAMS_GROUP_DESCRIBE, "streams_group_describe", Versions(0, 1)),
    ApiHandler(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "describe_share_group_offsets",
               Versions(0, 1)),
    ApiHandler(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "alter_share_group_offsets", Versions(0, 0)),
    ApiHandler(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "delete_share_group_offsets", Versions(0, 0)),
    ApiHandler(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
               "streams_group_topology_description_update", Versions(0, 0)),
)}


# Kafka 4.0 removed message formats v0 and v1 (KIP-724) and the API versions that
# carried them (KIP-896); every release before it still spoke them.
FIRST_RELEASE_WITHOUT_LEGACY_FORMATS = "4.0"


def speaks_legacy_formats(release: str | None) -> bool:
    """Whether ``as.version`` plays a Kafka release that accepted and served legacy
    message sets (Produce v0-v2, Fetch v0-v3): any before 4.0.  Without
    ``as.version`` kafka-net plays Kafka 4.x, which does not."""
    return release is not None and \
        KAFKA_RELEASES.index(release) < KAFKA_RELEASES.index(FIRST_RELEASE_WITHOUT_LEGACY_FORMATS)


def served_versions(handlers: dict[int, ModuleType], release: str | None
                    ) -> dict[int, Versions]:
    """Each handler's VERSIONS, in key order; with ``as.version`` (``release``), only
    the versions that Kafka release's broker served too, and no API it lacked.  The
    Processors then refuse the rest as Kafka refuses a version it does not serve.

    A handler whose oldest versions carry legacy message sets names them in
    ``LEGACY_LOW`` (Fetch: 0): they are served only at a release before 4.0,
    and only as far as that release served them."""
    served = {key: mod.VERSIONS for key, mod in sorted(handlers.items())}
    if release is None:
        return served
    kafka = KAFKA_RELEASE_APIS[release]
    legacy = speaks_legacy_formats(release)
    limited = {}
    for key, versions in served.items():
        if key in kafka:
            own_low = versions.low
            legacy_low = getattr(handlers[key], "LEGACY_LOW", None)
            if legacy and legacy_low is not None:
                own_low = legacy_low
            low = max(own_low, kafka[key][0])
            high = kafka[key][1] if versions.high is None else min(versions.high, kafka[key][1])
            if low <= high:
                limited[key] = Versions(low, high)
    return limited


class RequestContext:
    """What a handler may know about its request and the broker.

    ``api_version`` and ``unsupported_version`` are plain attributes, copied
    from the request once: handlers read them several times per request, and
    a property is a call each time.
    """

    __slots__ = ("request", "apis", "api_version", "unsupported_version", "authorizer")

    def __init__(self, request: Request, apis: "KafkaApis") -> None:
        self.request = request
        self.apis = apis
        self.api_version: int = request.header.api_version
        self.unsupported_version: bool = request.unsupported_version
        # None without authorizer.class.name: a handler's check is then one
        # attribute test (``if ctx.authorizer is not None``), no call.
        self.authorizer: StandardAuthorizer | None = apis.authorizer

    # -- authorization (Kafka's AuthHelper) ----------------------------------------------
    # Each answers True / everything when no authorizer is configured.

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str,
                  log_if_denied: bool = True, ref_count: int = 1,
                  log_if_allowed: bool = True) -> bool:
        """May this request's principal, from its host, do ``operation`` on the
        resource?  (AuthHelper.authorize.)"""
        authorizer = self.authorizer
        if authorizer is None:
            return True
        request = self.request
        return authorizer.authorize_action(
            request.principal, host_address(request.client_address[0]),
            Action(operation, resource_type, name, ref_count, log_if_allowed, log_if_denied),
            api_name(request.header.api_key)) is AuthorizationResult.ALLOWED

    def authorize_cluster(self, operation: AclOperation, log_if_denied: bool = True) -> bool:
        """``operation`` on the cluster resource (kafka-cluster)."""
        return self.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied)

    def filter_authorized(self, operation: AclOperation, resource_type: ResourceType,
                          names, log_if_denied: bool = True) -> set[str]:
        """The names among ``names`` the principal may ``operation`` (each checked
        once, with how often it was named: AuthHelper.filterByAuthorized)."""
        counts: dict[str, int] = {}
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        if self.authorizer is None:
            return set(counts)
        return {name for name, count in counts.items()
                if self.authorize(operation, resource_type, name, log_if_denied, count)}

    def authorize_by_resource_type(self, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """May the principal ``operation`` at least one resource of the type?"""
        authorizer = self.authorizer
        if authorizer is None:
            return True
        request = self.request
        return authorizer.authorize_by_resource_type(
            request.principal, host_address(request.client_address[0]), operation,
            resource_type, api_name(request.header.api_key)) is AuthorizationResult.ALLOWED

    def authorized_operations(self, resource_type: ResourceType, name: str,
                              supported: int) -> int:
        """The bits of ``supported`` (1 << operation code) the principal is allowed,
        checked without logging denials (AuthHelper.authorizedOperations)."""
        if self.authorizer is None:
            return supported
        allowed = 0
        for op in AclOperation:
            if supported & (1 << op) and self.authorize(op, resource_type, name, False,
                                                        log_if_allowed=False):
                allowed |= 1 << op
        return allowed

    @property
    def listener_name(self) -> str:
        return self.request.listener_name

    @property
    def principal(self) -> str:
        """Who sent the request, as Kafka's RequestContext.principal: "User:ANONYMOUS";
        on an SSL listener with a client certificate, "User:<mapped DN>"; on a SASL
        listener, "User:<authenticated name>"."""
        return self.request.principal

    @property
    def config(self) -> ServerConfig:
        return self.apis.config

    @property
    def legacy_formats(self) -> bool:
        """Whether legacy message sets are spoken (``as.version`` before 4.0)."""
        return speaks_legacy_formats(self.apis.config.as_version)

    @property
    def metadata_cache(self) -> MetadataCache:
        return self.apis.metadata_cache

    @property
    def supported_versions(self) -> dict[int, Versions]:
        return self.apis._supported   # supported_versions(), one call fewer per ApiVersions

    # The broker's parts a handler may use: its doors, so none reaches into ``apis``.

    @property
    def services(self) -> BrokerServices:
        """Every part of the broker (:mod:`kafka_net.server.services`): a part added to
        BrokerCore is reachable here as ``ctx.services.<name>``, with no door of its own."""
        return self.apis.services

    @property
    def replica_manager(self) -> ReplicaManager:
        return self.apis.replica_manager

    @property
    def config_repository(self):
        return self.apis.config_repository

    @property
    def group_coordinator(self):
        return self.apis.group_coordinator

    @property
    def share_coordinator(self):
        """The share group coordinator while share groups are served (Kafka's
        isShareGroupProtocolEnabled: a share coordinator and ``share.version`` 1
        or more), else None: then the share APIs answer UNSUPPORTED_VERSION."""
        if self.features.level("share.version") < 1:
            return None
        return self.apis.share_coordinator()   # built by the first request that asks

    @property
    def quotas(self) -> QuotaManagers:
        return self.apis.quotas

    @property
    def transaction_coordinator(self) -> TransactionCoordinator:
        return self.apis.transaction_coordinator

    @property
    def credential_cache(self) -> CredentialCache:
        return self.apis.credential_cache

    @property
    def dynamic_config(self) -> DynamicBrokerConfig:
        return self.apis.dynamic_config

    @property
    def delegation_tokens(self) -> DelegationTokenManager:
        return self.apis.delegation_tokens

    def allow_token_requests(self) -> bool:
        """Kafka's ``allowTokenRequests``: never on a connection that logged in with
        a token, on PLAINTEXT, or on SSL without a client certificate."""
        request = self.request
        protocol = request.security_protocol
        return not (request.token_authenticated or protocol == "PLAINTEXT"
                    or (protocol == "SSL" and request.principal == "User:ANONYMOUS"))

    @property
    def group_configs(self) -> GroupConfigRepository:
        return self.apis.group_configs

    @property
    def features(self) -> FeatureControl:
        return self.apis.features

    @property
    def client_metrics(self) -> ClientMetricsManager:
        return self.apis.client_metrics

    @property
    def metadata_log(self) -> MetadataLog:
        """The KRaft metadata log (``__cluster_metadata``) the controller writes."""
        return self.apis.controller.metadata_log

    @property
    def internal_topics(self):
        """The broker's InternalTopics, or None (API tests without a BrokerCore)."""
        return self.apis.internal_topics

    def allocate_producer_id(self) -> int:
        return self.apis.allocate_producer_id()

    @property
    def controller(self) -> Controller:
        """Where metadata changes are written (server/controller.py)."""
        return self.apis.controller

    def try_create_topic(self, name: str, num_partitions: int, configs: dict | None = None):
        """(TopicMetadata, created): see :meth:`KafkaApis.create_topic`."""
        return self.apis.create_topic(name, num_partitions, configs)

    def delete_topic(self, name: str, topic_id=None) -> bool:
        return self.apis.delete_topic(name, topic_id)

    def complete(self, body) -> None:
        """Answer a request whose handler returned ``DEFERRED`` (from any thread)."""
        self.apis.complete_deferred(self.request, body)

    def create_topic(self, name: str, num_partitions: int):
        topic, created = self.apis.create_topic(name, num_partitions)
        if created:
            log.info("Created topic %s with %d partition(s) (auto-create, from %s)",
                     name, num_partitions, escape(self.request.header.client_id or "-"))
        return topic


class KafkaApis:
    def __init__(self, config: ServerConfig, metadata_cache: MetadataCache,
                 request_channel: RequestChannel | None = None,
                 handlers: dict[int, ModuleType] | None = None,
                 services: BrokerServices | None = None) -> None:
        self.config = config
        self.metadata_cache = metadata_cache
        self.request_channel = request_channel
        # The broker's parts (BrokerCore), or in-memory ones for a KafkaApis alone.
        if services is None:
            services = standalone_services(config, metadata_cache, request_channel)
        self.services = services
        # Each copied once: the request path reads them as one attribute.
        self.replica_manager = services.replica_manager
        self.group_coordinator = services.group_coordinator
        self.quotas = services.quotas
        self.transaction_coordinator = services.transaction_coordinator
        self.credential_cache = services.credential_cache
        self.controller = services.controller
        self.authorizer: StandardAuthorizer | None = services.authorizer
        self.internal_topics = services.internal_topics
        # () -> the ShareGroupCoordinator, read only when called: BrokerCore builds
        # it on first use (its share_coordinator property).
        self.share_coordinator = lambda: services.share_coordinator
        self.features = FeatureControl(release=config.as_version)
        # GROUP config resources; the consumer group coordinator reads them per group.
        self.group_configs = GroupConfigRepository(config)
        self.controller.group_configs = self.group_configs
        # Client metrics subscriptions and instances (KIP-714); the metrics listener
        # is its exporter (/metrics), as a ClientTelemetryExporter plugin is Kafka's.
        self.client_metrics = ClientMetricsManager(config.telemetry_max_bytes,
                                                   receiver=bool(config.metrics_listener))
        self.controller.client_metrics = self.client_metrics
        self.controller.features = self.features
        # Delegation tokens (KIP-48): records in the metadata log, replayed into the
        # CredentialCache's token cache the SCRAM authenticators read.
        self.delegation_tokens = DelegationTokenManager(
            config, self.credential_cache.tokens, self.controller)
        self.delegation_tokens.register(self.controller.metadata_log)
        # Dynamic broker configs (AlterConfigs on BROKER resources); the log defaults
        # act through the ConfigRepository, the connection quotas through the
        # SocketServer's ConnectionQuotas (registered by BrokerCore).
        self.dynamic_config = DynamicBrokerConfig(
            config, metadata_cache.node_id, self.config_repository, self.controller)
        self.dynamic_config.add_reconfigurable(self._apply_log_defaults)
        self.handlers: dict[int, ModuleType] = {}
        self._supported: dict[int, Versions] = {}
        # (served table, its parse routes): one attribute, swapped whole, so a
        # Processor never pairs a table with another table's routes.
        self._parse_table: tuple[dict[int, Versions], dict] = ({}, {})
        self.set_handlers(HANDLERS if handlers is None else handlers)
        self.metrics = RequestMetrics()
        # (api key, version) -> (read-only body, its frame's bytes before and after
        # the correlation id): see _encode.
        # api_key -> version -> (body, frame head, frame tail); nested as codec.py's
        # routes (free-threaded 3.13: no new tuple keys in shared dicts).
        self._constant_frames: dict[int, dict[int, tuple[MappingProxyType, bytes, bytes]]] = {}
        # Faults on demand (server/faults): ``fault_check`` is the registry while
        # it holds a rule that can fire, else None, so a broker without faults
        # pays one attribute test per request.  ``fault_pending``: parked requests
        # a fault fired on, finished by complete_deferred.
        self.fault_check: FaultRegistry | None = None
        self.fault_pending: dict = {}
        self._faults: FaultRegistry | None = None    # built on first use: see faults
        self._faults_lock = threading.Lock()

    @property
    def faults(self) -> "FaultRegistry":
        """The broker's fault registry, built (and the fault layer imported) when a
        test or the control endpoint first asks for it, not at start-up: a broker
        nobody injects faults into never loads it.  Under a lock, so two first
        callers (a test and the control endpoint) share one registry."""
        if self._faults is None:
            with self._faults_lock:
                if self._faults is None:
                    from kafka_net.server.faults.registry import FaultRegistry
                    self._faults = FaultRegistry(self)
        return self._faults

    def _apply_log_defaults(self, values: dict) -> None:
        repository = self.config_repository
        before = repository.broker_values
        repository.set_broker_defaults(
            {LOG_KEYS[k]: v for k, v in values.items() if k in LOG_KEYS})
        if repository.broker_values != before:
            self.replica_manager.apply_retention()

    def create_topic(self, name: str, num_partitions: int, configs: dict | None = None):
        """Create a topic, its partitions and its config overrides (parsed and
        validated) unless it exists: (TopicMetadata, created).  The one path of
        CreateTopics, auto-creation and the embedded broker.

        Raises TopicCreationError (a name collision, max.broker.partitions)
        before writing anything.
        """
        return self.controller.create_topic(name, num_partitions, configs,
                                            self.config.max_broker_partitions)

    def delete_topic(self, name: str, topic_id=None) -> bool:
        """Delete ``name`` (if ``topic_id`` is given, only while it has that id)."""
        return self.controller.delete_topic(name, topic_id)

    @property
    def config_repository(self):
        """Topic config overrides; the ReplicaManager acts on them, so it holds them."""
        return self.replica_manager.config_repository

    def allocate_producer_id(self) -> int:
        return self.transaction_coordinator.generate_producer_id()

    def set_handlers(self, handlers: dict[int, ModuleType]) -> None:
        """Replace the dispatch table (tests swap in slow or limited handlers).

        The served-versions table is rebuilt from it and swapped in one
        assignment, so a Processor never sees a half-updated table.
        """
        self.handlers = dict(handlers)
        self._supported = served_versions(self.handlers, self.config.as_version)
        # KAFKA_NET_READABLE: no route cache, every request looked up in full.
        self._parse_table = (self._supported, None if readable.READABLE else {})

    def supported_versions(self) -> dict[int, Versions]:
        return self._supported

    def api_versions_body(self, parsed: ParsedRequest) -> dict:
        """The ApiVersions answer for a SASL authenticator, which serves ApiVersions
        itself on the network thread before authentication (Kafka's apiVersionSupplier)."""
        request = Request.from_parsed(-1, "", "", ("", 0), parsed)
        return HANDLERS[ApiKey.API_VERSIONS].handle(RequestContext(request, self), parsed.body)

    def error_body(self, parsed: ParsedRequest, error_code: int) -> dict:
        """``parsed``'s API's error response with ``error_code`` (Kafka's
        ``getErrorResponse``), for the SASL authenticator's ILLEGAL_SASL_STATE."""
        module = self.handlers[parsed.header.api_key]
        return module.error_response(parsed.body, parsed.header.api_version, error_code)

    def parse_request(self, frame: bytes) -> ParsedRequest:
        """Runs on the Processor thread, as Kafka parses on the network thread."""
        supported, routes = self._parse_table
        return parse_request(frame, supported, routes)

    def handle(self, request: Request) -> None:
        """Runs on a handler thread."""
        response = self.build_response(request)
        request.api_local_complete_time_ns = time.monotonic_ns()
        if response is not None:
            self.request_channel.send_response(response)

    def build_response(self, request: Request) -> Response | None:
        """Request in, Response out (``handle`` hands the Response on).

        None means the handler parked the request (``DEFERRED``): it will be
        answered later through :meth:`complete_deferred`.
        """
        module = self.handlers[request.header.api_key]
        if self.fault_check is not None:
            fired = self.fault_check.decide(request)
            if fired is not None:
                from kafka_net.server.faults import actions as fault_actions
                return fault_actions.respond(self, module, request, fired)
        ctx = RequestContext(request, self)
        try:
            if self.quotas.enabled:
                quota_helper.before_handle(self.quotas, request)
            body = module.handle(ctx, request.body)
        except KafkaStorageException:
            # A log dir failed under the request (the LogDirFailureChannel logged it):
            # Kafka's answer for the whole request, and no traceback.
            body = self._error_body(module, request, ErrorCode.KAFKA_STORAGE_ERROR)
        except CorruptRecordException as exc:
            _damage_lines.log(logging.ERROR, request.header.api_key,
                              "Error handling request %s: %s", request.describe(), exc)
            body = self._error_body(module, request, ErrorCode.CORRUPT_MESSAGE)
        except Exception:
            log.exception("Error handling request %s", request.describe())
            body = self._error_body(module, request)
        if body is DEFERRED:
            return None
        return self.response_for(request, body)

    def complete_deferred(self, request: Request, body) -> None:
        """Answer a parked request; any thread may call this, exactly once per request."""
        if self.fault_pending:
            finish = self.fault_pending.pop(request, None)
            if finish is not None:
                response = finish(body)
                if response is not None:
                    self.request_channel.send_response(response)
                return
        self.request_channel.send_response(self.response_for(request, body))

    def run_handler(self, module: ModuleType, request: Request, body):
        """The handler's answer to ``body`` (the request's, or the fault layer's
        copy less some partitions), as build_response runs it."""
        try:
            if self.quotas.enabled:
                quota_helper.before_handle(self.quotas, request)
            return module.handle(RequestContext(request, self), body)
        except Exception:
            log.exception("Error handling request %s", request.describe())
            return self._error_body(module, request)

    def response_for(self, request: Request, body) -> Response:
        """Turn a handler's answer (a body or a marker) into one of the Response kinds."""
        header = request.header
        self.metrics.record(header.api_key, header.api_version, _top_error(body))
        data = None
        if self.quotas.enabled:   # all that quotas cost here while none is set
            if type(body) is MappingProxyType:
                body = dict(body)   # a throttled answer carries its throttle_time_ms
            body, data = self._throttle_response(request, body)
        if body is NO_RESPONSE:
            return NoOpResponse(request)
        if body is CLOSE_CONNECTION:
            return CloseConnectionResponse(request)
        try:
            if data is None:
                data = self._encode(request, body)
        except Exception:
            log.exception("Error encoding the response to %s", request.describe())
            return CloseConnectionResponse(request)
        return SendResponse(request, data)

    def _throttle_response(self, request: Request, body):
        try:
            return quota_helper.throttle_response(
                self.quotas, request, body, lambda b: self._encode(request, b))
        except Exception:
            # A quota bug must not cost the client its answer.
            log.exception("Error applying client quotas to %s", request.describe())
            return body, None

    def _encode(self, request: Request, body) -> "bytes | ChunkedFrame":
        """The response frame of ``body``: bytes, or for a Fetch answered from
        segment files a ChunkedFrame (header bytes and file regions, sent with
        sendfile by the Processor).

        A handler returns a read-only body (types.MappingProxyType) for an answer
        that does not change (ApiVersions): it is encoded once per version, and
        each response is that frame with its own correlation id.
        """
        # An unsupported ApiVersions request is answered at v0 (KIP-511).
        header = request.header
        version = 0 if request.unsupported_version else header.api_version
        if type(body) is not MappingProxyType or readable.READABLE:
            return encode_response(header.api_key, version, header.correlation_id, body)
        by_version = self._constant_frames.get(header.api_key)
        if by_version is None:
            by_version = self._constant_frames.setdefault(header.api_key, {})
        cached = by_version.get(version)
        if cached is None or cached[0] is not body:
            frame = encode_response(header.api_key, version, 0, body)
            # Handler threads may race here: each builds the same bytes.
            cached = by_version[version] = (body, frame[:4], frame[8:])
        return cached[1] + _CORRELATION_ID.pack(header.correlation_id) + cached[2]

    @staticmethod
    def _error_body(module: ModuleType, request: Request,
                    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR):
        try:
            return module.error_response(request.body, request.header.api_version, error_code)
        except Exception:
            log.exception("Error building the error response to %s; closing the connection",
                          request.describe())
            return CLOSE_CONNECTION


def _top_error(body) -> int | None:
    """The response-level error code, if the API has one (for ErrorsPerSec)."""
    return body.get("error_code") if isinstance(body, (dict, MappingProxyType)) else None
