"""KafkaServer: one broker, wiring the 1 + N + M threads together.

::

                      +-------------------+
     clients  ----->  |  Acceptor (1 per  |  round robin
                      |  listener)        | ------------+----------------+
                      +-------------------+             |                |
                                                        v                v
                                              +-------------+    +-------------+
                                              | Processor 0 |... | Processor N |   read, frame,
                                              +-------------+    +-------------+   parse, mute
                                                  |    ^               |    ^
                                   send_request   v    | response      v    |
                                              +------------------------------+
                                              |  RequestChannel (bounded)    |
                                              +------------------------------+
                                                  |                 ^
                                                  v                 | send_response
                                              +------------------------------+
                                              | KafkaRequestHandlerPool (M)  |
                                              |   -> KafkaApis -> handlers   |
                                              +------------------------------+

Startup: handlers first (so nothing queued waits for a thread), then the
SocketServer (Processors, then Acceptors).  Shutdown, graceful: drain the
SocketServer (stop accepting and reading, answer what was received), then
Kafka's order: stop the SocketServer, then the handler pool.
"""

from __future__ import annotations

import logging
import socket

from kafka_net.config import EndPoint, ServerConfig
from kafka_net.network.request_channel import RequestChannel
from kafka_net.network.socket_server import SocketServer
from kafka_net.server.apis import KafkaApis
from kafka_net.server.group import GroupConfig, GroupCoordinator
from kafka_net.server.handler_pool import KafkaRequestHandlerPool
from kafka_net.server.metadata_cache import MetadataCache
from kafka_net.server.quotas.quota_managers import QuotaManagers
from kafka_net.server.replica_manager import ReplicaManager

log = logging.getLogger(__name__)


class KafkaServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.request_channel = RequestChannel(config.queued_max_requests)
        self.metadata_cache = MetadataCache(config.node_id, config.cluster_id)
        self.replica_manager = ReplicaManager(config.message_max_bytes,
                                              config.message_max_uncompressed_bytes)
        self.group_coordinator = GroupCoordinator(
            GroupConfig(config.group_min_session_timeout_ms, config.group_max_session_timeout_ms,
                        config.group_initial_rebalance_delay_ms,
                        config.offset_metadata_max_bytes, config.group_max_size),
            self._partition_count)
        self.quotas = QuotaManagers(config, self.request_channel)
        self.apis = KafkaApis(config, self.metadata_cache, self.request_channel,
                              replica_manager=self.replica_manager,
                              group_coordinator=self.group_coordinator, quotas=self.quotas)
        self.socket_server = SocketServer(config, self.request_channel, self.apis.parse_request)
        # `ip` entity quotas (connection_creation_rate, set through AlterClientQuotas)
        # are enforced by the Acceptors' ConnectionQuotas.
        self.quotas.client_quotas.ip_quotas = self.socket_server.connection_quotas
        self.handler_pool = KafkaRequestHandlerPool(
            self.request_channel, self.apis, config.num_io_threads)
        self._started = False
        self._stopped = False

    def _partition_count(self, topic: str) -> int | None:
        metadata = self.metadata_cache.topic(topic)
        return None if metadata is None else metadata.num_partitions

    def startup(self) -> None:
        self.quotas.startup()
        self.replica_manager.fetch_purgatory.start()
        self.group_coordinator.start()
        self.handler_pool.start()
        try:
            self.socket_server.startup()
        except Exception:
            self.handler_pool.shutdown()
            self._stop_purgatories()
            self.quotas.shutdown()
            raise
        self.metadata_cache.set_advertised_endpoints(self.advertised_endpoints())
        self._started = True

    def advertised_endpoints(self) -> list[EndPoint]:
        """advertised.listeners, else the bound listeners; "" or a wildcard host
        becomes this machine's name, as Kafka does."""
        bound = {e.listener_name: e for e in self.socket_server.bound_endpoints()}
        chosen = []
        for e in self.config.advertised_listeners or bound.values():
            host = e.host
            if host in ("", "0.0.0.0", "::"):
                host = socket.getfqdn()
            port = e.port or bound[e.listener_name].port
            chosen.append(EndPoint(e.listener_name, host, port))
        return chosen

    def bound_port(self, listener_name: str = "PLAINTEXT") -> int:
        return self.socket_server.bound_port(listener_name)

    def shutdown(self, graceful: bool = True, cancelled=lambda: False) -> bool:
        """Stop everything; returns False if a graceful stop left requests unanswered.

        ``cancelled()`` may end the graceful wait early (a second signal).
        """
        if self._stopped:
            return True
        self._stopped = True
        drained = True
        if graceful and self._started:
            drained = self.socket_server.drain(self.config.shutdown_timeout_ms / 1000,
                                               cancelled, self._complete_parked)
        self.socket_server.stop_processing_requests()
        self.handler_pool.shutdown()
        self._stop_purgatories()
        self.quotas.shutdown()   # after the handlers: no new throttle can start
        return drained

    def _complete_parked(self) -> None:
        self.replica_manager.fetch_purgatory.complete_all()
        self.group_coordinator.complete_parked()

    def _stop_purgatories(self) -> None:
        self.replica_manager.fetch_purgatory.shutdown()
        self.group_coordinator.shutdown()

    def __enter__(self) -> "KafkaServer":
        self.startup()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

