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
* connection quotas (:mod:`.connection_quotas`): each accepted socket is
  counted before it is handed on.  The count may make the Acceptor wait (the
  broker or listener limit or rate; that time is ``AcceptorBlockedPercent``
  too), close the socket at once (the per-IP limit, logged as Kafka logs it,
  rate-limited), or hold it for a delayed close (the per-IP rate: Kafka's
  ``DelayedCloseSocket``, closed by :meth:`_close_throttled_connections` each
  turn once due, and all of them at shutdown);
* an accept error never ends the thread.  Running out of file descriptors
  (EMFILE/ENFILE) would make ``select`` report the listening socket ready
  again at once, so the Acceptor stops accepting for a short pause instead
  of spinning, as asyncio's accept loop does.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import logging
import selectors
import socket
import threading
import time

from dataclasses import dataclass, field

from kafka_net.config import EndPoint
from kafka_net.log_safety import RateLimitedLog
from kafka_net.network.connection_quotas import (
    ConnectionThrottledError, TooManyConnectionsError, WaitInterrupted, normalize_ip)
from kafka_net.network.thread_name import set_os_thread_name
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


@dataclass(order=True)
class DelayedCloseSocket:
    """An IP-throttled socket, closed once ``end_throttle_time_ms`` has passed."""

    end_throttle_time_ms: int
    seq: int                                   # ties keep arrival order
    socket: socket.socket = field(compare=False)
    ip: str = field(compare=False)



def close_quietly(sock: socket.socket) -> None:
    """Close a socket the broker gives up on; an error closing it changes nothing."""
    try:
        sock.close()
    except OSError:
        pass

class Acceptor(threading.Thread):
    def __init__(self, endpoint: EndPoint, config, processors: list,
                 connection_quotas=None) -> None:
        super().__init__(daemon=False)
        self.endpoint = endpoint
        self.config = config
        self.processors = processors
        self.connection_quotas = connection_quotas   # None: no quotas (tests of the loop alone)
        self.throttled_sockets: list[DelayedCloseSocket] = []   # a heap
        self._throttled_seq = itertools.count()
        self._rejected_log = RateLimitedLog(log)   # a connect loop: one line per IP per 10 s
        self.server_socket = self._open_server_socket()
        self.port = self.server_socket.getsockname()[1]
        self.name = (f"data-plane-kafka-socket-acceptor-ListenerName({endpoint.listener_name})-"
                     f"PLAINTEXT-{self.port}")
        self._wakeup = WakeupSocketpair()
        self._sel = selectors.DefaultSelector()
        self._running = True
        # Listening, and what another thread asked for (set_listening: the fault
        # layer's broker unavailable); applied on this thread between selects.
        self._listening = self._want_listening = True
        self._current = 0
        self.blocked_ns = 0           # AcceptorBlockedPercent's numerator
        self.accepted = 0
        self._started_ns = time.monotonic_ns()

    def _open_server_socket(self, port: int | None = None) -> socket.socket:
        host = self.endpoint.host
        port = self.endpoint.port if port is None else port
        # An empty host is Kafka's wildcard: every interface, IPv6 as well as IPv4
        # (Java's sockets are dual-stack).  "::" with IPV6_V6ONLY off does the same;
        # IPv4 clients then arrive as ::ffff:a.b.c.d, which normalize_ip and the
        # channel's peer turn back into a.b.c.d, as Java's InetAddress does.
        dual_stack = not host and socket.has_dualstack_ipv6()
        if dual_stack:
            family, host = socket.AF_INET6, "::"
        else:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if dual_stack:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.config.socket_receive_buffer_bytes != -1:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                                self.config.socket_receive_buffer_bytes)
            sock.bind((host, port))
            sock.listen(self.config.socket_listen_backlog_size)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            shown = f"[{host}]" if ":" in host else host or "0.0.0.0"
            raise OSError(exc.errno, f"Socket server failed to bind to "
                                     f"{shown}:{port}: "
                                     f"{exc.strerror}") from None
        return sock

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        set_os_thread_name(f"kn-accept-{self.port}")
        self._sel.register(self.server_socket, selectors.EVENT_READ, "accept")
        self._sel.register(self._wakeup.fileno(), selectors.EVENT_READ, "wakeup")
        try:
            while self._running:
                try:
                    if self._want_listening is not self._listening:
                        self._apply_listening()
                    self._accept_new_connections()
                    self._close_throttled_connections()
                except Exception:
                    log.exception("%s: error in the accept loop", self.name)
        finally:
            self._close_all()

    def set_listening(self, listening: bool) -> None:
        """Stop listening (a connect is then refused) or listen again on the same
        port; from any thread.  Accepted connections are not touched."""
        self._want_listening = listening
        self._wakeup.wakeup()

    def _apply_listening(self) -> None:
        if not self._want_listening:
            self._sel.unregister(self.server_socket)
            self.server_socket.close()
            self._listening = False
            return
        try:
            self.server_socket = self._open_server_socket(self.port)   # the port it had
        except OSError as exc:   # the port taken meanwhile: try again next turn
            log.error("%s: cannot listen again: %s", self.name, exc)
            return
        self._sel.register(self.server_socket, selectors.EVENT_READ, "accept")
        self._listening = True

    def _accept_new_connections(self) -> None:
        for key, _ in self._sel.select(self._select_timeout()):
            if key.data == "wakeup":
                self._wakeup.drain()
                continue
            accepted = self._accept()
            if accepted is not None:
                self._assign_new_connection(*accepted)

    def _select_timeout(self) -> float:
        # Wake for the next throttled socket that falls due, not 500 ms later.
        if not self.throttled_sockets:
            return SELECT_TIMEOUT_S
        due_ms = self.throttled_sockets[0].end_throttle_time_ms - self.connection_quotas.clock_ms()
        return min(SELECT_TIMEOUT_S, max(due_ms + 1, 0) / 1000)

    def _accept(self) -> tuple[socket.socket, str | None] | None:
        try:
            sock, address = self.server_socket.accept()
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
        # The address ConnectionQuotas counts the socket under; None: not counted.
        ip = _ip_of(address) if self.connection_quotas is not None else None
        if not self._count_connection(sock, ip):
            return None
        try:
            self._configure_accepted_socket(sock)
        except OSError as exc:
            # Typically the peer already reset it: its own doing, so DEBUG only.
            log.debug("%s: error configuring an accepted socket: %s", self.name, exc)
            self._close_counted(sock, ip)
            return None
        self.accepted += 1
        return sock, ip

    def _count_connection(self, sock: socket.socket, ip: str | None) -> bool:
        """ConnectionQuotas.inc; False if the socket was closed or held instead."""
        if ip is None:
            return True
        try:
            self.connection_quotas.inc(self.endpoint.listener_name, ip, self._add_blocked_ns,
                                       lambda: self._running)
        except TooManyConnectionsError as e:
            self._rejected_log.log(
                logging.INFO, ("rejected", e.ip), "Rejected connection from %s, address "
                "already has the configured maximum of %d connections.", e.ip, e.count)
            self._close_counted(sock, ip)
            return False
        except ConnectionThrottledError as e:
            log.debug("Delaying closing of connection from %s for %d ms", ip, e.throttle_time_ms)
            end_ms = e.start_throttle_time_ms + e.throttle_time_ms
            heapq.heappush(self.throttled_sockets,
                           DelayedCloseSocket(end_ms, next(self._throttled_seq), sock, ip))
            return False
        except WaitInterrupted:
            sock.close()   # shutting down while waiting for a slot; never counted
            return False
        except Exception:
            sock.close()   # a bug, not the client's doing; the loop logs it
            raise
        return True

    def _add_blocked_ns(self, ns: int) -> None:
        self.blocked_ns += ns

    def _close_counted(self, sock: socket.socket, ip: str | None) -> None:
        """Close a socket ConnectionQuotas counted (Kafka's closeChannel)."""
        sock.close()
        if ip is not None:
            self.connection_quotas.dec(self.endpoint.listener_name, ip)

    def _close_throttled_connections(self) -> None:
        if not self.throttled_sockets:
            return
        now_ms = self.connection_quotas.clock_ms()
        while self.throttled_sockets and self.throttled_sockets[0].end_throttle_time_ms < now_ms:
            closing = heapq.heappop(self.throttled_sockets)
            log.debug("%s: closing socket from ip %s", self.name, closing.ip)
            close_quietly(closing.socket)

    def _configure_accepted_socket(self, sock: socket.socket) -> None:
        configure_accepted_socket(sock, self.config)

    def _assign_new_connection(self, sock: socket.socket, ip: str | None) -> None:
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
            accepted = processor.accept(sock, may_block=may_block, ip=ip)
            if may_block:
                self.blocked_ns += time.monotonic_ns() - start
            if accepted:
                return
        self._close_counted(sock, ip)  # shutting down

    def blocked_fraction(self) -> float:
        """AcceptorBlockedPercent: share of time blocked handing sockets over (0..1)."""
        elapsed = time.monotonic_ns() - self._started_ns
        return min(1.0, self.blocked_ns / elapsed) if elapsed > 0 else 0.0

    # -- lifecycle --------------------------------------------------------------------

    def wakeup(self) -> None:
        self._wakeup.wakeup()

    def begin_shutdown(self) -> None:
        self._running = False
        self._wakeup.wakeup()
        if self.connection_quotas is not None:
            self.connection_quotas.wake_waiters()   # it may be waiting for a slot

    def _close_all(self) -> None:
        self._sel.close()
        self.server_socket.close()
        self._wakeup.close()
        while self.throttled_sockets:   # never counted: just closed
            close_quietly(heapq.heappop(self.throttled_sockets).socket)

    def close_unstarted(self) -> None:
        """Release the sockets of an Acceptor whose thread never ran."""
        self._close_all()


def _ip_of(address) -> str | None:
    try:
        return normalize_ip(address[0])
    except (ValueError, TypeError, IndexError):
        return None   # not an IP socket: nothing to count it under

