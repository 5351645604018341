"""Selector: non-blocking I/O over a Processor's channels (Kafka's ``network.Selector``).

One ``poll(timeout)`` does what Kafka's does, and leaves its results in three
lists the Processor then works through:

* ``completed_receives``: (channel, frame) pairs, **at most one per channel per
  poll**, and only from unmuted channels; that and muting give per-connection
  ordering even when a client pipelines.
* ``completed_sends``: connection ids whose whole response was written.
* ``disconnected``: (connection id, reason) for channels the selector closed:
  the peer went away, a socket error, an invalid frame size, idle expiry.

The caller empties each list once it has handled it (``send`` can add to
``completed_sends`` between polls, because it tries the write at once).

Interest sets.  A muted channel hands out no request: that is what muting
means, in Kafka and here.  Kafka also removes OP_READ from the channel's
selection key at once.  Here READ interest is dropped *lazily*: ``mute`` only
changes the mute state, and a client that waits for its answer before
sending again, the common case, then costs no epoll change per request at
all, where dropping and restoring READ eagerly cost two system calls per
request (and each system call lets another thread take the GIL).  WRITE
interest is held only while a response could not be written in one go.

Reading ahead.  When a muted socket turns readable (a pipelining client),
Kafka leaves the bytes in the socket.  Here, while the channel's request is
in the server (MUTED_AND_RESPONSE_PENDING: not throttled), its transport is
plaintext and no memory pool is set, the bytes are read into the channel's
FrameDecoder, up to ``READ_AHEAD_BYTES``; nothing in them is handed out
before the unmute, so ordering and one request per connection hold as
before.  Only past the limit (or in the other cases) does READ interest go,
until ``unmute`` restores it.  A client keeping four requests in flight then
costs one ``recv`` per request instead of a ``recv`` and two ``epoll_ctl``
(bench/RESULTS.md, "Round 3").  A throttled channel is not read ahead: there
the socket's back-pressure is the point.

Idle expiry (``connections.max.idle.ms``) keeps the channels in least
recently active order, like Kafka's ``IdleExpiryManager``, so each poll looks
at the oldest one only.

Graceful remote close (Kafka's ``closingChannels``): when the peer closes its
side, complete requests already buffered are still delivered one by one and
answered; the channel is closed once nothing is left, or when a write to it
fails.  A partial trailing request is dropped.

Memory pressure (``queued.max.request.bytes``, Kafka's ``outOfMemory``): a
channel whose next frame the memory pool refuses is *muted for memory*: its
READ interest goes and it waits in ``_memory_muted``.  This is not the request
mute of the mute state machine; the two never overlap (with a pool, only a
channel not muted for a request is read: no reading ahead).  At the start of
each poll, if the pool has memory again, every channel muted for memory is
unmuted and looked at once more (it may be refused again).  The pool wakes the
Processors at the first release after a refusal, so the wait is not the poll
timeout.  While the pool is below 10% of its size, the ready channels are read
in a random order each poll, so the same ones are not always first to the
memory left (Kafka's ``determineHandlingOrder``).  A MemoryError on the read
path (reading, buffering or splitting a frame) closes that connection only,
with one rate-limited log line: the bytes read are lost, and a connection
left open would hang its client.

Slow requests (``socket.request.read.timeout.ms`` and
``socket.request.read.min.bytes.per.second``, kafka-net keys: Kafka has no
request-read timeout).  A frame's grant is taken from the pool as soon as its
size is known, as in Kafka, so that a granted frame can always complete (no
two half-read frames wait on each other's memory).  The price is that a
client announcing a large request and then sending a byte a second would hold
the grant, and its connection, for as long as it drips.  So a request whose
first bytes have arrived on an unmuted, ready channel must go on arriving: it
is closed once it has taken longer than the timeout plus one second for every
``min.bytes.per.second`` bytes of it received.  A client that keeps up the
minimum rate is never cut off, however large its request; a dripping one is
cut off after about the timeout, and its grant goes back.  While the pool is
out of memory (other requests wait for it), the timeout is at most
``PRESSURE_TIMEOUT_NS`` (1 s): a grant held by a request that is not arriving
at the minimum rate is what everyone waits for, so a client dripping into a
large grant, reconnecting each time it is cut off, holds the pool for about
a second per connection, not for the whole timeout.  A channel muted for
memory is off the clock (the broker, not the client, stopped the read), and
the check runs at most every 100 ms, over the channels with a partial
request only: a request that arrives in one read never enters.

Handshake and authentication (Kafka's ``pollSelectionKeys`` for a channel that
is not ``ready()``, ``maybeDelayCloseOnAuthenticationFailure``, and the
Processor's session-expiry check):

* a channel whose TLS handshake or SASL exchange is under way is not read for
  requests; each of its events calls ``channel.prepare()`` instead (the TLS
  handshake first, then the SASL exchange) in :meth:`Selector._prepare`;
  success counts successful-authentication-total (or
  successful-reauthentication-total) and lets the channel's requests in;
* a failure (:meth:`Selector._authentication_failed`) counts
  failed-authentication-total (or failed-reauthentication-total), logs one
  rate-limited INFO line naming the peer ("Failed authentication with ..."),
  and closes the channel: at once after a failed TLS handshake (Kafka flushes
  the alert and closes), else after ``connection.failed.authentication.delay.ms``
  (Kafka's brake on password guessing, its
  DelayedResponseAuthenticationException), writing the SASL failure answer
  first; reads and writes stop until then;
* :meth:`Selector.check_session`: KIP-368, for a request on an authenticated
  channel.
* The authentication deadline (``connection.authentication.timeout.ms``, a
  kafka-net key: Kafka has none, and a handshake that stalls lives there
  until ``connections.max.idle.ms``, 10 minutes): a channel not ready this
  long after it was registered, or after its re-authentication began, is
  closed with one rate-limited line.  A half-open TLS handshake holds
  OpenSSL's state (about 50 KB); this bounds how long.  Channels are kept
  in deadline order, so each poll looks at the first only; a PLAINTEXT
  channel is ready at once and never enters.

A TLS channel whose transport holds bytes no select will announce
(``keysWithBufferedRead``; a SASL token that came with the TLS Finished, or
decrypted records) is read next poll (timeout 0) unless muted.  See
docs/design.md, "One TLS handshake through the Processor" and "A SASL
exchange through the Processor".

Sends: a response is bytes, or for a Fetch answered from segment files a
ChunkedFrame whose regions go out with sendfile (see :mod:`.send`).  Either
way ``send`` writes at once, WRITE interest holds while some is left, and the
connection id joins ``completed_sends`` only when the last byte is out.
"""

from __future__ import annotations

import collections
import logging
import random
import selectors
import socket
import time

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.network.authenticator import AuthenticationError
from kafka_net.network.channel_builder import PLAINTEXT, ChannelBuilder
from kafka_net.network.kafka_channel import KafkaChannel
from kafka_net.network.memory_pool import MemoryPool
from kafka_net.network.mute_state import ChannelMuteState
from kafka_net.network.transport_layer import SslAuthenticationException
from kafka_net.network.wakeup import WakeupSocketpair
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.chunked import ChunkedFrame
from kafka_net.protocol.errors import InvalidReceiveError, InvalidRequestError
from kafka_net.protocol.headers import peek_request_header

log = logging.getLogger(__name__)
_bad_frame_log = RateLimitedLog(log)   # one line per peer address every 10 s: no flood
_auth_log = RateLimitedLog(log)
AUTH_COUNTERS = ("successful-authentication-total", "successful-reauthentication-total",
                 "successful-authentication-no-reauth-total", "failed-authentication-total",
                 "failed-reauthentication-total", "expired-connections-killed-count")

_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
_RESPONSE_PENDING = ChannelMuteState.MUTED_AND_RESPONSE_PENDING
# Bytes read ahead of a request in the server, at most (one recv more may come on top).
READ_AHEAD_BYTES = 64 * 1024
_SLOW_REQUEST_CHECK_NS = 100_000_000   # how often partial requests are looked at
# The request-read timeout while the pool is out of memory (see the module doc).
PRESSURE_TIMEOUT_NS = 1_000_000_000


class Selector:
    def __init__(self, max_frame_size: int, connections_max_idle_ms: int,
                 wakeup: WakeupSocketpair, name: str = "selector",
                 memory_pool: MemoryPool = MemoryPool.NONE, on_close=None,
                 channel_builder: ChannelBuilder = PLAINTEXT,
                 failed_authentication_delay_ms: int = 0,
                 authentication_timeout_ms: int = -1, request_read_timeout_ms: int = -1,
                 request_read_min_bytes_per_second: int = 0) -> None:
        self.name = name
        self.channel_builder = channel_builder
        # Called with every channel this selector lets go, however it goes (the
        # Processor uncounts it from ConnectionQuotas there).
        self._on_close = on_close
        self.max_frame_size = max_frame_size
        self._idle_ns = connections_max_idle_ms * 1_000_000 if connections_max_idle_ms >= 0 else -1
        self._sel = selectors.DefaultSelector()
        self._wakeup = wakeup
        self._sel.register(wakeup.fileno(), _READ, None)
        self.channels: dict[str, KafkaChannel] = {}
        # The events each channel's socket is registered for, 0 = not registered
        # (the selectors module cannot hold a registration with an empty mask).
        self._interest: dict[str, int] = {}
        # Channels that may hold a complete request: read from, or unmuted, since
        # the last poll.  Only these are searched for requests, not every channel.
        self._maybe_ready: dict[str, KafkaChannel] = {}
        # Least recently active first, for idle expiry.
        self._lru: collections.OrderedDict[str, KafkaChannel] = collections.OrderedDict()
        self.completed_receives: list[tuple[KafkaChannel, bytes]] = []
        self.completed_sends: list[str] = []
        self.disconnected: list[tuple[str, str]] = []
        # Memory pressure: the decoders get the pool only if it is bounded, so
        # MemoryPool.NONE costs nothing per request.
        self.memory_pool = memory_pool
        self._decoder_pool = memory_pool if memory_pool.bounded else None
        self._low_memory = memory_pool.size // 10   # Kafka's lowMemThreshold
        self._memory_muted: dict[str, KafkaChannel] = {}
        self._out_of_memory = False
        self._memory_error_log = RateLimitedLog(log)
        # Slow requests: socket.request.read.timeout.ms, plus nanoseconds of extra
        # time per byte received (0: a fixed timeout).
        self._read_timeout_ns = (request_read_timeout_ms * 1_000_000
                                 if request_read_timeout_ms >= 0 else -1)
        self._ns_per_byte = (1e9 / request_read_min_bytes_per_second
                             if request_read_min_bytes_per_second > 0 else 0.0)
        # connection id -> (channel, when its partial request's first bytes came).
        self._partial_requests: dict[str, tuple[KafkaChannel, int]] = {}
        self._next_slow_check_ns = 0
        self._slow_request_log = RateLimitedLog(log)
        # Channels whose transport holds bytes the socket will not announce.
        self._buffered_reads: dict[str, KafkaChannel] = {}
        # When the last select() returned: the time of every activity until the next
        # one (Kafka's Selector takes one clock reading per poll too), so a request
        # costs no clock reads for idle expiry.
        self._now_ns = time.monotonic_ns()
        # Observability (Kafka's selector metrics, reduced to counters).
        self.io_wait_ns = 0
        self.bytes_in = 0
        self.bytes_out = 0
        # Kafka's authentication sensors, as totals; and expired-connections-killed-count.
        self.auth_counts = dict.fromkeys(AUTH_COUNTERS, 0)
        self._failed_auth_delay_ns = max(0, failed_authentication_delay_ms) * 1_000_000
        # connection id -> (channel, close deadline, reason), deadlines in order.
        self._delayed_closes: collections.OrderedDict = collections.OrderedDict()
        self._auth_timeout_ns = (authentication_timeout_ms * 1_000_000
                                 if authentication_timeout_ms >= 0 else -1)
        # connection id -> (channel, deadline): channels handshaking or authenticating,
        # deadlines in order (one timeout for all, so insertion order is deadline order).
        self._auth_deadlines: collections.OrderedDict = collections.OrderedDict()

    # -- registration ------------------------------------------------------------------

    def register(self, connection_id: str, sock: socket.socket) -> KafkaChannel:
        if connection_id in self.channels:
            raise ValueError(f"There is already a connection for id {connection_id}")
        channel = self.channel_builder.build(connection_id, sock, self.max_frame_size,
                                             self._decoder_pool)
        self._sel.register(sock, _READ, channel)
        self._interest[connection_id] = _READ
        self.channels[connection_id] = channel
        self._lru[connection_id] = channel
        if not channel.is_ready:   # TLS or SASL: connection.authentication.timeout.ms
            self._authentication_began(channel)
        return channel

    def _set_interest(self, channel: KafkaChannel, events: int) -> None:
        current = self._interest[channel.id]
        if events == current:
            return
        if current == 0:
            self._sel.register(channel.socket, events, channel)
        elif events == 0:
            self._sel.unregister(channel.socket)
        else:
            self._sel.modify(channel.socket, events, channel)
        self._interest[channel.id] = events

    def _add_interest(self, channel: KafkaChannel, event: int) -> None:
        self._set_interest(channel, self._interest[channel.id] | event)

    def _remove_interest(self, channel: KafkaChannel, event: int) -> None:
        self._set_interest(channel, self._interest[channel.id] & ~event)

    def _touch(self, channel: KafkaChannel) -> None:
        # (_read and _write do the same inline: each once per request.)
        channel.last_active_ns = self._now_ns
        self._lru.move_to_end(channel.id)

    # -- operations the Processor calls ------------------------------------------------

    def send(self, connection_id: str, data: bytes | ChunkedFrame) -> None:
        channel = self.channels[connection_id]
        channel.set_send(data)
        # Try the write at once: most responses fit the socket buffer, which saves
        # a select() round trip and two epoll changes per response.
        if not self._write(channel) and channel.id in self.channels:
            self._add_interest(channel, _WRITE)   # some of it is still to go

    def mute(self, connection_id: str) -> None:
        # READ interest stays until the socket turns readable (see the module doc).
        self.channels[connection_id].mute_state.mute()

    def unmute(self, connection_id: str) -> bool:
        channel = self.channels[connection_id]
        unmuted = channel.mute_state.maybe_unmute()
        if unmuted:
            self._resume_reading(channel)
        return unmuted

    def response_sent(self, channel: KafkaChannel) -> None:
        """The channel's response is out (written, or nothing to write): its mute
        state's RESPONSE_SENT, and the unmute if no throttle holds it."""
        if channel.mute_state.response_sent():
            self._resume_reading(channel)

    def _resume_reading(self, channel: KafkaChannel) -> None:
        """An unmuted channel: read again, and look at what it has buffered; if the
        peer closed its side, the close comes once nothing is left to serve."""
        # Usually READ interest never went (see the module doc): nothing to change.
        if not channel.remote_closed and not self._interest[channel.id] & _READ:
            self._add_interest(channel, _READ)
        if channel.decoder.buffer or channel.remote_closed:
            # Pipelined requests may be buffered (or the close is due); with
            # nothing buffered the next read brings the channel back.
            self._maybe_ready[channel.id] = channel
        if channel.transport_buffers and channel.has_bytes_buffered():
            # TLS: decrypted bytes no select will announce.
            self._buffered_reads[channel.id] = channel
        if channel.remote_closed:
            self._maybe_finish_closing(channel)

    def close(self, connection_id: str) -> None:
        """Local close: no entry in ``disconnected`` (Kafka's DISCARD_NO_NOTIFY)."""
        channel = self.channels.pop(connection_id, None)
        if channel is not None:
            self._forget(channel)

    def lowest_priority_channel(self) -> KafkaChannel | None:
        """The channel to close first when over max.connections (Kafka's
        lowestPriorityChannel): one the peer already closed, else the least
        recently active one."""
        for channel in self.channels.values():
            if channel.remote_closed:
                return channel
        return next(iter(self._lru.values()), None)

    def close_all(self) -> None:
        for connection_id in list(self.channels):
            self.close(connection_id)
        for _, frame in self.completed_receives:   # never taken by the Processor
            self.release_frame(frame)
        self.completed_receives.clear()
        self._sel.close()

    def release_frame(self, frame: bytes) -> None:
        """Give a frame's bytes back to the memory pool (see framing: the grant goes
        with the frame); the Processor calls this for every frame it does not pass
        on as a request."""
        if frame and self._decoder_pool is not None:
            self._decoder_pool.release(len(frame))

    # -- poll --------------------------------------------------------------------------

    def poll(self, timeout: float) -> None:
        # The three result lists are not cleared here: send() may complete a write
        # (or fail one) between polls.  The Processor empties each list as it
        # consumes it.
        if self._out_of_memory:
            self._maybe_unmute_after_memory_pressure()
        if self._has_buffered_receive() or self._buffered_reads:
            timeout = 0  # a request is already here: do not sleep on the socket
        if self._delayed_closes:   # only after failed SASL authentications
            timeout = self._delayed_close_timeout(timeout)
        start = time.monotonic_ns()
        events = self._sel.select(timeout)
        self._now_ns = now = time.monotonic_ns()
        self.io_wait_ns += now - start
        if (self._decoder_pool is not None and not self._out_of_memory
                and self.memory_pool.available < self._low_memory):
            random.shuffle(events)   # low-memory fairness (module doc)
        for key, mask in events:
            channel = key.data
            if channel is None:
                self._wakeup.drain()
            elif channel.id in self.channels:  # not closed earlier in this loop
                self._handle_events(channel, mask)
        if self._buffered_reads:
            self._read_buffered()
        self._collect_receives()
        if self._delayed_closes:
            self._complete_delayed_closes()
        if self._auth_deadlines:
            self._expire_authentications()
        if self._partial_requests:
            self._close_slow_requests()
        self._maybe_close_oldest_idle()

    def _handle_events(self, channel: KafkaChannel, mask: int) -> None:
        try:
            if not channel.is_ready:
                self._prepare(channel)
                if not channel.is_ready or channel.id not in self.channels:
                    return
                mask |= _READ if channel.has_bytes_buffered() else 0
            if mask & _READ:
                if channel.mute_state.muted:
                    if self._reads_ahead(channel):
                        self._read(channel, True)
                    elif channel.id not in self.completed_sends:
                        # Leave the rest in the socket and stop polling for it until
                        # unmute, unless the response is already out (the client was
                        # quick to send its next request): the unmute comes right
                        # after this poll.
                        self._remove_interest(channel, _READ)
                else:
                    self._read(channel)
            if mask & _WRITE and channel.id in self.channels:
                if self._write(channel):   # all out
                    self._remove_interest(channel, _WRITE)
        except OSError as exc:
            self._disconnect(channel, f"I/O error: {exc}")
        except MemoryError:
            self._close_for_memory_error(channel, "reading")

    def _read_buffered(self) -> None:
        """Read channels whose transport holds bytes no select will announce (one
        read in this poll already is harmless: the next takes what is left)."""
        for channel in list(self._buffered_reads.values()):
            if (channel.mute_state.muted or channel.id not in self.channels
                    or channel.id in self._memory_muted):
                del self._buffered_reads[channel.id]   # unmute puts it back
            else:
                self._handle_events(channel, _READ)

    def _reads_ahead(self, channel: KafkaChannel) -> bool:
        """Read a pipelining client's next bytes while its request is in the server?
        Only plaintext, without a memory pool, and up to READ_AHEAD_BYTES: see the
        module doc."""
        return (channel.mute_state.state is _RESPONSE_PENDING and not channel.transport_buffers
                and self._decoder_pool is None
                and channel.decoder.buffered() < READ_AHEAD_BYTES)

    def _read(self, channel: KafkaChannel, ahead: bool = False) -> None:
        n = channel.read(ahead)
        if not channel.transport_buffers:
            pass   # plaintext: nothing can wait in the transport
        elif channel.has_bytes_buffered():
            self._buffered_reads[channel.id] = channel
        else:
            self._buffered_reads.pop(channel.id, None)
        if n > 0:
            self.bytes_in += n
            channel.last_active_ns = self._now_ns   # _touch
            self._lru.move_to_end(channel.id)
            self._maybe_ready[channel.id] = channel
        elif n == 0:
            channel.remote_closed = True
            self._remove_interest(channel, _READ)
            self._maybe_ready[channel.id] = channel  # finish what is buffered, then close
            return
        if self._decoder_pool is not None and channel.decoder.waiting_for_memory():
            self._mute_for_memory(channel)

    def _write(self, channel: KafkaChannel) -> bool:
        """Write what the channel's send has left; True once it is all out."""
        before = channel._send_offset
        try:
            done = channel.write()
        except OSError as exc:
            # The peer is gone: Kafka reports this as a FAILED_SEND disconnect.
            self._disconnect(channel, f"failed send: {exc}")
            return False
        written = channel._send_offset - before
        self.bytes_out += written
        if written or done:
            # Any progress counts as activity (Kafka refreshes the idle time whenever
            # the key is selected).  Refreshing only on completion expired a slow
            # reader of a large response mid-response.
            channel.last_active_ns = self._now_ns   # _touch
            self._lru.move_to_end(channel.id)
        if done:
            self.completed_sends.append(channel.id)
        return done

    def _collect_receives(self) -> None:
        ready, self._maybe_ready = self._maybe_ready, {}
        for channel in ready.values():
            if channel.id not in self.channels or channel.mute_state.muted:
                continue  # closed, or unmute puts it back
            if not channel.is_ready:
                continue  # authenticating: its authenticator reads, not the Processor
            try:
                frame = channel.decoder.next_frame()
            except InvalidReceiveError as exc:
                _bad_frame_log.log(logging.WARNING, channel.peer[:1],
                                   "%s: closing connection %s from %s: %s",
                                   self.name, channel.id, channel.peer_text, escape(exc))
                self._disconnect(channel, str(exc))
                continue
            except MemoryError:
                self._close_for_memory_error(channel, "splitting")
                continue
            if frame is not None:
                self.completed_receives.append((channel, frame))
                if self._partial_requests:   # it may have come in parts
                    self._partial_requests.pop(channel.id, None)
                if channel.decoder.buffer or channel.remote_closed:
                    # Looked at again next poll: normally the Processor has muted it
                    # by then; if not (a graceful stop drops requests), its next
                    # pipelined request is due, or its close.  Otherwise the next
                    # read brings it back, so a client that waits for its answer
                    # costs no second look.
                    self._maybe_ready[channel.id] = channel
            elif channel.remote_closed:
                self._maybe_finish_closing(channel)
            elif self._decoder_pool is not None and channel.decoder.waiting_for_memory():
                self._mute_for_memory(channel)
            elif channel.decoder.buffer:   # part of a request: socket.request.read.timeout.ms
                self._request_started(channel)

    def _has_buffered_receive(self) -> bool:
        return any(not c.mute_state.muted and c.decoder.has_frame()
                   for c in self._maybe_ready.values())

    def _maybe_finish_closing(self, channel: KafkaChannel) -> None:
        """A remotely closed channel goes once nothing of it is left to serve."""
        if channel.mute_state.muted or channel.has_send():
            return  # a request of it is still inside the server
        if channel.decoder.has_frame():
            # Complete requests still to deliver (once there is memory for them).
            if not channel.decoder.reserve():
                self._mute_for_memory(channel)
            return
        reason = "peer closed the connection"
        if channel.decoder.buffered():
            reason += f" mid-request ({channel.decoder.buffered()} bytes dropped)"
        self._disconnect(channel, reason)

    def _maybe_close_oldest_idle(self) -> None:
        # Kafka closes at most one expired connection per poll: the least recently
        # active one, the first in the LRU order.
        if self._idle_ns < 0 or not self._lru:
            return
        oldest = next(iter(self._lru.values()))
        if self._now_ns - oldest.last_active_ns > self._idle_ns:
            if oldest.ready():
                log.debug("%s: closing idle connection %s", self.name, oldest.id)
            else:   # a handshake that stalled: say so, it may be an attack
                self._log_failed_handshake(oldest, "closing connection from %s: its "
                                           "handshake did not finish within "
                                           "connections.max.idle.ms")
            self._disconnect(oldest, "idle for longer than connections.max.idle.ms")

    # -- memory pressure (queued.max.request.bytes) and MemoryError --------------------

    def _mute_for_memory(self, channel: KafkaChannel) -> None:
        # Only a channel not muted for a request is read or handed frames, so only
        # such a channel gets here, and no unmute (which follows a response) reaches
        # it while it waits.  Were one to, the channel would be read, refused again
        # and muted again: no harm.
        self._remove_interest(channel, _READ)
        self._memory_muted[channel.id] = channel
        self._maybe_ready.pop(channel.id, None)
        self._partial_requests.pop(channel.id, None)   # off the clock while we wait
        self._out_of_memory = True

    def _maybe_unmute_after_memory_pressure(self) -> None:
        # Still out: the pool wakes us at its next release (the check arms that).
        if self.memory_pool.poll_out_of_memory():
            return
        for channel in self._memory_muted.values():
            if not channel.remote_closed:
                self._add_interest(channel, _READ)
            self._maybe_ready[channel.id] = channel
            if channel.has_bytes_buffered():
                self._buffered_reads[channel.id] = channel
        self._memory_muted.clear()
        self._out_of_memory = False

    def _close_for_memory_error(self, channel: KafkaChannel, stage: str) -> None:
        self.log_memory_error(channel, stage)
        self._disconnect(channel, f"out of memory {stage} a request")

    def log_memory_error(self, channel: KafkaChannel, stage: str) -> None:
        """One line per connection closed for a MemoryError, rate-limited: a client
        that makes allocations fail must not also flood the log."""
        self._memory_error_log.log(
            logging.WARNING, "MemoryError",
            "%s: closing connection %s from %s: out of memory %s its request "
            "(%d bytes buffered)", self.name, channel.id, channel.peer_text, stage,
            channel.decoder.buffered())

    # -- slow requests (socket.request.read.timeout.ms) --------------------------------

    def _request_started(self, channel: KafkaChannel) -> None:
        """Part of a request is buffered on a ready, unmuted channel: its clock
        starts, unless it already runs."""
        if self._read_timeout_ns >= 0 and channel.id not in self._partial_requests:
            self._partial_requests[channel.id] = (channel, self._now_ns)

    def _close_slow_requests(self) -> None:
        now = self._now_ns
        if now < self._next_slow_check_ns:
            return
        self._next_slow_check_ns = now + _SLOW_REQUEST_CHECK_NS
        timeout = self._read_timeout_ns
        if self._decoder_pool is not None and self._decoder_pool.is_out_of_memory:
            timeout = min(timeout, PRESSURE_TIMEOUT_NS)
        for connection_id, (channel, started) in list(self._partial_requests.items()):
            received = channel.decoder.buffered()
            if now - started <= timeout + received * self._ns_per_byte:
                continue
            del self._partial_requests[connection_id]
            self._slow_request_log.log(
                logging.WARNING, ("slow request", channel.peer[:1]),
                "%s: closing connection %s from %s: %d bytes of its request arrived in "
                "%d ms, slower than socket.request.read.timeout.ms=%d (%d while the "
                "memory pool is out) and socket.request.read.min.bytes.per.second allow",
                self.name, channel.id, channel.peer_text, received,
                (now - started) // 1_000_000, self._read_timeout_ns // 1_000_000,
                timeout // 1_000_000)
            self._disconnect(channel, "request not received within "
                                      "socket.request.read.timeout.ms")

    # -- handshake and authentication --------------------------------------------------

    def _authentication_began(self, channel: KafkaChannel) -> None:
        """A channel that is not ready yet (registered, or re-authenticating) gets
        its deadline."""
        if self._auth_timeout_ns >= 0:
            self._auth_deadlines.pop(channel.id, None)   # a re-authentication: to the end
            self._auth_deadlines[channel.id] = (
                channel, time.monotonic_ns() + self._auth_timeout_ns)

    def _expire_authentications(self) -> None:
        now = self._now_ns
        while self._auth_deadlines:
            connection_id, (channel, deadline) = next(iter(self._auth_deadlines.items()))
            if deadline > now:
                return
            del self._auth_deadlines[connection_id]
            if (connection_id not in self.channels or channel.ready()
                    or connection_id in self._delayed_closes):   # failed: closing anyway
                continue
            self._log_failed_handshake(
                channel, "closing connection from %s: its %s did not finish within "
                "connection.authentication.timeout.ms=%d", _stage(channel),
                self._auth_timeout_ns // 1_000_000)
            self._disconnect(channel, "authentication did not finish within "
                                      "connection.authentication.timeout.ms")

    def _prepare(self, channel: KafkaChannel) -> None:
        try:
            channel.prepare()
        except SslAuthenticationException as exc:
            self._authentication_failed(channel, exc, delay=False)
            return
        except AuthenticationError as exc:
            self._authentication_failed(channel, exc)
            return
        except InvalidRequestError as exc:
            _auth_log.log(logging.WARNING, ("invalid", channel.peer[:1]),
                          "%s: closing connection %s from %s during authentication: %s",
                          self.name, channel.id, channel.peer_text, escape(exc))
            self._disconnect(channel, f"invalid request during authentication: {exc}")
            return
        except OSError:
            raise   # the peer is gone or the transport broke: the Selector's I/O error
        except Exception as exc:
            self._unexpected_authentication_error(channel, exc)
            return
        self._after_prepare(channel)

    def _unexpected_authentication_error(self, channel: KafkaChannel, exc: Exception) -> None:
        """A bug reached by a client that has not authenticated: close that one
        connection with one rate-limited line (no traceback, which a client could
        repeat at will), as Kafka closes a channel whose authenticate() threw."""
        _auth_log.log(logging.ERROR, ("unexpected", channel.peer[:1]),
                      "%s: closing connection %s from %s: unexpected error during "
                      "authentication: %s", self.name, channel.id, channel.peer_text,
                      escape(repr(exc)))
        self._disconnect(channel, f"unexpected error during authentication: {exc!r}")

    def _after_prepare(self, channel: KafkaChannel) -> None:
        self._touch(channel)   # progress: only a handshake that stalls expires
        if channel.has_bytes_buffered():
            # e.g. SASL tokens that came with the TLS Finished: no select says so.
            self._buffered_reads[channel.id] = channel
        else:
            self._buffered_reads.pop(channel.id, None)
        if channel.ready():
            self._authenticated(channel)
        # WRITE while an answer or encrypted handshake records wait for the socket.
        writing = channel.has_send() or channel.transport.has_pending_writes()
        self._set_interest(channel, _READ | (_WRITE if writing else 0))

    def _authenticated(self, channel: KafkaChannel) -> None:
        self._auth_deadlines.pop(channel.id, None)
        reauth = channel.successful_authentications > 1
        counts = self.auth_counts
        if reauth:
            counts["successful-reauthentication-total"] += 1
        else:
            counts["successful-authentication-total"] += 1
            if not getattr(channel.authenticator, "client_supports_reauth", True):
                counts["successful-authentication-no-reauth-total"] += 1
        log.debug("%s: Successfully %sauthenticated with %s (channelId=%s) as %s", self.name,
                  "re-" if reauth else "", channel.peer_text, channel.id,
                  escape(channel.principal()))
        self._maybe_ready[channel.id] = channel   # a request may already be buffered

    def _authentication_failed(self, channel: KafkaChannel, exc: Exception,
                               delay: bool = True) -> None:
        reauth = channel.successful_authentications > 0
        self.auth_counts["failed-reauthentication-total" if reauth
                         else "failed-authentication-total"] += 1
        _auth_log.log(logging.INFO, ("auth", channel.peer[:1]),
                      "%s: Failed %sauthentication with %s (channelId=%s) (%s)", self.name,
                      "re-" if reauth else "", channel.peer_text, channel.id, escape(exc))
        reason = f"failed {'re-' if reauth else ''}authentication: {exc}"
        if not delay or not self._failed_auth_delay_ns:
            self._close_on_authentication_failure(channel, reason)
            return
        self._set_interest(channel, 0)   # nothing more is read or written until the close
        self._delayed_closes[channel.id] = (
            channel, time.monotonic_ns() + self._failed_auth_delay_ns, reason)

    def _log_failed_handshake(self, channel: KafkaChannel, msg: str, *args) -> None:
        # One line per peer address every 10 s, so a scanner cannot flood the log.
        _auth_log.log(logging.INFO, ("auth", channel.peer[:1]),
                      "%s: " + msg, self.name, channel.peer_text, *args)

    def _close_on_authentication_failure(self, channel: KafkaChannel, reason: str) -> None:
        channel.authenticator.send_failure_response()
        self._disconnect(channel, reason)

    def _complete_delayed_closes(self) -> None:
        now = time.monotonic_ns()
        while self._delayed_closes:
            connection_id, (channel, deadline, reason) = next(iter(self._delayed_closes.items()))
            if deadline > now:
                return
            del self._delayed_closes[connection_id]
            if connection_id in self.channels:
                self._close_on_authentication_failure(channel, reason)

    def _delayed_close_timeout(self, timeout: float) -> float:
        """The poll timeout, shortened so the next delayed close is on time."""
        if not self._delayed_closes:
            return timeout
        _, deadline, _ = next(iter(self._delayed_closes.values()))
        return max(0.0, min(timeout, (deadline - time.monotonic_ns()) / 1e9))

    def check_session(self, channel: KafkaChannel, frame: bytes) -> bool:
        """KIP-368, for a request just received on an authenticated channel: True if
        the frame was taken for a re-authentication (a SaslHandshake) or the channel
        was closed because its session expired; False: serve the request."""
        if channel.authenticator.session_expiration_ns() is None:
            return False
        if len(frame) >= 8 and peek_request_header(frame)[0] == ApiKey.SASL_HANDSHAKE:
            try:
                if channel.maybe_begin_server_reauthentication(frame):
                    if not channel.is_ready:
                        self._authentication_began(channel)
                    self._after_prepare(channel)
                    return True
            except AuthenticationError as exc:
                self._authentication_failed(channel, exc)
                return True
            except InvalidRequestError as exc:
                _auth_log.log(logging.WARNING, ("invalid", channel.peer[:1]),
                              "%s: closing connection %s from %s during re-authentication:"
                              " %s", self.name, channel.id, channel.peer_text, escape(exc))
                self._disconnect(channel, f"invalid request during re-authentication: {exc}")
                return True
            except OSError as exc:
                self._disconnect(channel, f"I/O error: {exc}")
                return True
            except Exception as exc:
                self._unexpected_authentication_error(channel, exc)
                return True
        if channel.server_authentication_session_expired(time.monotonic_ns()):
            self.auth_counts["expired-connections-killed-count"] += 1
            _auth_log.log(logging.INFO, ("expired", channel.peer[:1]),
                          "%s: Disconnecting expired channel %s from %s (%s): its SASL "
                          "session ended (connections.max.reauth.ms) without "
                          "re-authentication", self.name, channel.id, channel.peer_text,
                          escape(channel.principal()))
            self.close(channel.id)
            return True
        return False

    # -- closing -----------------------------------------------------------------------

    def _disconnect(self, channel: KafkaChannel, reason: str) -> None:
        if self.channels.pop(channel.id, None) is None:
            return
        self._forget(channel)
        self.disconnected.append((channel.id, reason))

    def _forget(self, channel: KafkaChannel) -> None:
        if self._interest.pop(channel.id, 0):
            try:
                self._sel.unregister(channel.socket)
            except (KeyError, ValueError):
                pass
        self._lru.pop(channel.id, None)
        self._delayed_closes.pop(channel.id, None)
        self._auth_deadlines.pop(channel.id, None)
        self._partial_requests.pop(channel.id, None)
        self._maybe_ready.pop(channel.id, None)
        self._memory_muted.pop(channel.id, None)
        self._buffered_reads.pop(channel.id, None)
        channel.close()
        if self._on_close is not None:
            self._on_close(channel)


def _stage(channel: KafkaChannel) -> str:
    """What a channel that is not ready is still doing, for the log."""
    if not channel.transport.ready():
        return "TLS handshake"
    reauth = getattr(channel.authenticator, "reauthenticating", None)
    return "SASL re-authentication" if reauth and reauth() else "SASL authentication"
