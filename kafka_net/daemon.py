"""The ``kafka-net serve`` daemon: start the broker, wait for a signal, stop it.

Signals (see docs/signals.md):

=========  =================================================================
SIGTERM    graceful stop: close the ports, answer requests already received
           (up to ``shutdown.timeout.ms``), then stop every thread
SIGINT     the same (Ctrl-C); a second SIGINT or SIGTERM stops at once
SIGUSR1    log every metric (Kafka's MBean names) at INFO; keeps running
=========  =================================================================

Signal handlers run between bytecodes of the main thread and may interrupt
anything, including logging or a lock holder.  So a handler here only puts
the signal number on a ``queue.SimpleQueue`` (reentrant-safe, unlike
``queue.Queue``); the main thread takes it off and does the work.
"""

from __future__ import annotations

import logging
import queue
import signal
import time

from kafka_net.config import ServerConfig
from kafka_net.metrics import server_snapshot
from kafka_net.server.kafka_server import KafkaServer

log = logging.getLogger("kafka_net.daemon")

# Exit codes of `kafka-net serve`.
EXIT_OK = 0               # stopped by a signal, every received request answered
EXIT_CONFIG_ERROR = 2     # bad command line or configuration; nothing started
EXIT_STARTUP_FAILED = 3   # e.g. a listener port could not be bound
EXIT_UNCLEAN_STOP = 4     # a graceful stop timed out with requests unanswered


class Daemon:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.server = KafkaServer(config)
        self._signals: queue.SimpleQueue[int] = queue.SimpleQueue()

    def _on_signal(self, signum, frame) -> None:
        self._signals.put(signum)  # nothing else: see the module docstring

    def run(self) -> int:
        started = time.monotonic()
        try:
            self.server.startup()
        except OSError as exc:
            log.error("Startup failed: %s", exc)
            return EXIT_STARTUP_FAILED
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)}
        try:
            self._log_ready(time.monotonic() - started)
            while (signum := self._signals.get()) == signal.SIGUSR1:
                self._log_metrics()
            log.info("Received %s: stopping gracefully (a second signal stops at once)",
                     signal.Signals(signum).name)
            return self._stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _stop(self) -> int:
        # A second signal during the graceful wait makes it stop at once.
        drained = self.server.shutdown(graceful=True,
                                       cancelled=lambda: not self._signals.empty())
        if not self._signals.empty():
            log.warning("Received a second signal: stopped without waiting")
        log.info("kafka-net stopped%s", "" if drained else " (some requests unanswered)")
        return EXIT_OK if drained else EXIT_UNCLEAN_STOP

    def _log_metrics(self) -> None:
        for name, value in server_snapshot(self.server).items():
            log.info("metric %s = %s", name, value)

    def _log_ready(self, elapsed_s: float) -> None:
        for key in self.config.ignored:
            log.warning("Ignoring Kafka setting %s: it has no meaning in kafka-net", key)
        listeners = ", ".join(str(e) for e in self.server.socket_server.bound_endpoints())
        log.info("kafka-net started in %.0f ms: node.id=%d, listening on %s "
                 "(num.network.threads=%d, num.io.threads=%d)",
                 elapsed_s * 1000, self.config.node_id, listeners,
                 self.config.num_network_threads, self.config.num_io_threads)
