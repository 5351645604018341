"""A minimal single-threaded ``selectors`` Kafka server: the yardstick for kafka-net.

One thread accepts, reads, splits frames (:class:`FrameDecoder`), parses
(:meth:`KafkaApis.parse_request`), answers (:meth:`KafkaApis.build_response`)
and writes, with partial writes carried over to the next writable event.
It uses the same codec, the same ``KafkaApis`` and the same socket options as
kafka-net, so its answers are byte for byte kafka-net's, and a benchmark
against both measures only the architecture around the protocol code:

* kafka-net: 1 Acceptor + N Processors + a bounded RequestChannel + M handler
  threads; a connection is muted after each request, so at most one request
  per connection is inside the server at a time.
* here: one thread, no request queue; every complete request already read
  is answered at once, and the responses of one read go out in one
  ``send``.  Responses leave in request order because one thread does all.

The broker state is kafka-net's own, wired as ``KafkaServer`` wires it: a
``ReplicaManager`` (in-memory partition logs, fetch purgatory) and a
``GroupCoordinator``, so Produce, Fetch and the group APIs are served too.
A handler may park a request (``DEFERRED``: a long-poll Fetch, a JoinGroup)
and answer it later from another thread (the purgatory timer) or from this
one (a Produce that completes a waiting Fetch).  Those answers go through a
:class:`ResponseSink` (what ``KafkaApis`` calls instead of kafka-net's
RequestChannel): a queue plus a socketpair wake-up that the loop drains.
While a connection has a parked request, its later requests wait (it is not
read), so answers still leave in request order, as Kafka's mute does.  The
purgatory timers (one thread each, started by :meth:`serve`) are the only
other threads; they never touch a socket.

Bad input is handled as kafka-net handles it (close the connection, log why).
What it leaves out: quotas, idle expiry, graceful drain on stop, metrics.

Run::

    python -m bench.reference_server --port 0     # prints "listening on 127.0.0.1:PORT"

SIGTERM or SIGINT stops it (exit code 0).
"""

from __future__ import annotations

import argparse
import logging
import selectors
import signal
import socket
import sys
from collections import deque

from kafka_net.config import EndPoint, ServerConfig, parse_listeners
from kafka_net.network.acceptor import configure_accepted_socket
from kafka_net.network.request_channel import (
    CloseConnectionResponse, NoOpResponse, Request, Response, SendResponse)
from kafka_net.protocol.errors import InvalidReceiveError, InvalidRequestError
from kafka_net.protocol.framing import FrameDecoder
from kafka_net.server.apis import KafkaApis
from kafka_net.server.group import GroupConfig, GroupCoordinator
from kafka_net.server.metadata_cache import MetadataCache
from kafka_net.server.replica_manager import ReplicaManager

log = logging.getLogger("bench.reference_server")

READ_CHUNK = 64 * 1024          # as kafka-net's KafkaChannel
# Stop reading a connection while this much of its responses waits to be written,
# so a client that pipelines without reading cannot grow our memory without bound.
MAX_PENDING_OUT = 1024 * 1024
LISTENER = "PLAINTEXT"
_API_VERSIONS = 18


class ResponseSink:
    """Where ``KafkaApis.complete_deferred`` sends the answer to a parked request.

    Any thread may call :meth:`send_response`; the server's loop takes the
    answers with :meth:`take` after the wake-up socket fires.  One wake-up
    byte stands for any number of queued answers (``_signalled``): the loop
    clears the flag *before* it empties the queue, so an answer queued after
    that always sends a new byte.
    """

    def __init__(self, wake: socket.socket) -> None:
        self._queue: deque[Response] = deque()
        self._wake = wake
        self._signalled = False

    def send_response(self, response: Response) -> None:
        self._queue.append(response)
        if not self._signalled:
            self._signalled = True
            try:
                self._wake.send(b"\x01")
            except (BlockingIOError, InterruptedError):
                pass  # the socketpair is full of wake-ups already
            except OSError:
                pass  # closed: the server is stopping

    def take(self) -> list[Response]:
        self._signalled = False
        out = []
        while self._queue:
            out.append(self._queue.popleft())
        return out


class _Connection:
    __slots__ = ("sock", "id", "peer", "decoder", "out", "client_software",
                 "remote_closed", "events", "parked")

    def __init__(self, sock: socket.socket, connection_id: str, peer: tuple,
                 max_frame_size: int) -> None:
        self.sock = sock
        self.id = connection_id
        self.peer = peer
        self.decoder = FrameDecoder(max_frame_size)
        self.out = bytearray()
        self.client_software = ("unknown", "unknown")
        self.remote_closed = False
        self.events = selectors.EVENT_READ
        self.parked = False      # a request of this connection waits in a purgatory


class ReferenceServer:
    """Bind at construction (so the port is known), then :meth:`serve` until :meth:`stop`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig(
            listeners=parse_listeners(f"{LISTENER}://{host}:{port}"))
        self.host = host
        self._listen = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.config.socket_receive_buffer_bytes != -1:
            self._listen.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                                    self.config.socket_receive_buffer_bytes)
        self._listen.bind((host, port))
        self._listen.listen(self.config.socket_listen_backlog_size)
        self._listen.setblocking(False)
        self.port = self._listen.getsockname()[1]

        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._listen, selectors.EVENT_READ, "accept")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wakeup")

        # The broker state, wired as KafkaServer wires it (one node, in memory).
        cfg = self.config
        self.metadata_cache = MetadataCache(cfg.node_id, cfg.cluster_id)
        self.metadata_cache.set_advertised_endpoints([EndPoint(LISTENER, host, self.port)])
        self.replica_manager = ReplicaManager(cfg.message_max_bytes)
        self.group_coordinator = GroupCoordinator(
            GroupConfig(cfg.group_min_session_timeout_ms, cfg.group_max_session_timeout_ms,
                        cfg.group_initial_rebalance_delay_ms, cfg.offset_metadata_max_bytes,
                        cfg.group_max_size),
            self._partition_count)
        self.responses = ResponseSink(self._wake_w)
        self.apis = KafkaApis(cfg, self.metadata_cache, self.responses,
                              replica_manager=self.replica_manager,
                              group_coordinator=self.group_coordinator)
        self._purgatories_started = False

        self._connections: dict[int, _Connection] = {}
        self._by_id: dict[str, _Connection] = {}
        self._next_index = 0
        self._running = True
        self.requests_handled = 0

    def _partition_count(self, topic: str) -> int | None:
        metadata = self.metadata_cache.topic(topic)
        return None if metadata is None else metadata.num_partitions

    # -- control ---------------------------------------------------------------------

    def stop(self) -> None:
        """Safe from another thread or a signal handler."""
        self._running = False
        try:
            self._wake_w.send(b"\x00")
        except OSError:
            pass

    def serve(self) -> None:
        # The purgatories' timer threads expire long polls and rebalances; as in
        # KafkaServer.startup, they must run or a parked request waits forever.
        self.replica_manager.fetch_purgatory.start()
        self.group_coordinator.start()
        self._purgatories_started = True
        try:
            while self._running:
                for key, mask in self._sel.select(1.0):
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "wakeup":
                        self._drain_wakeup()
                        self._deliver_parked_answers()
                    else:
                        self._on_event(key.data, mask)
        finally:
            self._close_all()

    # -- accept ----------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(64):  # bounded, so a connect storm cannot starve reads
            try:
                sock, peer = self._listen.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and friends: log, keep serving
                log.error("accept failed: %s", exc)
                return
            try:
                configure_accepted_socket(sock, self.config)   # as kafka-net's Acceptor
                local = sock.getsockname()
            except OSError as exc:
                log.error("error configuring an accepted socket: %s", exc)
                sock.close()
                continue
            connection_id = f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}-0-{self._next_index}"
            self._next_index += 1
            conn = _Connection(sock, connection_id, peer, self.config.socket_request_max_bytes)
            self._connections[sock.fileno()] = conn
            self._by_id[connection_id] = conn
            self._sel.register(sock, selectors.EVENT_READ, conn)

    def _drain_wakeup(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _deliver_parked_answers(self) -> None:
        """Answers to parked requests, queued by the purgatory timer or by this
        thread: add each to its connection's output, then carry on with the
        requests that connection sent meanwhile."""
        for response in self.responses.take():
            conn = self._by_id.get(response.request.connection_id)
            if conn is None:
                continue  # the client left while its request was parked
            conn.parked = False
            if not self._apply(conn, response):
                continue
            self._pump(conn, read=False)

    # -- per connection --------------------------------------------------------------

    def _on_event(self, conn: _Connection, mask: int) -> None:
        self._pump(conn, read=bool(mask & selectors.EVENT_READ))

    def _pump(self, conn: _Connection, read: bool) -> None:
        try:
            if read:
                data = conn.sock.recv(READ_CHUNK)
                if data:
                    conn.decoder.receive_data(data)
                else:
                    conn.remote_closed = True
            # Bounded: requests held back by MAX_PENDING_OUT are answered as the
            # output drains; what is left waits for the next writable event.
            for _ in range(16):
                if not self._handle_frames(conn):
                    return
                if conn.out:
                    del conn.out[:conn.sock.send(conn.out)]
                if conn.out or conn.parked or not conn.decoder.has_frame():
                    break
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as exc:
            log.debug("closing %s: %s", conn.id, exc)
            self._close(conn)
            return
        if (conn.remote_closed and not conn.out and not conn.parked
                and not conn.decoder.has_frame()):
            self._close(conn)
            return
        self._update_interest(conn)

    def _handle_frames(self, conn: _Connection) -> bool:
        """Answer the complete requests buffered; False if the connection was closed."""
        while len(conn.out) < MAX_PENDING_OUT and not conn.parked:
            try:
                frame = conn.decoder.next_frame()
            except InvalidReceiveError as exc:
                log.warning("closing connection %s: %s", conn.id, exc)
                self._close(conn)
                return False
            if frame is None:
                return True
            try:
                parsed = self.apis.parse_request(frame)
            except InvalidRequestError as exc:
                log.warning("closing connection %s: %s", conn.id, exc)
                self._close(conn)
                return False
            request = Request(0, conn.id, LISTENER, conn.peer, parsed.header, parsed.body,
                              parsed.body_size, parsed.unsupported_version,
                              conn.client_software)
            body = parsed.body
            if (parsed.header.api_key == _API_VERSIONS and body
                    and body.get("client_software_name")):
                conn.client_software = (body["client_software_name"],
                                        body["client_software_version"])
                request.client_software = conn.client_software
            response = self.apis.build_response(request)
            self.requests_handled += 1
            if response is None:
                # DEFERRED: answered later through self.responses.  Until then this
                # connection's later requests wait, so answers keep request order.
                conn.parked = True
                return True
            if not self._apply(conn, response):
                return False
        return True

    def _apply(self, conn: _Connection, response: Response) -> bool:
        """Queue a response's bytes; False if it closed the connection instead."""
        if isinstance(response, SendResponse):
            conn.out += response.data
        elif isinstance(response, CloseConnectionResponse):
            self._close(conn)
            return False
        elif not isinstance(response, NoOpResponse):
            raise TypeError(f"unexpected response type {type(response).__name__}")
        return True

    def _update_interest(self, conn: _Connection) -> None:
        events = 0
        if not conn.remote_closed and not conn.parked and len(conn.out) < MAX_PENDING_OUT:
            events |= selectors.EVENT_READ
        if conn.out or (conn.decoder.has_frame() and not conn.parked):
            # Writable fires at once when the output is empty: that is how requests
            # still buffered get their turn without new bytes arriving.
            events |= selectors.EVENT_WRITE
        if events == conn.events:
            return
        # selectors cannot hold an empty interest set: a parked connection with
        # nothing to write is taken out of the selector until its answer comes.
        if events == 0:
            self._sel.unregister(conn.sock)
        elif conn.events == 0:
            self._sel.register(conn.sock, events, conn)
        else:
            self._sel.modify(conn.sock, events, conn)
        conn.events = events

    def _close(self, conn: _Connection) -> None:
        if self._connections.pop(conn.sock.fileno(), None) is None:
            return
        self._by_id.pop(conn.id, None)
        try:
            self._sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    def _close_all(self) -> None:
        if self._purgatories_started:
            # Parked requests are dropped unanswered (no graceful drain here).
            self.replica_manager.fetch_purgatory.shutdown()
            self.group_coordinator.shutdown()
        for conn in list(self._connections.values()):
            self._close(conn)
        self._sel.close()
        self._listen.close()
        self._wake_r.close()
        self._wake_w.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.reference_server",
        description="Single-threaded selectors Kafka server using kafka-net's codec, "
                    "KafkaApis, ReplicaManager and GroupCoordinator.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = an ephemeral port")
    parser.add_argument("--log-level", default="WARNING",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s")
    server = ReferenceServer(args.host, args.port)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: server.stop())
    print(f"listening on {args.host}:{server.port}", flush=True)
    server.serve()
    print(f"stopped after {server.requests_handled} requests", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
