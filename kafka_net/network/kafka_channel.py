"""KafkaChannel: one accepted socket and everything the Processor knows about it.

Mirrors ``org.apache.kafka.common.network.KafkaChannel``:

* a transport layer (``self.transport``: plaintext or TLS, see
  :mod:`.transport_layer`) that every byte goes through, and an authenticator
  (``self.authenticator``, see :mod:`.authenticator`).  A channel is
  :meth:`ready` once the transport's handshake is done and the authenticator
  is complete; until then the Selector calls :meth:`prepare` on each readiness
  event instead of reading requests (Kafka's ``Selector.pollSelectionKeys``);
* a :class:`~kafka_net.protocol.framing.FrameDecoder` holding bytes read but
  not yet handed out as a request (the NetworkReceive);
* at most one send in progress (``setSend`` throws if one is already set), as
  a memoryview and an offset, so partial writes resume where they stopped; a
  response holding file regions (a Fetch from segment files) is a
  :class:`~kafka_net.network.send.MultiRecordsSend` instead, whose regions go
  out with ``transfer_from`` (sendfile), see :mod:`.send`;
* the mute state machine;
* bookkeeping for idle expiry and graceful remote close.

With a memory pool (``queued.max.request.bytes``) the decoder takes each
frame's bytes from the pool as soon as the frame's size is known; ``read``
then reads nothing while the pool refuses (the Selector mutes the channel
for memory pressure), and nothing while a complete request waits to be
taken (Kafka reads no further while a completed receive is pending), so the
bytes held beyond granted frames stay below one READ_CHUNK per connection.

Only the owning Processor thread touches a channel.
"""

from __future__ import annotations

import socket
import time

from kafka_net.network.authenticator import (ANONYMOUS, MIN_REAUTH_INTERVAL_NS,
                                             DefaultAuthenticator)
from kafka_net.network.mute_state import MuteStateMachine
from kafka_net.network.send import MultiRecordsSend
from kafka_net.network.server_connection_id import unmapped
from kafka_net.network.transport_layer import PlaintextTransportLayer
from kafka_net.protocol.chunked import ChunkedFrame
from kafka_net.protocol.framing import FrameDecoder

# One recv() asks for this much.  Larger reads mean fewer system calls.  A
# muted channel is read only ahead of a request in the server and up to the
# Selector's READ_AHEAD_BYTES, so a connection buffers at most that plus one
# read of pipelined requests.
READ_CHUNK = 64 * 1024
_EMPTY = memoryview(b"")


class KafkaChannel:
    def __init__(self, connection_id: str, sock: socket.socket, max_frame_size: int,
                 memory_pool=None, transport=None, authenticator=None) -> None:
        self.id = connection_id
        self.socket = sock
        self.transport = transport if transport is not None else PlaintextTransportLayer(sock)
        # False only for the plaintext transport: no bytes ever wait inside it, so
        # the per-request checks for them are skipped (TLS and test fakes: True).
        self.transport_buffers = getattr(self.transport, "BUFFERS", True)
        self.successful_authentications = 0
        # A SASL authenticator needs the channel: its ChannelBuilder sets it after.
        self.authenticator = (authenticator if authenticator is not None
                              else DefaultAuthenticator(self.transport))
        self.decoder = FrameDecoder(max_frame_size, memory_pool)
        self.mute_state = MuteStateMachine()
        self.peer = _peer(sock)
        # "host:port", formatted once: log lines and every captured frame use it.
        self.peer_text = (f"{self.peer[0]}:{self.peer[1]}" if len(self.peer) >= 2
                          else str(self.peer))
        self.client_software = ("unknown", "unknown")
        self._send: memoryview | MultiRecordsSend | None = None
        self._send_offset = 0   # bytes of the send written so far
        self.last_active_ns = time.monotonic_ns()
        # Set when the peer closed its side: buffered complete requests are still
        # served (Kafka's GRACEFUL close with closingChannels), nothing more is read.
        self.remote_closed = False

    # -- handshake and authentication (Kafka's prepare / ready) ---------------------

    @property
    def authenticator(self):
        return self._authenticator

    @authenticator.setter
    def authenticator(self, authenticator) -> None:
        self._authenticator = authenticator
        # Only a SASL session can expire or be re-authenticated (KIP-368): the
        # Processor checks sessions per request only where this is True.
        self.sessions_expire = not isinstance(authenticator, DefaultAuthenticator)
        self._update_ready()

    def _update_ready(self) -> None:
        """``is_ready`` and ``principal_name``: what the Selector and Processor read
        per event and per request, as attributes.  They change only where the
        transport or authenticator state changes: here, in :meth:`prepare` and at
        the start of a re-authentication."""
        ready = self.ready()
        if ready:
            self.principal_name = self.principal()   # may raise: then not ready
            self.token_authenticated = getattr(self.authenticator, "token_authenticated",
                                               bool)()
        elif not hasattr(self, "principal_name"):
            self.principal_name = ANONYMOUS
            self.token_authenticated = False
        self.is_ready = ready

    def prepare(self) -> None:
        """One non-blocking step of the TLS handshake, then of the authentication
        (SASL_SSL: the SASL exchange starts only once TLS is up).

        Raises the transport's or authenticator's exception when either fails
        (SslAuthenticationException for TLS, AuthenticationError for SASL); the
        Selector closes the channel.
        """
        if not self.transport.ready():
            self.transport.handshake()
        if self.transport.ready() and not self.authenticator.complete():
            self.authenticator.authenticate()
        self._update_ready()   # the principal is built now: a DN no rule takes fails here
        if self.is_ready:
            self.successful_authentications += 1

    def ready(self) -> bool:
        return self.transport.ready() and self.authenticator.complete()

    def principal(self) -> str:
        """``"User:..."``: who the peer is, for every request's context (the SASL
        name, a mapped certificate DN, or User:ANONYMOUS)."""
        return self.authenticator.principal()

    def has_bytes_buffered(self) -> bool:
        """Bytes taken off the socket but not yet read (TLS records decrypted early)."""
        return self.transport.has_pending_reads()

    def maybe_begin_server_reauthentication(self, frame: bytes) -> bool:
        """KIP-368: a SaslHandshake on an authenticated channel starts a
        re-authentication, if sessions expire here and the last one started at
        least a second ago; else False and the request is served as any other."""
        authenticator = self.authenticator
        if authenticator.session_expiration_ns() is None:
            return False
        now = time.monotonic_ns()
        last = authenticator.last_reauth_start_ns
        if last and now - last < MIN_REAUTH_INTERVAL_NS:
            return False
        authenticator.last_reauth_start_ns = now
        authenticator.reauthenticate(frame)
        self._update_ready()
        if self.is_ready:   # the whole exchange was already buffered
            self.successful_authentications += 1
        return True

    def server_authentication_session_expired(self, now_ns: int) -> bool:
        expiration = self.authenticator.session_expiration_ns()
        return expiration is not None and now_ns - expiration > 0

    # -- reads ---------------------------------------------------------------------

    def read(self, ahead: bool = False) -> int:
        """Read what the socket has; return bytes read, 0 on EOF.  ``ahead``: the
        Selector reads ahead of a request in the server (see its module doc) and
        has checked the limit itself.

        Raises OSError (e.g. ConnectionResetError) for a broken connection;
        BlockingIOError is swallowed and reported as -1 (nothing to read now), as is
        a read skipped because a complete request is buffered or the pool refused
        memory for the frame under way.
        """
        decoder = self.decoder
        if (not ahead and decoder.buffer
                and (not decoder.reserve() or decoder.has_frame())):
            return -1
        try:
            data = self.transport.read(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return -1
        if data:
            decoder.receive_data(data)
        return len(data)

    def has_complete_receive(self) -> bool:
        return self.decoder.has_frame()

    # -- writes --------------------------------------------------------------------

    def set_send(self, data: bytes | ChunkedFrame) -> None:
        if self._send is not None:
            raise RuntimeError(
                f"Attempt to begin a send operation with prior send operation still in "
                f"progress, connection id is {self.id}")
        self._send = (MultiRecordsSend(data) if data.__class__ is ChunkedFrame
                      else memoryview(data))
        self._send_offset = 0

    def has_send(self) -> bool:
        return self._send is not None

    def write(self) -> bool:
        """Write as much of the pending send as the transport takes; True when it is
        all out (for TLS: its encrypted records too, Kafka's hasPendingWrites)."""
        send = self._send
        if send is None:
            return False
        if send.__class__ is MultiRecordsSend:
            return self._write_records(send)
        offset = self._send_offset
        try:
            # Usually the first write takes it all: no slice of the view for that.  Once
            # every byte is taken, an empty view makes a TLS transport flush its records.
            self._send_offset = offset + self.transport.write(send[offset:] if offset else send)
        except (BlockingIOError, InterruptedError):
            return False
        if self._send_offset < len(send) or (self.transport_buffers
                                             and self.transport.has_pending_writes()):
            return False
        self._send = None
        return True

    def _write_records(self, send: MultiRecordsSend) -> bool:
        """``write`` for a response with file regions: its chunks as far as the
        socket takes them; the rest on the next writable event."""
        self._send_offset += send.write_to(self.transport)
        if not send.completed():
            return False
        if self.transport_buffers and self.transport.has_pending_writes():
            try:
                self.transport.write(_EMPTY)   # TLS: push out the last records
            except (BlockingIOError, InterruptedError):
                return False
            if self.transport.has_pending_writes():
                return False
        self._send = None
        return True

    def close(self) -> None:
        try:
            self.transport.close()
        except OSError:
            pass
        self.authenticator.close()
        self.decoder.close()   # a partial frame's pool grant goes back

    def __repr__(self) -> str:
        return f"KafkaChannel({self.id}, {self.mute_state.state.name})"


def _peer(sock: socket.socket) -> tuple:
    try:
        address = sock.getpeername()
    except OSError:
        return ("?", 0)
    if isinstance(address, tuple) and address:
        return (unmapped(address[0]), *address[1:])
    return address
