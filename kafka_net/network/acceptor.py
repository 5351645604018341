"""Acceptor: one thread per listener that accepts connections and deals them out.

Kafka's ``SocketServer.Acceptor``:

* its own ``selectors.DefaultSelector`` with the listening socket registered
  for accept events, woken by a socketpair for shutdown (no polling flag);
* each accepted socket is made non-blocking and gets TCP_NODELAY,
  SO_KEEPALIVE and SO_SNDBUF/SO_RCVBUF (``socket.send.buffer.bytes`` /
  ``socket.receive.buffer.bytes``; -1 keeps the OS default);
* round robin over the listener's Processors: a non-blocking offer to each
  Processor's bounded queue in turn, and a blocking put only on the last try,
  so the Acceptor waits only when every Processor is saturated (the time it
  waits is ``AcceptorBlockedPercent``);
* an accept error never ends the thread.  Running out of file descriptors
  (EMFILE/ENFILE) would make ``select`` report the listening socket ready
  again at once, so the Acceptor stops accepting for a short pause instead
  of spinning, as asyncio's accept loop does.
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import threading
import time

from kafka_net.config import EndPoint
from kafka_net.log_safety import RateLimitedLog
from kafka_net.network.wakeup import WakeupSocketpair

log = logging.getLogger(__name__)
_accept_error_log = RateLimitedLog(log)   # a failing accept repeats per connect: no flood

SELECT_TIMEOUT_S = 0.5          # Kafka's acceptor select(500)
FD_EXHAUSTED_PAUSE_S = 0.1
_FD_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def configure_accepted_socket(sock: socket.socket, config) -> None:
    """The options every accepted socket gets: non-blocking, TCP_NODELAY, SO_KEEPALIVE,
    and SO_SNDBUF/SO_RCVBUF from ``socket.send.buffer.bytes`` /
    ``socket.receive.buffer.bytes`` (-1 keeps the OS default).  Raises OSError."""
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if config.socket_send_buffer_bytes != -1:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, config.socket_send_buffer_bytes)
    if config.socket_receive_buffer_bytes != -1:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, config.socket_receive_buffer_bytes)


class Acceptor(threading.Thread):
    def __init__(self, endpoint: EndPoint, config, processors: list) -> None:
        super().__init__(daemon=False)
        self.endpoint = endpoint
        self.config = config
        self.processors = processors
        self.server_socket = self._open_server_socket()
        self.port = self.server_socket.getsockname()[1]
        self.name = (f"data-plane-kafka-socket-acceptor-{endpoint.listener_name}-"
                     f"PLAINTEXT-{self.port}")
        self._wakeup = WakeupSocketpair()
        self._sel = selectors.DefaultSelector()
        self._running = True
        self._current = 0
        self.blocked_ns = 0           # AcceptorBlockedPercent's numerator
        self.accepted = 0
        self._started_ns = time.monotonic_ns()

    def _open_server_socket(self) -> socket.socket:
        host = self.endpoint.host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.config.socket_receive_buffer_bytes != -1:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                                self.config.socket_receive_buffer_bytes)
            sock.bind((host, self.endpoint.port))
            sock.listen(self.config.socket_listen_backlog_size)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise OSError(exc.errno, f"Socket server failed to bind to "
                                     f"{host or '0.0.0.0'}:{self.endpoint.port}: "
                                     f"{exc.strerror}") from None
        return sock

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        self._sel.register(self.server_socket, selectors.EVENT_READ, "accept")
        self._sel.register(self._wakeup.fileno(), selectors.EVENT_READ, "wakeup")
        try:
            while self._running:
                try:
                    self._accept_new_connections()
                except Exception:
                    log.exception("%s: error in the accept loop", self.name)
        finally:
            self._close_all()

    def _accept_new_connections(self) -> None:
        for key, _ in self._sel.select(SELECT_TIMEOUT_S):
            if key.data == "wakeup":
                self._wakeup.drain()
                continue
            sock = self._accept()
            if sock is not None:
                self._assign_new_connection(sock)

    def _accept(self) -> socket.socket | None:
        try:
            sock, _ = self.server_socket.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return None  # another wakeup raced us, or the peer gave up already
        except OSError as exc:
            if exc.errno in _FD_ERRNOS:
                _accept_error_log.log(
                    logging.ERROR, "no fds",
                    "%s: out of file descriptors accepting a connection (%s); "
                    "pausing accepts for %.0f ms", self.name, exc, FD_EXHAUSTED_PAUSE_S * 1000)
                time.sleep(FD_EXHAUSTED_PAUSE_S)
            else:
                _accept_error_log.log(logging.ERROR, "accept",
                                      "%s: error accepting a connection: %s", self.name, exc)
            return None
        try:
            self._configure_accepted_socket(sock)
        except OSError as exc:
            # Typically the peer already reset it: its own doing, so DEBUG only.
            log.debug("%s: error configuring an accepted socket: %s", self.name, exc)
            sock.close()
            return None
        self.accepted += 1
        return sock

    def _configure_accepted_socket(self, sock: socket.socket) -> None:
        configure_accepted_socket(sock, self.config)

    def _assign_new_connection(self, sock: socket.socket) -> None:
        retries_left = len(self.processors)
        while self._running:
            processor = self.processors[self._current % len(self.processors)]
            self._current = (self._current + 1) % len(self.processors)
            retries_left -= 1
            # Non-blocking offers first; from the last try on, blocking ones.  A
            # blocking offer gives up after a short slice (Processor.accept), so we
            # go round again, and notice a shutdown instead of waiting forever.
            may_block = retries_left <= 0
            start = time.monotonic_ns() if may_block else 0
            accepted = processor.accept(sock, may_block=may_block)
            if may_block:
                self.blocked_ns += time.monotonic_ns() - start
            if accepted:
                return
        sock.close()  # shutting down

    def blocked_fraction(self) -> float:
        """AcceptorBlockedPercent: share of time blocked handing sockets over (0..1)."""
        elapsed = time.monotonic_ns() - self._started_ns
        return min(1.0, self.blocked_ns / elapsed) if elapsed > 0 else 0.0

    # -- lifecycle --------------------------------------------------------------------

    def begin_shutdown(self) -> None:
        self._running = False
        self._wakeup.wakeup()

    def _close_all(self) -> None:
        self._sel.close()
        self.server_socket.close()
        self._wakeup.close()

    def close_unstarted(self) -> None:
        """Release the sockets of an Acceptor whose thread never ran."""
        self._close_all()
