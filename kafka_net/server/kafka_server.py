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

The API layer (RequestChannel, KafkaApis and the parts behind it) is a
:class:`~kafka_net.server.broker.BrokerCore`; KafkaServer adds the SocketServer
and the handler pool.

Startup: the metrics listener if ``metrics.listener`` is set (its /health
says 503 until the rest is up), the core's reaper and purgatories, then the
handlers (so nothing queued waits for a thread), then the SocketServer
(Processors, then Acceptors).  Shutdown, graceful: drain the SocketServer
(stop accepting and reading, answer what was received), then Kafka's order:
stop the SocketServer, then the handler pool, then the core; the metrics
listener last.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING

from kafka_net.config import EndPoint, ServerConfig
from kafka_net.server.broker import BrokerCore, MetadataLogFactory
from kafka_net.server.handler_pool import KafkaRequestHandlerPool

if TYPE_CHECKING:
    from kafka_net.server.metrics_http import MetricsHttpServer

log = logging.getLogger(__name__)


class KafkaServer:
    def __init__(self, config: ServerConfig,
                 metadata_log_factory: MetadataLogFactory | None = None) -> None:
        self.config = config
        # The API layer (server/broker.py); its parts stay reachable here, as
        # the daemon, the embedded Broker and the tests read them.
        self.core = BrokerCore(config, metadata_log_factory=metadata_log_factory)
        self.request_channel = self.core.request_channel
        self.metadata_cache = self.core.metadata_cache
        self.replica_manager = self.core.replica_manager
        self.group_coordinator = self.core.group_coordinator
        self.transaction_coordinator = self.core.transaction_coordinator
        self.quotas = self.core.quotas
        self.log_manager = self.core.log_manager
        self.apis = self.core.apis
        self.socket_server = self.core.new_socket_server()
        self.handler_pool = KafkaRequestHandlerPool(
            self.request_channel, self.apis, config.num_io_threads)
        self.metrics_http: MetricsHttpServer | None = None   # metrics.listener
        self._started = False
        self._stopped = False

    def startup(self) -> None:
        if self.config.metrics_listener:
            # Imported only here: prometheus_client and http.server would be about a
            # fifth of the start-up time of a broker without a metrics listener.
            from kafka_net.server.metrics_http import MetricsHttpServer
            # First, so that /health says 503 while the rest starts.
            self.metrics_http = MetricsHttpServer(self, self.config.metrics_listener)
            self.metrics_http.start()
        try:
            self.core.startup()
            self.handler_pool.start()
            try:
                self.socket_server.startup()
            except Exception:
                self.handler_pool.shutdown()
                self.core.shutdown()
                raise
        except Exception:
            self._stop_metrics_http()
            raise
        self.metadata_cache.set_advertised_endpoints(self.advertised_endpoints())
        self._started = True

    def is_serving(self) -> bool:
        """Started, not stopping, and every listener's Acceptor running (/health)."""
        return (self._started and not self._stopped
                and all(a.is_alive() for a in self.socket_server.acceptors))

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
                                               cancelled, self.core.complete_parked)
        self.socket_server.stop_processing_requests()
        self.handler_pool.shutdown()
        self.core.shutdown()   # after the handlers: no new throttle can start
        self._stop_metrics_http()
        return drained

    def _stop_metrics_http(self) -> None:
        if self.metrics_http is not None:
            self.metrics_http.stop()

    def __enter__(self) -> "KafkaServer":
        self.startup()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

