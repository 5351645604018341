"""KafkaApis: the dispatch table, and turning a handler's answer into a Response.

``HANDLERS`` below is the single list of what this broker serves.  Three
things are derived from it, so they cannot disagree:

* which requests the Processor accepts (:meth:`KafkaApis.parse_request`, given
  to the Processors; a key or version outside the table closes the connection);
* which handler runs (:meth:`KafkaApis.build_response`);
* what ApiVersions advertises (:meth:`KafkaApis.supported_versions`).

Error policy for a request that parsed (the bad-input cases are in
:mod:`kafka_net.protocol.codec`): a handler that raises is logged with its
request, and the client gets the API's error response with
UNKNOWN_SERVER_ERROR, or the connection is closed where Kafka would close it
(``sendErrorOrCloseConnection``).  The handler thread goes on either way.
"""

from __future__ import annotations

import logging
import struct
import time
from types import MappingProxyType, ModuleType

from kafka_net.config import ServerConfig
from kafka_net.log_safety import escape
from kafka_net.metrics import RequestMetrics
from kafka_net.network.request_channel import (
    CloseConnectionResponse, NoOpResponse, Request, RequestChannel, Response, SendResponse)
from kafka_net.protocol.codec import ParsedRequest, encode_response, parse_request
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import Versions
from kafka_net.security.credential_cache import CredentialCache
from kafka_net.server.handlers import (
    CLOSE_CONNECTION, DEFERRED, NO_RESPONSE, add_offsets_to_txn, add_partitions_to_txn,
    alter_client_quotas, alter_configs, alter_user_scram_credentials, api_versions,
    consumer_group_describe, consumer_group_heartbeat, create_partitions, create_topics,
    delete_groups, delete_records, delete_topics, describe_client_quotas, describe_cluster,
    describe_configs, describe_groups, describe_producers, describe_topic_partitions,
    describe_transactions, describe_user_scram_credentials, end_txn, fetch,
    find_coordinator, heartbeat, incremental_alter_configs, init_producer_id, join_group,
    leave_group, list_groups, list_offsets, list_transactions, metadata, offset_commit,
    offset_delete, offset_fetch, produce, sasl_authenticate, sasl_handshake, sync_group,
    txn_offset_commit)
from kafka_net.server.metadata_cache import MetadataCache
from kafka_net.server.quotas import request_helper as quota_helper
from kafka_net.server.quotas.quota_managers import QuotaManagers
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.transaction import TransactionConfig, TransactionCoordinator

log = logging.getLogger(__name__)
_CORRELATION_ID = struct.Struct(">i")   # a response frame's bytes 4..8, any header version

# In API-key order.  Adding an API = writing its module and listing it here.
HANDLERS: dict[int, ModuleType] = {module.API_KEY: module for module in (
    produce,            # 0
    fetch,              # 1
    list_offsets,       # 2
    metadata,           # 3
    offset_commit,      # 8
    offset_fetch,       # 9
    find_coordinator,   # 10
    join_group,         # 11
    heartbeat,          # 12
    leave_group,        # 13
    sync_group,         # 14
    describe_groups,    # 15
    list_groups,        # 16
    sasl_handshake,     # 17 (after authentication; before it, the authenticator)
    api_versions,       # 18
    create_topics,      # 19
    delete_topics,      # 20
    delete_records,     # 21
    init_producer_id,   # 22
    add_partitions_to_txn,  # 24
    add_offsets_to_txn,     # 25
    end_txn,                # 26
    txn_offset_commit,      # 28
    describe_configs,   # 32
    alter_configs,      # 33
    sasl_authenticate,  # 36 (after authentication; before it, the authenticator)
    create_partitions,  # 37
    delete_groups,      # 42
    incremental_alter_configs,  # 44
    offset_delete,      # 47
    describe_client_quotas,  # 48
    alter_client_quotas,     # 49
    describe_user_scram_credentials,  # 50
    alter_user_scram_credentials,     # 51
    describe_cluster,   # 60
    describe_producers,  # 61
    describe_transactions,   # 65
    list_transactions,       # 66
    consumer_group_heartbeat,  # 68
    consumer_group_describe,   # 69
    describe_topic_partitions,  # 75
)}


class RequestContext:
    """What a handler may know about its request and the broker.

    ``api_version`` and ``unsupported_version`` are plain attributes, copied
    from the request once: handlers read them several times per request, and
    a property is a call each time.
    """

    __slots__ = ("request", "apis", "api_version", "unsupported_version")

    def __init__(self, request: Request, apis: "KafkaApis") -> None:
        self.request = request
        self.apis = apis
        self.api_version: int = request.header.api_version
        self.unsupported_version: bool = request.unsupported_version

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
    def metadata_cache(self) -> MetadataCache:
        return self.apis.metadata_cache

    @property
    def supported_versions(self) -> dict[int, Versions]:
        return self.apis._supported   # supported_versions(), one call fewer per ApiVersions

    # The broker's parts a handler may use: its doors, so none reaches into ``apis``.

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
    def quotas(self) -> QuotaManagers:
        return self.apis.quotas

    @property
    def transaction_coordinator(self) -> TransactionCoordinator:
        return self.apis.transaction_coordinator

    @property
    def credential_cache(self) -> CredentialCache:
        return self.apis.credential_cache

    def allocate_producer_id(self) -> int:
        return self.apis.allocate_producer_id()

    def try_create_topic(self, name: str, num_partitions: int):
        """(TopicMetadata, created): see :meth:`KafkaApis.create_topic`."""
        return self.apis.create_topic(name, num_partitions)

    def delete_topic(self, name: str) -> bool:
        return self.apis.delete_topic(name)

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
                 replica_manager: ReplicaManager | None = None,
                 group_coordinator=None, quotas: QuotaManagers | None = None,
                 transaction_coordinator: TransactionCoordinator | None = None,
                 credential_cache: CredentialCache | None = None) -> None:
        self.config = config
        self.credential_cache = credential_cache or CredentialCache()
        # Client quotas; KafkaServer passes its own (it runs the reaper thread).
        self.quotas = quotas or QuotaManagers(config, request_channel)
        self.metadata_cache = metadata_cache
        self.request_channel = request_channel
        self.replica_manager = replica_manager or ReplicaManager()
        self.group_coordinator = group_coordinator
        # Producer ids, transactional or not, come from the transaction coordinator.
        self.transaction_coordinator = transaction_coordinator or TransactionCoordinator(
            TransactionConfig(config.transaction_max_timeout_ms), self.replica_manager,
            group_coordinator.offsets if group_coordinator is not None else None)
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

    def create_topic(self, name: str, num_partitions: int):
        """Create a topic and its partitions unless it exists: (TopicMetadata, created).

        Raises TopicCreationError (a name collision, max.broker.partitions)
        before allocating anything.
        """
        topic, created = self.metadata_cache.create_topic(
            name, num_partitions, self.config.max_broker_partitions)
        if created:
            self.replica_manager.ensure_partitions(name, topic.topic_id, num_partitions)
        return topic, created

    def delete_topic(self, name: str) -> bool:
        if not self.metadata_cache.delete_topic(name):
            return False
        self.replica_manager.delete_topic(name)
        self.config_repository.delete_topic(name)
        if self.group_coordinator is not None:
            self.group_coordinator.delete_topic_offsets(name)
        return True

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
        self._supported = {key: mod.VERSIONS for key, mod in sorted(self.handlers.items())}
        self._parse_table = (self._supported, {})

    def supported_versions(self) -> dict[int, Versions]:
        return self._supported

    def api_versions_body(self, parsed: ParsedRequest) -> dict:
        """The ApiVersions answer for a SASL authenticator, which serves ApiVersions
        itself on the network thread before authentication (Kafka's apiVersionSupplier)."""
        request = Request.from_parsed(-1, "", "", ("", 0), parsed)
        return api_versions.handle(RequestContext(request, self), parsed.body)

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
        ctx = RequestContext(request, self)
        try:
            if self.quotas.enabled:
                quota_helper.before_handle(self.quotas, request)
            body = module.handle(ctx, request.body)
        except Exception:
            log.exception("Error handling request %s", request.describe())
            body = self._error_body(module, request)
        if body is DEFERRED:
            return None
        return self.response_for(request, body)

    def complete_deferred(self, request: Request, body) -> None:
        """Answer a parked request; any thread may call this, exactly once per request."""
        self.request_channel.send_response(self.response_for(request, body))

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

    def _encode(self, request: Request, body) -> bytes:
        """The response frame of ``body``.

        A handler returns a read-only body (types.MappingProxyType) for an answer
        that does not change (ApiVersions): it is encoded once per version, and
        each response is that frame with its own correlation id.
        """
        # An unsupported ApiVersions request is answered at v0 (KIP-511).
        header = request.header
        version = 0 if request.unsupported_version else header.api_version
        if type(body) is not MappingProxyType:
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
    def _error_body(module: ModuleType, request: Request):
        try:
            return module.error_response(request.body, request.header.api_version,
                                         ErrorCode.UNKNOWN_SERVER_ERROR)
        except Exception:
            log.exception("Error building the error response to %s; closing the connection",
                          request.describe())
            return CLOSE_CONNECTION


def _top_error(body) -> int | None:
    """The response-level error code, if the API has one (for ErrorsPerSec)."""
    return body.get("error_code") if isinstance(body, (dict, MappingProxyType)) else None
