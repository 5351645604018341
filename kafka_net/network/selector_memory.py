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
"""

from __future__ import annotations

import logging
import selectors

from kafka_net.log_safety import RateLimitedLog
from kafka_net.network.memory_pool import MemoryPool

log = logging.getLogger("kafka_net.network.selector")   # the Selector's own lines
_READ = selectors.EVENT_READ


class SelectorMemory:
    def _init_memory(self, memory_pool: MemoryPool) -> None:
        # The decoders get the pool only if it is bounded: MemoryPool.NONE then
        # costs nothing per request.
        self.memory_pool = memory_pool
        self._decoder_pool = memory_pool if memory_pool.bounded else None
        self._low_memory = memory_pool.size // 10   # Kafka's lowMemThreshold
        self._memory_muted: dict = {}
        self._out_of_memory = False
        self._memory_error_log = RateLimitedLog(log)

    def _mute_for_memory(self, channel) -> None:
        # Only a channel not muted for a request is read or handed frames, so only
        # such a channel gets here, and no unmute (which follows a response) reaches
        # it while it waits.  Were one to, the channel would be read, refused again
        # and muted again: no harm.
        self._remove_interest(channel, _READ)
        self._memory_muted[channel.id] = channel
        self._maybe_ready.pop(channel.id, None)
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
