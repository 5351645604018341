"""Processor: one network thread, owning a selector and the connections given to it.

Theory of operation (Kafka's ``SocketServer.Processor``):

The Acceptor hands each new socket to a Processor through the Processor's
bounded ``new_connections`` queue (size 20) and wakes it.  From then on that
one thread does every read and write on the socket, so no lock guards a
connection.  Each turn of :meth:`run` is the same seven steps::

    configure_new_connections   register up to 20 queued sockets for reading
    process_new_responses       take responses the handlers queued for us, write them
    poll                        select(); read, write, split frames
    process_completed_receives  parse each new request, queue it, MUTE its connection
    process_completed_sends     a response is fully written: UNMUTE its connection
                                (also right after process_new_responses, see there)
    process_disconnected        forget connections the selector closed
    close_excess_connections    over max.connections: close the lowest-priority one

Muting after every request means one request per connection inside the server
at any time, so responses leave in request order whatever the handler threads
do.  Responses come back on ``response_queue`` from handler threads, which
then wake the selector through a socketpair (see :mod:`.wakeup`).

Memory (``queued.max.request.bytes``): each frame the selector hands out
holds its size in bytes of the broker's memory pool.  A request passed to
the handlers takes them along (its handler releases them); a frame that is
not (graceful stop, parse failure, shutdown) gives them back here.  A
release after a refused allocation wakes this thread, whose selector then
unmutes the connections that waited for memory.

Connection quotas: every socket the Acceptor counted in ConnectionQuotas is
uncounted exactly once when it goes, whichever way: the Selector calls
:meth:`_on_channel_closed` for every channel it lets go (peer close, bad
frame, idle expiry, local close, shutdown), and sockets that never became a
channel (failed registration, still queued at shutdown) are uncounted where
they are closed.  The Acceptor passes each socket's counted IP with it.

Disconnect listeners (Kafka's ConnectionDisconnectListener, see
:mod:`.connection_disconnect_listener`): the same ``_on_channel_closed`` tells
each listener the broker registered, on this thread, the id of every channel
that goes (a socket that never became a channel never carried a request, so
nothing is told of it).  Nothing runs on the request path, and with no
listener a close costs one test of an empty tuple; a listener that raises is
logged and the others still run.

Errors: a problem with one connection closes that connection with a log line;
an unexpected exception in a step is logged and the loop goes on.  The thread
only ends through :meth:`begin_shutdown`.
"""

from __future__ import annotations

import collections
import logging
import queue
import socket
import threading
import time

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.network.acceptor import close_quietly
from kafka_net.network.channel_builder import PLAINTEXT, ChannelBuilder
from kafka_net.network.memory_pool import MemoryPool
from kafka_net.network.mute_state import ChannelMuteEvent as Ev
from kafka_net.network.mute_state import ChannelMuteState
from kafka_net.network.request_channel import (
    CloseConnectionResponse, EndThrottlingResponse, NoOpResponse, Request, RequestChannel,
    Response, SendResponse, StartThrottlingResponse)
from kafka_net.network.request_metrics import RequestTimings
from kafka_net.network.selector import Selector
from kafka_net.network.send import read_prefix
from kafka_net.network.server_connection_id import ConnectionIdGenerator
from kafka_net.network.thread_name import set_os_thread_name
from kafka_net.network.wakeup import WakeupSocketpair
from kafka_net.protocol.chunked import ChunkedFrame
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import peek_client_id, peek_request_header

log = logging.getLogger(__name__)
# Lines a client can cause once per connection or per request: at most one per
# kind and peer address every 10 s, so connecting in a loop cannot flood the log.
_per_connection_log = RateLimitedLog(log)

CONNECTION_QUEUE_SIZE = 20   # Kafka's Processor.ConnectionQueueSize
POLL_TIMEOUT_S = 0.3         # Kafka polls for 300 ms
WATCH_TIMEOUT_S = 0.001      # while a request we queued has no handler woken for it
ACCEPT_BLOCK_SLICE_S = 0.1   # longest single blocking offer from the Acceptor
_THROTTLED_ONLY = ChannelMuteState.MUTED_AND_THROTTLED


class ProcessorTask(Response):
    """Work another thread hands to a Processor, run on its thread in response
    order (the fault layer: a FAULT capture record before the answer it changed,
    closing connections).  ``run(processor, channel)``; ``channel`` is None once
    the request's connection is gone."""

    __slots__ = ("run",)
    timed = False

    def __init__(self, request, run) -> None:
        self.request = request
        self.run = run

    @classmethod
    def for_processor(cls, processor_id: int, run) -> "ProcessorTask":
        """A task about no request (every connection of the Processor)."""
        return cls(_NoRequest(processor_id), run)


class _NoRequest:
    __slots__ = ("processor_id", "connection_id", "response_dequeue_time_ns")

    def __init__(self, processor_id: int) -> None:
        self.processor_id = processor_id
        self.connection_id = ""
        self.response_dequeue_time_ns = 0


class Processor(threading.Thread):
    """Methods for the Acceptor: :meth:`accept`.  For handler threads (via the
    RequestChannel): :meth:`enqueue_response`.  Everything else runs on this thread."""

    def __init__(self, processor_id: int, listener_name: str, request_channel: RequestChannel,
                 parse_request, config, node_id: int = 1,
                 memory_pool: MemoryPool = MemoryPool.NONE, connection_quotas=None,
                 channel_builder: ChannelBuilder = PLAINTEXT,
                 connection_disconnect_listeners=()) -> None:
        super().__init__(
            name=f"data-plane-kafka-network-thread-{node_id}-ListenerName({listener_name})-"
                 f"{channel_builder.security_protocol}-{processor_id}",
            daemon=False)
        self.id = processor_id
        self.listener_name = listener_name
        self.security_protocol = channel_builder.security_protocol
        self.request_channel = request_channel
        self._parse_request = parse_request
        self.new_connections: queue.Queue = queue.Queue(CONNECTION_QUEUE_SIZE)
        self.connection_quotas = connection_quotas
        # socket -> the IP ConnectionQuotas counted it under, from accept() until
        # the socket is closed; popping it is what makes the decrement happen once.
        self._quota_ips: dict[socket.socket, str] = {}
        self.connection_disconnect_listeners = tuple(connection_disconnect_listeners)
        self.response_queue: collections.deque[Response] = collections.deque()
        self.wakeup = WakeupSocketpair()
        self.selector = Selector(config.socket_request_max_bytes,
                                 config.connections_max_idle_ms, self.wakeup,
                                 name=f"processor-{processor_id}", memory_pool=memory_pool,
                                 on_close=self._on_channel_closed,
                                 channel_builder=channel_builder,
                                 failed_authentication_delay_ms=(
                                     config.connection_failed_authentication_delay_ms),
                                 authentication_timeout_ms=(
                                     config.connection_authentication_timeout_ms),
                                 request_read_timeout_ms=(
                                     config.socket_request_read_timeout_ms),
                                 request_read_min_bytes_per_second=(
                                     config.socket_request_read_min_bytes_per_second))
        # Set only if bounded: requests then carry their frame's pool bytes.
        self._memory_pool = memory_pool if memory_pool.bounded else None
        memory_pool.add_recovery_listener(self.wakeup.wakeup)
        self.inflight_responses: dict[str, Response] = {}
        self.request_timings = RequestTimings(self.name)   # written by this thread only
        self.capture = None           # a CaptureWriter when capture.dir is set
        self._connection_ids = ConnectionIdGenerator(processor_id)
        self._running = True
        self._reading = True          # False once a graceful stop began
        self._watch_queue = False     # see _poll and request_queue.py
        self.requests_received = 0
        self._started_ns = time.monotonic_ns()
        self.responses_sent = 0

    # -- called from other threads ------------------------------------------------------

    def accept(self, sock: socket.socket, may_block: bool, ip: str | None = None) -> bool:
        """Queue a new socket; block only if ``may_block`` (the Acceptor's last try).

        A blocking offer waits at most ACCEPT_BLOCK_SLICE_S, then returns False (the
        Acceptor offers again): Kafka's unbounded put hung the shutdown when every
        queue was full (testStagedListenerShutdownWhenConnectionQueueIsFull).
        ``ip``: what ConnectionQuotas counted the socket under (None: not counted).
        """
        if ip is not None:
            self._quota_ips[sock] = ip   # before the put: the socket may be taken at once
        try:
            if may_block:
                self.new_connections.put(sock, timeout=ACCEPT_BLOCK_SLICE_S)
            else:
                self.new_connections.put_nowait(sock)
        except queue.Full:
            self._quota_ips.pop(sock, None)   # still the Acceptor's
            return False
        self.wakeup.wakeup()
        return True

    def enqueue_response(self, response: Response) -> None:
        self.response_queue.append(response)   # deque.append is thread-safe
        # Always through wakeup(): a test of ``pending`` outside its lock may read a
        # stale True without the GIL (see wakeup.py), and the response would wait.
        self.wakeup.wakeup()                   # after the append: see wakeup.py

    def response_queue_size(self) -> int:
        return len(self.response_queue)

    def stop_reading(self) -> None:
        """Graceful stop, phase 1: take no new requests, finish the ones we have."""
        self._reading = False
        self.wakeup.wakeup()

    def outstanding(self) -> int:
        """Requests read from a connection and not yet answered (or dropped).  A
        channel that is only throttled (MUTED_AND_THROTTLED) has had its answer."""
        return sum(1 for c in list(self.selector.channels.values())
                   if (c.mute_state.muted and c.mute_state.state is not _THROTTLED_ONLY)
                   or c.has_send())

    def idle_fraction(self) -> float:
        """Kafka's IdlePercent: share of time spent waiting in select (0..1)."""
        elapsed = time.monotonic_ns() - self._started_ns
        return min(1.0, self.selector.io_wait_ns / elapsed) if elapsed > 0 else 1.0

    def begin_shutdown(self) -> None:
        self._running = False
        self.wakeup.wakeup()

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> None:
        set_os_thread_name(f"kn-network-{self.id}")
        try:
            while self._running:
                try:
                    self._configure_new_connections()
                    self._process_new_responses()
                    self._poll()
                    self._process_completed_receives()
                    self._process_completed_sends()
                    self._process_disconnected()
                    self._close_excess_connections()
                except Exception:
                    # Per-connection failures are handled where they happen; this
                    # is the last line that keeps the network thread alive.
                    log.exception("%s: unexpected error in the processor loop", self.name)
        finally:
            self._close_all()

    def _configure_new_connections(self) -> None:
        # At most CONNECTION_QUEUE_SIZE per turn, so a burst of connects does not
        # starve the connections already being served.
        if not self.new_connections.queue:
            return  # the usual case; no lock (a socket put after this comes with a wakeup)
        for _ in range(CONNECTION_QUEUE_SIZE):
            try:
                sock = self.new_connections.get_nowait()
            except queue.Empty:
                return
            try:
                connection_id = self._connection_ids.next_id(sock)
                self.selector.register(connection_id, sock)
            except Exception as exc:
                if isinstance(exc, OSError):
                    # The peer reset the connection before we got to it (getpeername
                    # fails): its own doing, and one line per connect would let a
                    # client write the log, so only at DEBUG.
                    log.debug("%s: connection closed before it was registered: %s",
                              self.name, exc)
                else:
                    _per_connection_log.log(logging.ERROR, "register",
                                            "%s: could not register a new connection: %s",
                                            self.name, exc)
                close_quietly(sock)
                self._quota_dec(sock)   # it was counted when accepted, whatever happened

    def _process_new_responses(self) -> None:
        # Bounded: only what is queued now, so handlers cannot keep us here forever.
        queued = len(self.response_queue)
        now = time.monotonic_ns()   # one clock read, after all these were queued
        for _ in range(queued):
            response = self.response_queue.popleft()
            response.request.response_dequeue_time_ns = now
            connection_id = response.request.connection_id
            try:
                self._process_response(response, connection_id)
            except Exception as exc:
                log.error("%s: closing %s after an error processing its response: %s",
                          self.name, connection_id, exc)
                self._close(connection_id)
        if self.selector.completed_sends:
            # Mostly written whole above (Selector.send writes at once): unmuted
            # now, their clients' next requests are read in this turn's poll.
            self._process_completed_sends()

    def _process_response(self, response: Response, connection_id: str) -> None:
        channel = self.selector.channels.get(connection_id)
        if channel is None:
            if response.__class__ is ProcessorTask:
                response.run(self, None)
                return
            # A throttle outliving its connection is normal (the client went away).
            level = logging.DEBUG if isinstance(
                response, (StartThrottlingResponse, EndThrottlingResponse)) else logging.WARNING
            _per_connection_log.log(
                level, ("dropped response", response.request.client_address[:1]),
                "%s: dropping response for connection %s, which is closed (%s)",
                self.name, connection_id, response.request.describe())
            return
        if isinstance(response, SendResponse):
            self.inflight_responses[connection_id] = response
            self.selector.send(connection_id, response.data)
        elif isinstance(response, NoOpResponse):
            self.request_timings.update(response)
            self.selector.response_sent(channel)
        elif isinstance(response, CloseConnectionResponse):
            log.debug("%s: closing %s as the API layer asked", self.name, connection_id)
            self.request_timings.update(response)
            self._close(connection_id)
        elif isinstance(response, StartThrottlingResponse):
            channel.mute_state.handle(Ev.THROTTLE_STARTED)
        elif isinstance(response, EndThrottlingResponse):
            channel.mute_state.handle(Ev.THROTTLE_ENDED)
            self._try_unmute(connection_id)
        elif response.__class__ is ProcessorTask:
            response.run(self, channel)
        else:
            raise TypeError(f"unknown response type {type(response).__name__}")

    def _poll(self) -> None:
        # No sleep if work waits: new sockets, or sends completed (or failed) in
        # Selector.send, whose connections must be unmuted now, not in 300 ms.
        busy = (self.new_connections.queue or self.selector.completed_sends
                or self.selector.disconnected)
        timeout = 0 if busy else WATCH_TIMEOUT_S if self._watch_queue else POLL_TIMEOUT_S
        try:
            self.selector.poll(timeout)
        except OSError as exc:
            log.error("%s: poll failed: %s", self.name, exc)
        if self._watch_queue:
            self._watch_queue = self.request_channel.wake_if_stale()

    def _process_completed_receives(self) -> None:
        receives = self.selector.completed_receives
        try:
            self._handle_receives(receives)
        finally:
            receives.clear()

    def _handle_receives(self, receives) -> None:
        # Each frame holds its size in memory-pool bytes (queued.max.request.bytes)
        # until a request passed to the handlers owns them; every other frame's
        # go back here, also those an exception left unprocessed.
        taken = 0
        try:
            for channel, frame in receives:
                taken += 1
                sent = False
                try:
                    request = self._request_from(channel, frame)
                    sent = request is not None and self._send_request(request)
                finally:
                    if not sent:
                        self.selector.release_frame(frame)
                if sent:
                    self.requests_received += 1
                    # Mute before anything can answer: responses are processed on
                    # this thread.  (Kafka's selector.mute, then REQUEST_RECEIVED:
                    # the Selector drops READ interest lazily, see there.)
                    channel.mute_state.request_received()
        finally:
            for _, frame in receives[taken:]:
                self.selector.release_frame(frame)

    def _request_from(self, channel, frame: bytes) -> Request | None:
        """Parse ``frame`` into a Request; None if it is dropped or its connection closed."""
        if not self._reading:
            # Graceful stop: a request read after the stop began is dropped
            # unanswered; its connection is closed with the others, and the
            # client retries, as after any disconnect.
            return None
        if channel.sessions_expire and self.selector.check_session(channel, frame):
            return None   # a re-authentication began, or the session expired (KIP-368)
        if self.capture is not None:
            self._capture_request(channel, frame)
        try:
            parsed = self._parse_request(frame)
        except InvalidRequestError as exc:
            _per_connection_log.log(logging.WARNING, ("invalid request", channel.peer[:1]),
                                    "%s: closing connection %s from %s: %s", self.name,
                                    channel.id, channel.peer_text, escape(exc))
            self._close(channel.id)
            return None
        except MemoryError:
            self.selector.log_memory_error(channel, "parsing")
            self._close(channel.id)
            return None
        except Exception as exc:
            # A parser bug, not bad input: still only this connection pays (Kafka's
            # processChannelException), not the rest of this batch of receives.  A
            # client that found the bug can send it again and again: one traceback
            # per kind of error per interval, the rest counted.
            _per_connection_log.log(
                logging.ERROR, ("unexpected parse error", type(exc).__name__),
                "%s: closing connection %s from %s: unexpected error parsing its request",
                self.name, channel.id, channel.peer_text, exc_info=True)
            self._close(channel.id)
            return None
        request = Request.from_parsed(self.id, channel.id, self.listener_name, channel.peer,
                                      parsed, channel.client_software, channel.principal_name,
                                      self.security_protocol)
        if channel.token_authenticated:
            request.token_authenticated = True
        if self._memory_pool is not None:
            request.buffer_size, request.memory_pool = len(frame), self._memory_pool
        if request.header.api_key == 18:   # ApiVersions (KIP-511, below)
            self._remember_client_software(channel, request)
        return request

    def _send_request(self, request: Request) -> bool:
        # A blocking put (back-pressure), in slices so that a shutdown is noticed.
        while self._running:
            try:
                if not self.request_channel.send_request(request, timeout=0.1):
                    self._watch_queue = True   # no handler woken for it: see request_queue
                return True
            except queue.Full:
                continue
        return False

    @staticmethod
    def _remember_client_software(channel, request: Request) -> None:
        # KIP-511: ApiVersions v3+ names the client; later requests carry it.
        body = request.body
        if body and body.get("client_software_name"):
            channel.client_software = (body["client_software_name"],
                                       body["client_software_version"])
            request.client_software = channel.client_software

    def _process_completed_sends(self) -> None:
        sends = self.selector.completed_sends
        end_ns = time.monotonic_ns() if sends else 0   # one clock read for the batch
        while sends:
            connection_id = sends.pop(0)
            response = self.inflight_responses.pop(connection_id, None)
            channel = self.selector.channels.get(connection_id)
            if response is None or channel is None:
                continue
            self.responses_sent += 1
            # Only a SendResponse is ever in flight (the others write nothing).
            if self.capture is not None:
                self._capture_response(channel, response)
            if response.on_complete is not None:
                _run_callback(response)
            self.request_timings.update(response, end_ns)
            self.selector.response_sent(channel)

    # -- wire capture (capture.dir) -------------------------------------------------------

    def _capture_request(self, channel, frame: bytes) -> None:
        # Captured before parsing, so that frames the broker refuses are on record too.
        key = version = correlation_id = -1
        if len(frame) >= 8:
            key, version, correlation_id = peek_request_header(frame)
        self.capture.request(channel.id, channel.peer_text, frame, key, version,
                             correlation_id, peek_client_id(frame))

    def _capture_response(self, channel, response: SendResponse) -> None:
        header = response.request.header
        data = response.data
        if data.__class__ is ChunkedFrame:
            # Sent from segment files: read back only what a record keeps (the
            # files are the ones just sent from, and a live segment's bytes do
            # not change), never the whole response.
            limit = 4 + self.capture.max_frame_bytes
            self.capture.response(channel.id, channel.peer_text,
                                  memoryview(read_prefix(data, limit))[4:],
                                  header.api_key, header.api_version,
                                  header.correlation_id, size=len(data) - 4)
            return
        self.capture.response(channel.id, channel.peer_text,
                              memoryview(data)[4:],
                              header.api_key, header.api_version, header.correlation_id)

    def _try_unmute(self, connection_id: str) -> None:
        # Kafka's tryUnmuteChannel: only from MUTED (not while still throttled).
        self.selector.unmute(connection_id)

    def _process_disconnected(self) -> None:
        disconnected = self.selector.disconnected
        while disconnected:
            connection_id, reason = disconnected.pop(0)
            dropped = self.inflight_responses.pop(connection_id, None)
            log.debug("%s: connection %s disconnected: %s%s", self.name, connection_id,
                      reason, " (response dropped)" if dropped else "")

    # -- connection quotas ------------------------------------------------------------------

    def _close_excess_connections(self) -> None:
        """Kafka's closeExcessConnections: above max.connections (after the protected
        inter-broker listener went over it), close one lowest-priority connection."""
        quotas = self.connection_quotas
        if quotas is not None and quotas.max_connections_exceeded(self.listener_name):
            channel = self.selector.lowest_priority_channel()
            if channel is not None:
                log.debug("%s: closing %s: more than max.connections", self.name, channel.id)
                self._close(channel.id)

    def _on_channel_closed(self, channel) -> None:
        self._quota_dec(channel.socket)
        if self.connection_disconnect_listeners:
            self._notify_disconnect(channel.id)

    def _notify_disconnect(self, connection_id: str) -> None:
        # Kafka swallows a listener's exception at ERROR (CoreUtils.swallow): the
        # Processor and the other listeners go on.
        for listener in self.connection_disconnect_listeners:
            try:
                listener.on_disconnect(connection_id)
            except Exception:
                _per_connection_log.log(
                    logging.ERROR, ("disconnect listener", type(listener).__name__),
                    "%s: connection disconnect listener %s failed for %s", self.name,
                    type(listener).__name__, connection_id, exc_info=True)

    def _quota_dec(self, sock: socket.socket) -> None:
        ip = self._quota_ips.pop(sock, None)
        if ip is None or self.connection_quotas is None:
            return
        try:
            self.connection_quotas.dec(self.listener_name, ip)
        except Exception:
            log.exception("%s: could not uncount a connection from %s", self.name, ip)

    def close_connection(self, connection_id: str) -> None:
        """Close one connection; on this Processor's thread only (a ProcessorTask)."""
        log.debug("%s: closing %s as a fault asked", self.name, connection_id)
        self._close(connection_id)

    def _close(self, connection_id: str) -> None:
        self.inflight_responses.pop(connection_id, None)
        self.selector.close(connection_id)

    def _close_all(self) -> None:
        while True:
            try:
                sock = self.new_connections.get_nowait()
            except queue.Empty:
                break
            close_quietly(sock)
            self._quota_dec(sock)
        self.selector.close_all()
        self.wakeup.close()
        if self.capture is not None:
            self.capture.close()


def _run_callback(response: SendResponse) -> None:
    try:
        response.on_complete()
    except Exception:
        log.exception("on_complete callback failed for %s", response.request.describe())

