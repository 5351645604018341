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
    def __init__(self, sock: socket.socket) -> None:
        self.socket = sock

    def ready(self) -> bool:
        return True

    def handshake(self) -> None:
        pass

    def read(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes``; b"" at EOF; raises BlockingIOError if none are there."""
        return self.socket.recv(max_bytes)

    def write(self, data) -> int:
        return self.socket.send(data)

    def close(self) -> None:
        self.socket.close()
