"""SslTransportLayer: TLS through an ``ssl.SSLObject`` over two ``ssl.MemoryBIO``s
(Kafka's ``SslTransportLayer``); the interface it shares with the plaintext
transport is described in :mod:`kafka_net.network.transport_layer`.

A module of its own so that ``ssl`` (OpenSSL's bindings, a few milliseconds to
import) is imported only by a broker with an SSL or SASL_SSL listener: the
SslFactory imports this module, and the SocketServer imports the SslFactory
only for such a listener (issue 28: time to listen).
"""

from __future__ import annotations

import os
import socket
import ssl

from kafka_net.network.transport_layer import (
    APP_WRITE_CHUNK, NET_READ_CHUNK, SslAuthenticationException)

# Both BIOs of a transport whose handshake has not begun: never written, so
# ``pending`` is 0 and the checks that read it need no test for "not yet".
_NO_BIO = ssl.MemoryBIO()


class SslRenegotiationError(ConnectionError):
    """The peer tried to renegotiate TLS (1.2 and earlier): Kafka's SslTransportLayer
    refuses ("Renegotiation requested, but it is not supported") and the
    connection closes; a ConnectionError, so the Selector's I/O path closes it."""


class SslTransportLayer:
    """TLS over a non-blocking socket, one step per call, never blocking."""

    BUFFERS = True   # decrypted bytes and encrypted records wait in it

    def __init__(self, sock: socket.socket, context: ssl.SSLContext) -> None:
        self.socket = sock
        self._context = context
        # The SSLObject and its BIOs are made when the ClientHello's first bytes
        # arrive (_start): a connection that sends nothing costs what a plaintext
        # one does, not OpenSSL's ~10 KB (README, "Protection").  Until then both
        # BIOs are the shared, always empty _NO_BIO.
        self._incoming = self._outgoing = _NO_BIO
        self._ssl: ssl.SSLObject | None = None
        self._handshake_done = False
        self._app = bytearray()          # decrypted, not yet read (Kafka's appReadBuffer)
        self._pending_out = bytearray()  # encrypted, not yet sent (netWriteBuffer)
        # True while _incoming holds only part of a record: more socket bytes are
        # needed, so it is not "pending" (a poll with timeout 0 would spin).
        self._incoming_partial = False
        self._eof = False
        # TLS 1.3 has no renegotiation (and its post-handshake messages may make
        # OpenSSL answer during a read): the check below is for older versions.
        self._tls13 = False

    # -- handshake ---------------------------------------------------------------------

    def ready(self) -> bool:
        return self._handshake_done

    def handshake(self) -> None:
        """Send what is waiting, take what arrived, and advance the handshake as far
        as those bytes allow.  Kafka's SslTransportLayer.handshake, with OpenSSL's
        state machine in place of the SSLEngine's NEED_WRAP/NEED_UNWRAP loop."""
        if self._ssl is None and not self._start():
            return
        self._flush()
        self._receive()
        try:
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            if self._eof:
                # Kafka's EOFException: a disconnect, not a failed authentication
                # (a load balancer's TCP health check connects and closes).
                raise ConnectionAbortedError("EOF during handshake")
        except ssl.SSLError as exc:
            self._flush_quietly()   # the alert that tells the client why
            raise SslAuthenticationException(f"SSL handshake failed: {_reason(exc)}") from None
        else:
            self._handshake_done = True
            self._tls13 = self._ssl.version() == "TLSv1.3"
            # Application data sent right behind the client's Finished (TLS 1.3
            # clients do) is in _incoming now: decrypt it, so has_pending_reads
            # says so and the Selector reads it without waiting for the socket.
            self._decrypt()
        self._flush()

    def _start(self) -> bool:
        """The first bytes of the handshake: make the SSLObject and its BIOs and
        hand them those bytes; False while the socket has none."""
        try:
            data = self.socket.recv(NET_READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return False
        if not data:
            raise ConnectionAbortedError("EOF during handshake")   # see handshake()
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._ssl = self._context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._incoming.write(data)
        return True

    # -- reads -------------------------------------------------------------------------

    def read(self, n: int) -> bytes:
        if not self._app and not self._eof:
            self._receive()
            self._decrypt()
        if not self._app:
            if self._eof:
                return b""
            raise BlockingIOError("no application data")
        data = bytes(self._app[:n])
        del self._app[:n]
        return data

    def has_pending_reads(self) -> bool:
        return bool(self._app) or (self._incoming.pending > 0 and not self._incoming_partial)

    def _receive(self) -> None:
        """Move what the socket holds into _incoming (one recv)."""
        try:
            data = self.socket.recv(NET_READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            self._eof = True
            return
        self._incoming.write(data)
        self._incoming_partial = False

    def _decrypt(self) -> None:
        written = self._outgoing.pending
        while True:
            try:
                chunk = self._ssl.read(NET_READ_CHUNK)
            except ssl.SSLWantReadError:
                self._incoming_partial = self._incoming.pending > 0
                if self._outgoing.pending > written and not self._tls13:
                    self._refuse_renegotiation()
                return
            except ssl.SSLZeroReturnError:   # close_notify: the peer's orderly end
                self._eof = True
                return
            if not chunk:
                self._eof = True
                return
            self._app += chunk

    def _refuse_renegotiation(self) -> None:
        """Before TLS 1.3 the only bytes OpenSSL writes while reading application
        data are its answer to a ClientHello on an established connection: the
        no_renegotiation alert (the context sets OP_NO_RENEGOTIATION).  OpenSSL
        would then carry on and the client wait for a handshake that never comes;
        Kafka closes instead.  The alert goes out first, so the client knows why."""
        self._flush_quietly()
        raise SslRenegotiationError("Renegotiation requested, but it is not supported")

    # -- writes ------------------------------------------------------------------------

    def write(self, view: memoryview) -> int:
        self._flush()
        if self._pending_out or not view:
            if self._pending_out:
                raise BlockingIOError("previous TLS records not yet sent")
            return 0
        taken = self._ssl.write(view[:APP_WRITE_CHUNK])
        self._flush()
        return taken

    def transfer_from(self, region, position: int, count: int) -> int:
        """Kafka's ``SslTransportLayer.transferFrom``: a file cannot go to the
        socket around the TLS engine, so at most ``APP_WRITE_CHUNK`` bytes of it
        are read into memory, encrypted and sent; nothing more is read until
        those records are on the socket.  A slow reader costs one chunk, not
        the region.  0 means the file ends before ``position + count``."""
        self._flush()
        if self._pending_out:
            raise BlockingIOError("previous TLS records not yet sent")
        data = os.pread(region.fd, min(count, APP_WRITE_CHUNK), position)
        if not data:
            return 0
        return self.write(memoryview(data))

    def has_pending_writes(self) -> bool:
        return bool(self._pending_out) or self._outgoing.pending > 0

    def _flush(self) -> None:
        if self._outgoing.pending:
            self._pending_out += self._outgoing.read()
        if not self._pending_out:
            return
        try:
            sent = self.socket.send(self._pending_out)
        except (BlockingIOError, InterruptedError):
            return
        del self._pending_out[:sent]

    def _flush_quietly(self) -> None:
        try:
            self._flush()
        except OSError:
            pass

    # -- the peer ----------------------------------------------------------------------

    def peer_certificate(self) -> dict | None:
        """The client's verified certificate (``getpeercert()``'s dict), or None:
        none sent, or ssl.client.auth=none (then none is asked for)."""
        if not self._handshake_done:
            return None
        return self._ssl.getpeercert() or None

    def cipher(self) -> tuple | None:
        return self._ssl.cipher() if self._ssl is not None else None

    def close(self) -> None:
        # No close_notify: Kafka's close() tries one, but a client that is gone
        # would make us wait for nothing, and clients treat an EOF the same way.
        self.socket.close()


def _reason(exc: ssl.SSLError) -> str:
    # "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1000)" -> the part
    # that means something to an operator.
    text = exc.strerror or str(exc)
    return text.split(" (_ssl.c")[0]
