"""Transport layers: how a KafkaChannel moves bytes (Kafka's ``TransportLayer``).

Two kinds, with one interface the channel and the Selector use:

* :class:`PlaintextTransportLayer`: the socket itself; ``ready()`` at once.
* :class:`~kafka_net.network.ssl_transport_layer.SslTransportLayer` (a module
  of its own, so that only an SSL listener imports ``ssl``): TLS through an
  ``ssl.SSLObject`` over two ``ssl.MemoryBIO``s, the form of Kafka's
  ``SslTransportLayer`` (an ``SSLEngine`` between a netReadBuffer and a
  netWriteBuffer).  The socket
  stays non-blocking and only this class touches it; OpenSSL sees bytes
  only through the BIOs, so it never blocks and never reads the socket
  itself::

      socket --recv--> _incoming BIO --SSLObject--> _app (decrypted bytes)
      socket <--send-- _pending_out <--_outgoing BIO <--SSLObject-- write(view)

The interface (the Selector and KafkaChannel call nothing else):

``handshake()``          one non-blocking step of the TLS handshake; raises
                         :class:`SslAuthenticationException` if it failed
``ready()``              the handshake is done
``read(n)``              like ``socket.recv``: up to n bytes, ``b""`` at end of
                         stream, BlockingIOError when nothing is there
``write(view)``          like ``socket.send``: bytes of ``view`` taken (an empty
                         view only flushes); BlockingIOError if none
``transfer_from(region, position, count)``
                         Kafka's ``transferFrom``: up to ``count`` bytes of a
                         FileRegion's file from ``position``, straight from the
                         file (``os.sendfile``, plaintext) or through a bounded
                         buffer (TLS); bytes taken, BlockingIOError if none
``has_pending_reads()``  bytes already taken off the socket wait here: the
                         Selector must read without waiting for select (the
                         socket may never turn readable for them)
``has_pending_writes()`` encrypted bytes not yet on the socket: the send is not
                         complete until they are
``close()``
"""

from __future__ import annotations

import os
import socket

# Encrypted bytes taken from the socket per recv (a TLS record is at most 16 KiB
# plus overhead; more per call means fewer system calls).
NET_READ_CHUNK = 64 * 1024
# Plaintext encrypted per write() call: bounds the encrypted bytes held here for
# a slow reader to one chunk (plus TLS framing).
APP_WRITE_CHUNK = 64 * 1024


class SslAuthenticationException(Exception):
    """The TLS handshake failed (Kafka's ``SslAuthenticationException``, an
    ``AuthenticationException``): counted as a failed authentication."""


class PlaintextTransportLayer:
    """The socket, unchanged (Kafka's ``PlaintextTransportLayer``)."""

    __slots__ = ("socket", "read", "write")
    BUFFERS = False   # never holds bytes of its own (KafkaChannel.transport_buffers)

    def __init__(self, sock: socket.socket) -> None:
        self.socket = sock
        # read(n) and write(view) are the socket's own recv and send: the
        # PLAINTEXT hot path then pays no Python call for the indirection.
        self.read = sock.recv
        self.write = sock.send

    def transfer_from(self, region, position: int, count: int) -> int:
        """Kafka's ``FileChannel.transferTo``: the kernel copies file pages to the
        socket (sendfile), and no byte of the region passes through Python.  On
        the non-blocking socket it takes what fits and raises BlockingIOError
        when nothing does; 0 means the file ends before ``position + count``."""
        return os.sendfile(self.socket.fileno(), region.fd, position, count)

    def ready(self) -> bool:
        return True

    def handshake(self) -> None:
        pass

    def has_pending_reads(self) -> bool:
        return False

    def has_pending_writes(self) -> bool:
        return False

    def peer_certificate(self) -> dict | None:
        return None

    def close(self) -> None:
        self.socket.close()
