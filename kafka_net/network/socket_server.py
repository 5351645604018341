"""SocketServer: builds, starts and stops the Acceptors and Processors of every listener.

Start order (Kafka's ``enableRequestProcessing``): for each listener the
server socket is bound first (so port 0 is resolved and a bind error is
reported before any thread starts), then the listener's Processors start,
then its Acceptor, so no socket is ever accepted with nobody to take it.

Stop has two modes:

* :meth:`stop_processing_requests` is Kafka's: wake and stop the Acceptors,
  then the Processors, join the threads, close every connection.
* :meth:`drain` runs first for a graceful stop: Acceptors stop (the ports
  close, new clients are refused), Processors stop reading new requests but
  keep writing responses, and we wait until every request already received
  has been answered or ``shutdown.timeout.ms`` runs out.  Kafka gets the same
  effect from controlled shutdown, which moves leadership to other brokers
  before the sockets close; a single node has nowhere to move it, so it
  answers what it has instead.
"""

from __future__ import annotations

import logging
import time

from kafka_net.config import EndPoint, ServerConfig
from kafka_net.config.sasl import SASL_PROTOCOLS
from kafka_net.network.acceptor import Acceptor
from kafka_net.network.channel_builder import AuthenticationHooks, ChannelBuilder, SaslSettings
from kafka_net.network.connection_quotas import ConnectionQuotas
from kafka_net.network.memory_pool import memory_pool_for
from kafka_net.network.processor import Processor
from kafka_net.network.request_channel import RequestChannel

log = logging.getLogger(__name__)


class SocketServer:
    def __init__(self, config: ServerConfig, request_channel: RequestChannel,
                 parse_request, clock_ms=None,
                 auth_hooks: AuthenticationHooks | None = None,
                 connection_disconnect_listeners=()) -> None:
        """``connection_disconnect_listeners``: ConnectionDisconnectListeners every
        Processor tells of each connection it closes (Kafka's SocketServer argument)."""
        self.config = config
        self.connection_disconnect_listeners = tuple(connection_disconnect_listeners)
        # What SASL listeners' authenticators need of the API layer (see channel_builder).
        self.auth_hooks = auth_hooks
        # One for the whole broker, shared by every listener's Acceptor and
        # Processors.  ``clock_ms`` (integer ms) lets tests drive its rates.
        self.connection_quotas = (ConnectionQuotas(config) if clock_ms is None
                                  else ConnectionQuotas(config, clock_ms))
        self.request_channel = request_channel
        self._parse_request = parse_request
        # One pool for every listener and Processor (queued.max.request.bytes).
        self.memory_pool = memory_pool_for(config.queued_max_request_bytes,
                                           config.socket_request_max_bytes)
        self.acceptors: list[Acceptor] = []
        self.processors: list[Processor] = []
        self._next_processor_id = 0   # global across listeners, as in Kafka
        self._run_id = time.time_ns()  # names this run's capture files
        self._started = False
        self._stopped = False

    def startup(self) -> None:
        try:
            for endpoint in self.config.listeners:
                self._create_acceptor_and_processors(endpoint)
        except Exception:
            self._close_unstarted()
            raise
        for acceptor in self.acceptors:
            for processor in acceptor.processors:
                processor.start()
            acceptor.start()
        self._started = True

    def _create_acceptor_and_processors(self, endpoint: EndPoint) -> None:
        channel_builder = self._channel_builder(endpoint)
        self.connection_quotas.add_listener(endpoint.listener_name)
        processors = []
        for _ in range(self.config.num_network_threads):
            processor = Processor(self._next_processor_id, endpoint.listener_name,
                                  self.request_channel, self._parse_request, self.config,
                                  node_id=self.config.node_id, memory_pool=self.memory_pool,
                                  connection_quotas=self.connection_quotas,
                                  channel_builder=channel_builder,
                                  connection_disconnect_listeners=(
                                      self.connection_disconnect_listeners))
            self._next_processor_id += 1
            if self.config.capture_dir:
                # Imported only when capturing: kept out of every other broker's start-up.
                from kafka_net.capture.writer import CaptureWriter
                processor.capture = CaptureWriter(
                    self.config.capture_dir, processor.id, self.config.capture_segment_bytes,
                    self.config.capture_max_frame_bytes, run_id=self._run_id)
            self.request_channel.add_processor(processor)
            processors.append(processor)
        self.processors.extend(processors)
        self.acceptors.append(Acceptor(endpoint, self.config, processors,
                                       self.connection_quotas))

    def _channel_builder(self, endpoint: EndPoint) -> ChannelBuilder:
        """Kafka's ChannelBuilders.serverChannelBuilder for one listener: an SSL or
        SASL_SSL listener's SslFactory is built here, once, so a bad key or trust
        store stops the startup; a SASL listener's settings are read once too."""
        protocol = endpoint.security_protocol
        ssl_factory = sasl = None
        if protocol in ("SSL", "SASL_SSL"):
            # Imported only for a TLS listener: its tempfile (and shutil, zlib, bz2,
            # lzma) would otherwise be loaded by every broker's start-up.
            from kafka_net.network.ssl_factory import SslFactory
            ssl_factory = SslFactory(self.config.ssl_config(endpoint.listener_name))
        if protocol in SASL_PROTOCOLS:
            if self.auth_hooks is None:
                raise ValueError(f"listener {endpoint.listener_name}: SASL needs the API "
                                 "layer's authentication hooks")
            sasl = SaslSettings.of(self.config, endpoint.listener_name, self.auth_hooks)
        return ChannelBuilder(protocol, ssl_factory, sasl=sasl)

    def bound_endpoints(self) -> list[EndPoint]:
        """The listeners with port 0 replaced by the port actually bound."""
        return [EndPoint(a.endpoint.listener_name, a.endpoint.host, a.port,
                         a.endpoint.security_protocol) for a in self.acceptors]

    def bound_port(self, listener_name: str = "PLAINTEXT") -> int:
        for acceptor in self.acceptors:
            if acceptor.endpoint.listener_name == listener_name:
                return acceptor.port
        raise KeyError(listener_name)

    # -- stopping ----------------------------------------------------------------------

    def drain(self, timeout_s: float, cancelled=lambda: False,
              after_stop_reading=lambda: None) -> bool:
        """Graceful stop, phase 1.  True if every received request was answered.

        ``cancelled()`` is checked while waiting; the daemon uses it to cut the
        wait short on a second signal.  ``after_stop_reading()`` runs once no new
        request can arrive.
        """
        for acceptor in self.acceptors:
            acceptor.begin_shutdown()
        for acceptor in self.acceptors:
            acceptor.join()
        for processor in self.processors:
            processor.stop_reading()
        # Requests parked in a purgatory (long polls, joins) are answered now
        # rather than at their own deadline, which may be minutes away.
        after_stop_reading()
        start = time.monotonic()
        while True:
            # Pending first: a second signal after everything was answered is
            # still a clean stop.
            pending = sum(p.outstanding() for p in self.processors)
            if pending == 0:
                return True
            waited = time.monotonic() - start
            if cancelled() or waited >= timeout_s:
                log.warning("graceful stop: %d request(s) still unanswered after %.1f s%s",
                            pending, waited, " (cut short)" if cancelled() else "")
                return False
            time.sleep(0.01)

    def stop_processing_requests(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        for acceptor in self.acceptors:
            acceptor.begin_shutdown()
        # Acceptors are joined before any Processor stops: a socket an Acceptor
        # hands over after its Processor's final cleanup would never be closed.
        for acceptor in self.acceptors:
            if acceptor.is_alive():
                acceptor.join()
        for processor in self.processors:
            processor.begin_shutdown()
        for processor in self.processors:
            if processor.is_alive():
                processor.join()
            self.request_channel.remove_processor(processor.id)
        if not self._started:
            self._close_unstarted()
        self.request_channel.clear()

    def _close_unstarted(self) -> None:
        for acceptor in self.acceptors:
            if not acceptor.is_alive():
                acceptor.close_unstarted()
        for processor in self.processors:
            if not processor.is_alive():
                processor._close_all()
