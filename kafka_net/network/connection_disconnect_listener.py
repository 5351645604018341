"""ConnectionDisconnectListener: how the API layer hears that a connection closed.

Kafka's ``org.apache.kafka.server.network.ConnectionDisconnectListener``: the
broker gives the SocketServer a list of them, and each Processor calls
``on_disconnect(connection_id)`` on its own thread for every connection it lets
go, whichever way it went (client EOF, a bad frame, idle expiry, a close the API
layer asked for, max.connections, shutdown).  The share session cache and the
client-metrics manager use it to drop what a connection created (KIP-932,
KIP-714).  The network layer knows only this interface; the server layer
implements it, so the import goes the right way down.

A listener runs on a network thread: it must be quick and must not block (hand
real work to another thread).  An exception it raises is logged by the
Processor and never ends it.
"""

from __future__ import annotations

from typing import Protocol


class ConnectionDisconnectListener(Protocol):
    def on_disconnect(self, connection_id: str) -> None:
        """``connection_id``: the id the Processor gave the connection, the one
        on every Request it read from it (Request.connection_id)."""
