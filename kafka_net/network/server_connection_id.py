"""Connection ids, as Kafka's ``ServerConnectionId`` makes them.

``localHost:localPort-remoteHost:remotePort-processorId-index``: the index
counts the connections a Processor accepted and wraps at Int.MaxValue, so an
id is not reused while a request of an old connection with the same
addresses may still be in flight.  The id names the connection in every log
line, in the request context and in wire captures.
"""

from __future__ import annotations

import socket

INT_MAX = 2**31 - 1


class ConnectionIdGenerator:
    """One per Processor (only its thread calls :meth:`next_id`)."""

    def __init__(self, processor_id: int) -> None:
        self.processor_id = processor_id
        self._index = 0

    def next_id(self, sock: socket.socket) -> str:
        """The id of a newly accepted socket; raises OSError if the peer already left."""
        local, remote = host_port(sock.getsockname()), host_port(sock.getpeername())
        index = self._index
        self._index = 0 if index == INT_MAX else index + 1
        return f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}-{self.processor_id}-{index}"


def host_port(address) -> tuple:
    """(host, port) of a socket address.  TCP gives a tuple; a socketpair (AF_UNIX,
    used by tests driving a Processor directly) gives a str or bytes path, often
    empty, which used to fail with IndexError and refuse the connection."""
    if isinstance(address, tuple) and len(address) >= 2:
        return unmapped(address[0]), address[1]
    if isinstance(address, bytes):
        address = address.decode("utf-8", "replace")
    return (address or "local"), 0


def unmapped(host: str) -> str:
    """An IPv4 client of a dual-stack listener (``::ffff:127.0.0.1``) as the IPv4
    address it is (``127.0.0.1``), as Java's InetAddress shows it: in connection ids,
    logs and the host an ACL matches."""
    return host[7:] if host.startswith("::ffff:") and "." in host else host
