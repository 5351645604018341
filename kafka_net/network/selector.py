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

Interest sets: a channel is registered for READ while unmuted (muting *is*
removing read interest, as in Kafka) and for WRITE while a send is pending.

Graceful remote close (Kafka's ``closingChannels``): when the peer closes its
side, complete requests already buffered are still delivered one by one and
answered; the channel is closed once nothing is left, or when a write to it
fails.  A partial trailing request is dropped.
"""

from __future__ import annotations

import logging
import selectors
import socket
import time

from kafka_net.network.kafka_channel import KafkaChannel
from kafka_net.network.wakeup import WakeupSocketpair
from kafka_net.protocol.errors import InvalidReceiveError

log = logging.getLogger(__name__)

_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


class Selector:
    def __init__(self, max_frame_size: int, connections_max_idle_ms: int,
                 wakeup: WakeupSocketpair, name: str = "selector") -> None:
        self.name = name
        self.max_frame_size = max_frame_size
        self._idle_ns = connections_max_idle_ms * 1_000_000 if connections_max_idle_ms >= 0 else -1
        self._sel = selectors.DefaultSelector()
        self._wakeup = wakeup
        self._sel.register(wakeup.fileno(), _READ, None)
        self.channels: dict[str, KafkaChannel] = {}
        # Ids of channels that want no events (muted, nothing to send): the
        # selectors module cannot hold a registration with an empty event mask.
        self._sel_parked: set[str] = set()
        self.completed_receives: list[tuple[KafkaChannel, bytes]] = []
        self.completed_sends: list[str] = []
        self.disconnected: list[tuple[str, str]] = []
        # Observability (Kafka's selector metrics, reduced to counters).
        self.io_wait_ns = 0
        self.bytes_in = 0
        self.bytes_out = 0

    # -- registration ----------------------------------------------------------------

    def register(self, connection_id: str, sock: socket.socket) -> KafkaChannel:
        if connection_id in self.channels:
            raise ValueError(f"There is already a connection for id {connection_id}")
        channel = KafkaChannel(connection_id, sock, self.max_frame_size)
        self._sel.register(sock, _READ, channel)
        self.channels[connection_id] = channel
        return channel

    def _update_interest(self, channel: KafkaChannel) -> None:
        events = 0
        if not channel.mute_state.muted and not channel.remote_closed:
            events |= _READ
        if channel.has_send():
            events |= _WRITE
        key = self._sel.get_map().get(channel.socket)
        if key is None:
            return
        if events == 0:
            self._sel.unregister(channel.socket)
            self._sel_parked.add(channel.id)
        elif key.events != events:
            self._sel.modify(channel.socket, events, channel)

    def _ensure_registered(self, channel: KafkaChannel) -> None:
        if channel.id in self._sel_parked:
            self._sel_parked.discard(channel.id)
            self._sel.register(channel.socket, _READ, channel)
        self._update_interest(channel)

    # -- operations the Processor calls ------------------------------------------------

    def send(self, connection_id: str, data: bytes) -> None:
        channel = self.channels[connection_id]
        channel.set_send(data)
        # Try the write at once: most responses fit the socket buffer, which saves
        # a select() round trip per response.
        self._write(channel)
        if channel.id in self.channels:
            self._ensure_registered(channel)

    def mute(self, connection_id: str) -> None:
        channel = self.channels[connection_id]
        channel.mute_state.mute()
        self._ensure_registered(channel)

    def unmute(self, connection_id: str) -> bool:
        channel = self.channels[connection_id]
        unmuted = channel.mute_state.maybe_unmute()
        self._ensure_registered(channel)
        return unmuted

    def close(self, connection_id: str) -> None:
        """Local close: no entry in ``disconnected`` (Kafka's DISCARD_NO_NOTIFY)."""
        channel = self.channels.pop(connection_id, None)
        if channel is not None:
            self._forget(channel)

    def close_all(self) -> None:
        for connection_id in list(self.channels):
            self.close(connection_id)
        self._sel.close()

    # -- poll --------------------------------------------------------------------------

    def poll(self, timeout: float) -> None:
        # The three result lists are not cleared here: send() may complete a write
        # (or fail one) between polls.  The Processor empties each list as it
        # consumes it.
        if self._has_buffered_receive():
            timeout = 0  # a request is already here: do not sleep on the socket
        start = time.monotonic_ns()
        events = self._sel.select(timeout)
        self.io_wait_ns += time.monotonic_ns() - start
        for key, mask in events:
            channel = key.data
            if channel is None:
                self._wakeup.drain()
            elif channel.id in self.channels:  # not closed earlier in this loop
                self._handle_events(channel, mask)
        self._collect_receives()
        self._maybe_close_oldest_idle()

    def _handle_events(self, channel: KafkaChannel, mask: int) -> None:
        try:
            if mask & _READ and not channel.mute_state.muted:
                self._read(channel)
            if mask & _WRITE and channel.id in self.channels:
                self._write(channel)
                if channel.id in self.channels:
                    self._update_interest(channel)
        except OSError as exc:
            self._disconnect(channel, f"I/O error: {exc}")

    def _read(self, channel: KafkaChannel) -> None:
        n = channel.read()
        if n > 0:
            self.bytes_in += n
            channel.last_active_ns = time.monotonic_ns()
        elif n == 0:
            channel.remote_closed = True
            self._update_interest(channel)
            self._maybe_finish_closing(channel)

    def _write(self, channel: KafkaChannel) -> None:
        before = channel._send_offset
        try:
            done = channel.write()
        except OSError as exc:
            # The peer is gone: Kafka reports this as a FAILED_SEND disconnect.
            self._disconnect(channel, f"failed send: {exc}")
            return
        written = channel._send_offset - before
        self.bytes_out += written
        if written or done:
            # Any progress counts as activity (Kafka refreshes the idle time whenever
            # the key is selected).  Refreshing only on completion expired a slow
            # reader of a large response mid-response.
            channel.last_active_ns = time.monotonic_ns()
        if done:
            self.completed_sends.append(channel.id)

    def _collect_receives(self) -> None:
        for channel in list(self.channels.values()):
            if channel.mute_state.muted:
                continue
            try:
                frame = channel.decoder.next_frame()
            except InvalidReceiveError as exc:
                log.warning("%s: closing connection %s from %s: %s",
                            self.name, channel.id, _fmt_peer(channel.peer), exc)
                self._disconnect(channel, str(exc))
                continue
            if frame is not None:
                self.completed_receives.append((channel, frame))
            elif channel.remote_closed:
                self._maybe_finish_closing(channel)

    def _has_buffered_receive(self) -> bool:
        return any(not c.mute_state.muted and c.decoder.has_frame()
                   for c in self.channels.values())

    def _maybe_finish_closing(self, channel: KafkaChannel) -> None:
        """A remotely closed channel goes once nothing of it is left to serve."""
        if channel.mute_state.muted or channel.has_send():
            return  # a request of it is still inside the server
        if channel.decoder.has_frame():
            return  # complete requests still to deliver
        reason = "peer closed the connection"
        if channel.decoder.buffered():
            reason += f" mid-request ({channel.decoder.buffered()} bytes dropped)"
        self._disconnect(channel, reason)

    def maybe_finish_closing(self, connection_id: str) -> None:
        channel = self.channels.get(connection_id)
        if channel is not None and channel.remote_closed:
            self._maybe_finish_closing(channel)

    def _maybe_close_oldest_idle(self) -> None:
        # Kafka closes at most one expired connection per poll.
        if self._idle_ns < 0 or not self.channels:
            return
        oldest = min(self.channels.values(), key=lambda c: c.last_active_ns)
        if time.monotonic_ns() - oldest.last_active_ns > self._idle_ns:
            log.debug("%s: closing idle connection %s", self.name, oldest.id)
            self._disconnect(oldest, "idle for longer than connections.max.idle.ms")

    def _disconnect(self, channel: KafkaChannel, reason: str) -> None:
        if self.channels.pop(channel.id, None) is None:
            return
        self._forget(channel)
        self.disconnected.append((channel.id, reason))

    def _forget(self, channel: KafkaChannel) -> None:
        if channel.id in self._sel_parked:
            self._sel_parked.discard(channel.id)
        else:
            try:
                self._sel.unregister(channel.socket)
            except (KeyError, ValueError):
                pass
        channel.close()


def _fmt_peer(peer: tuple) -> str:
    return f"{peer[0]}:{peer[1]}" if len(peer) >= 2 else str(peer)
