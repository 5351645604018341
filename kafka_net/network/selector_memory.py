"""The Selector's memory half (Kafka's Selector with a MemoryPool): a mixin, so that
selector.py stays about I/O.

Memory pressure (``queued.max.request.bytes``, Kafka's ``outOfMemory``): a
channel whose next frame the memory pool refuses is *muted for memory*: its
READ interest goes and it waits in ``_memory_muted``. This is not the request
mute of the mute state machine; the two never overlap (with a pool, only a
channel not muted for a request is read: no reading ahead). At the start of
each poll, if the pool has memory again, every channel muted for memory is
unmuted and looked at once more (it may be refused again). The pool wakes the
Processors at the first release after a refusal, so the wait is not the poll
timeout. While the pool is below 10% of its size, the ready channels are read
in a random order each poll, so the same ones are not always first to the
memory left (Kafka's ``determineHandlingOrder``; the shuffle itself is in
``Selector.poll``).

A MemoryError on the read path (reading, buffering or splitting a frame)
closes that connection only, with one rate-limited log line: the bytes read
are lost, and a connection left open would hang its client.

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
"""

from __future__ import annotations

import logging
import selectors

from kafka_net.log_safety import RateLimitedLog
from kafka_net.network.memory_pool import MemoryPool

log = logging.getLogger("kafka_net.network.selector")   # the Selector's own lines
_READ = selectors.EVENT_READ
_SLOW_REQUEST_CHECK_NS = 100_000_000   # how often partial requests are looked at
# The request-read timeout while the pool is out of memory (see the module doc).
PRESSURE_TIMEOUT_NS = 1_000_000_000


class SelectorMemory:
    def _init_memory(self, memory_pool: MemoryPool, request_read_timeout_ms: int = -1,
                     request_read_min_bytes_per_second: int = 0) -> None:
        # The decoders get the pool only if it is bounded: MemoryPool.NONE then
        # costs nothing per request.
        self.memory_pool = memory_pool
        self._decoder_pool = memory_pool if memory_pool.bounded else None
        self._low_memory = memory_pool.size // 10   # Kafka's lowMemThreshold
        self._memory_muted: dict = {}
        self._out_of_memory = False
        self._memory_error_log = RateLimitedLog(log)
        self._read_timeout_ns = (request_read_timeout_ms * 1_000_000
                                 if request_read_timeout_ms >= 0 else -1)
        # Nanoseconds of extra time per byte received (0: a fixed timeout).
        self._ns_per_byte = (1e9 / request_read_min_bytes_per_second
                             if request_read_min_bytes_per_second > 0 else 0.0)
        # connection id -> (channel, when its partial request's first bytes came).
        self._partial_requests: dict = {}
        self._next_slow_check_ns = 0
        self._slow_request_log = RateLimitedLog(log)

    def _mute_for_memory(self, channel) -> None:
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

    def _close_for_memory_error(self, channel, stage: str) -> None:
        self.log_memory_error(channel, stage)
        self._disconnect(channel, f"out of memory {stage} a request")

    def log_memory_error(self, channel, stage: str) -> None:
        """One line per connection closed for a MemoryError, rate-limited: a client
        that makes allocations fail must not also flood the log."""
        self._memory_error_log.log(
            logging.WARNING, "MemoryError",
            "%s: closing connection %s from %s: out of memory %s its request "
            "(%d bytes buffered)", self.name, channel.id, channel.peer_text, stage,
            channel.decoder.buffered())

    # -- slow requests (socket.request.read.timeout.ms) --------------------------------

    def _request_started(self, channel) -> None:
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
