"""TransportLayer: how a channel's bytes reach the socket (Kafka's TransportLayer).

A KafkaChannel reads and writes only through its transport, so that a TLS
transport (SslTransportLayer, with a handshake of its own) can stand where
the plain one stands.  ``ready()`` says the transport carries application
data; ``handshake()`` moves a transport that is not ready on.  PLAINTEXT
and SASL_PLAINTEXT are always ready.
"""

from __future__ import annotations

import socket


class PlaintextTransportLayer:
    """The socket, unchanged (Kafka's ``PlaintextTransportLayer``)."""

    __slots__ = ("socket", "read", "write")

    def __init__(self, sock: socket.socket) -> None:
        self.socket = sock
        # read(n) and write(view) are the socket's own recv and send: the
        # PLAINTEXT hot path then pays no Python call for the indirection.
        self.read = sock.recv
        self.write = sock.send

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
