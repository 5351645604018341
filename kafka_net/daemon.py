"""The ``kafka-net serve`` daemon: start the broker, wait for a signal, stop it.

Signals (see docs/signals.md):

=========  =================================================================
SIGTERM    graceful stop: close the ports, answer requests already received
           (up to ``shutdown.timeout.ms``), then stop every thread
SIGINT     the same (Ctrl-C); a second SIGINT or SIGTERM stops at once
SIGUSR1    log every metric (Kafka's MBean names) at INFO; keeps running,
           and also works during a graceful stop
=========  =================================================================

How a signal reaches the main thread.  Python runs a signal's handler
between bytecodes of the main thread, and only there: the C-level handler,
on whichever thread the kernel picked, just flags the signal.  A main thread
blocked in a lock (a queue's ``get()``) is not woken by that flag when the
signal went to another thread, or landed on the main thread an instant
before it blocked (cpython#85300; once in a loaded CI run a SIGTERM right
after startup went unanswered for 30 s).  So the main thread waits on a
self-pipe instead: ``signal.set_wakeup_fd`` has the C-level handler write
each signal's number into it, whatever thread it runs on, and the main
thread reads the numbers and does the work.  The Python-level handler does
nothing; it is installed because a signal needs one for its number to be
written.  Other threads post their events the same way (the failure of the
last log dir).

The handlers are installed before the broker starts, so a signal that
arrives during startup is acted on once startup is done, instead of killing
the process halfway (or, for SIGINT, raising KeyboardInterrupt with the
non-daemon network threads already running, which would keep the process
alive).
"""

from __future__ import annotations

import collections
import logging
import os
import select
import signal
import threading
import time

from kafka_net.config import ConfigError, ServerConfig
from kafka_net.collector import resume_collector
from kafka_net.metrics import server_snapshot
from kafka_net.server.kafka_server import KafkaServer
from kafka_net.server.storage.checkpoint import StorageError

log = logging.getLogger("kafka_net.daemon")
# What an operator must see whatever --log-level says: the started line (with
# the ports, which a user of port 0 has no other way to learn), the SIGUSR1
# metric dump and the stopped line.  A logger's own level decides whether it
# emits; the root handlers then print it even when the root level is higher.
status_log = logging.getLogger("kafka_net.status")
status_log.setLevel(logging.INFO)

# Exit codes of `kafka-net serve`.
EXIT_OK = 0               # stopped by a signal, every received request answered
EXIT_CONFIG_ERROR = 2     # bad command line or configuration; nothing started
EXIT_STARTUP_FAILED = 3   # e.g. a listener port could not be bound
EXIT_UNCLEAN_STOP = 4     # a graceful stop timed out (or was cut short) with requests unanswered
EXIT_LOG_DIRS_FAILED = 5  # every log dir failed (a full or failing disk): stopped, as Kafka does

_LOG_DIRS_FAILED = 0      # posted by the LogManager's failure handler (no signal is 0)

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)
_EVENTS = frozenset((_LOG_DIRS_FAILED, *HANDLED_SIGNALS))


class Daemon:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.server = KafkaServer(config)
        # The self-pipe (see the module docstring); non-blocking at both ends, as
        # set_wakeup_fd requires of its end, and so that a read never blocks.
        # poll, not select: a broker's descriptors (segments, sockets) may pass
        # select's limit of 1024 before the pipe is made.
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        self._wake_poll = select.poll()
        self._wake_poll.register(self._wake_r, select.POLLIN)
        self._wake_lock = threading.Lock()   # _post against the pipe's closing
        self._events: collections.deque[int] = collections.deque()
        self._stop_now = False
        # Kafka's ReplicaManager halts the broker when no log dir is left online;
        # here the main thread stops it the graceful way (any thread may call this).
        self.server.log_manager.on_all_log_dirs_failed = \
            lambda directory: self._post(_LOG_DIRS_FAILED)

    def _post(self, event: int) -> None:
        """Wake the main thread with ``event`` (any thread, never a signal handler)."""
        with self._wake_lock:
            if self._wake_w < 0:
                return      # run() has ended
            try:
                os.write(self._wake_w, bytes([event]))
            except BlockingIOError:
                pass        # the pipe is full of events the main thread has yet to read

    def _on_signal(self, signum, frame) -> None:
        """Nothing: the signal's number is already in the self-pipe."""

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in HANDLED_SIGNALS}
        previous_fd = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        try:
            return self._run()
        finally:
            signal.set_wakeup_fd(previous_fd)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            with self._wake_lock:
                os.close(self._wake_r)
                os.close(self._wake_w)
                self._wake_w = -1

    def _next_event(self, block: bool = True) -> int | None:
        """The next signal number or event from the self-pipe, waiting for one if
        ``block``; None when none is there and not ``block``."""
        while not self._events:
            if not self._wake_poll.poll(None if block else 0):
                return None
            try:
                data = os.read(self._wake_r, 512)
            except BlockingIOError:
                continue
            # Other signals this process handles in Python are written too.
            self._events.extend(b for b in data if b in _EVENTS)
        return self._events.popleft()

    def _run(self) -> int:
        started = time.monotonic()
        try:
            self.server.startup()
        except ConfigError as exc:
            # Found only at startup: an SSL listener's key or trust store (SslFactory).
            log.error("Startup failed: configuration error: %s", exc)
            return EXIT_CONFIG_ERROR
        except (OSError, StorageError) as exc:
            log.error("Startup failed: %s", exc)
            return EXIT_STARTUP_FAILED
        try:
            self._log_ready(time.monotonic() - started)
            resume_collector()   # listening: the start's objects frozen, the GC back on
            while (signum := self._next_event()) == signal.SIGUSR1:
                self._log_metrics()
            if signum == _LOG_DIRS_FAILED:
                log.error("Stopping: every log dir has failed (see the errors above); start "
                          "the broker again once the disk is fixed")
                self._stop()
                return EXIT_LOG_DIRS_FAILED
            log.info("Received %s: stopping gracefully (a second signal stops at once)",
                     signal.Signals(signum).name)
            return self._stop()
        except BaseException:
            # Never leave the non-daemon network threads running behind an error.
            self.server.shutdown(graceful=False)
            raise

    def _stop(self) -> int:
        drained = self.server.shutdown(graceful=True, cancelled=self._stop_requested)
        if not drained and self._stop_now:
            log.warning("Received a second signal: stopped without waiting")
        status_log.info("kafka-net stopped%s", "" if drained else " (some requests unanswered)")
        return EXIT_OK if drained else EXIT_UNCLEAN_STOP

    def _stop_requested(self) -> bool:
        """Polled on the main thread during the graceful wait: a second SIGTERM or
        SIGINT ends the wait; SIGUSR1 still dumps the metrics."""
        while not self._stop_now and (signum := self._next_event(block=False)) is not None:
            if signum == signal.SIGUSR1:
                self._log_metrics()
            elif signum != _LOG_DIRS_FAILED:
                self._stop_now = True
        return self._stop_now

    def _log_metrics(self) -> None:
        for name, value in server_snapshot(self.server).items():
            status_log.info("metric %s = %s", name, value)

    def _log_ready(self, elapsed_s: float) -> None:
        for key in self.config.ignored:
            log.warning("Ignoring Kafka setting %s: it has no meaning in kafka-net", key)
        if self.config.controller_listener_names:
            log.info("Not opening controller listener(s) %s: kafka-net has no controller",
                     ", ".join(self.config.controller_listener_names))
        if self.config.as_version:
            log.info("Playing Kafka %s (as.version): only the API versions and features "
                     "that release served are advertised and accepted",
                     self.config.as_version)
        listeners = ", ".join(str(e) for e in self.server.socket_server.bound_endpoints())
        metrics = self.server.metrics_http
        dirs = self.server.log_manager.dirs.log_dirs
        store = (f"logs in {', '.join(os.path.abspath(d) for d in dirs)}" if dirs
                 else "logs in memory (log.store=memory: nothing survives a restart)")
        status_log.info("kafka-net started in %.0f ms: node.id=%d, listening on %s "
                        "(num.network.threads=%d, num.io.threads=%d), %s%s",
                        elapsed_s * 1000, self.config.node_id, listeners,
                        self.config.num_network_threads, self.config.num_io_threads, store,
                        f", metrics on {metrics.url}/metrics" if metrics else "")
