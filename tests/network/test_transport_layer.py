"""SslTransportLayer on its own, over a socketpair: however the client's TLS bytes
are cut into segments, one handshake() or read() per arrival completes the
handshake and yields the application bytes intact; the broker's records come
out whole; nothing ever blocks (the socket is non-blocking and each call
returns or raises BlockingIOError at once).

The client is an ssl.SSLObject over MemoryBIOs too, so this test decides where
its bytes are cut.
"""

from __future__ import annotations

import socket
import ssl

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.config import ServerConfig
from kafka_net.network.ssl_factory import SslFactory
from kafka_net.network.ssl_transport_layer import SslTransportLayer
from kafka_net.network.transport_layer import PlaintextTransportLayer
from kafka_net.testing import split_at
from tests.tls_support import pki  # noqa: F401  (pki is a fixture)

PAYLOAD = bytes(range(256)) * 40   # 10 KiB: more than one TLS record in one write


class Client:
    """A TLS client whose outgoing bytes the test delivers in chosen pieces."""

    def __init__(self, pki) -> None:
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = pki.client_context().wrap_bio(self.incoming, self.outgoing,
                                                 server_hostname="localhost")

    def step(self) -> bool:
        try:
            self.tls.do_handshake()
            return True
        except ssl.SSLWantReadError:
            return False


def factory(pki) -> SslFactory:
    cfg = ServerConfig.from_properties({"listeners": "SSL://127.0.0.1:0",
                                        **pki.broker_props()})
    return SslFactory(cfg.ssl_config("SSL"))


def deliver(wire: socket.socket, data: bytes, cuts, on_arrival) -> None:
    for piece in split_at(data, cuts):
        wire.sendall(piece)
        on_arrival()


def pump_to_client(broker_side_client: socket.socket, client: Client) -> None:
    broker_side_client.setblocking(False)
    try:
        while data := broker_side_client.recv(65536):
            client.incoming.write(data)
    except BlockingIOError:
        pass


def safe_step(transport: SslTransportLayer) -> None:
    if not transport.ready():
        transport.handshake()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hello_cuts=st.lists(st.integers(1, 600), max_size=6),
       finish_cuts=st.lists(st.integers(1, 400), max_size=6),
       data_cuts=st.lists(st.integers(1, 11000), max_size=8))
def test_any_segmentation_gives_a_handshake_and_the_bytes_intact(
        pki, hello_cuts, finish_cuts, data_cuts):
    server_sock, wire = socket.socketpair()
    server_sock.setblocking(False)
    transport = factory_cache(pki).create_transport(server_sock)
    client = Client(pki)
    try:
        assert not client.step()
        deliver(wire, client.outgoing.read(), hello_cuts, lambda: safe_step(transport))
        pump_to_client(wire, client)
        assert client.step()                       # server flight received whole
        assert not transport.ready()
        client.tls.write(PAYLOAD)                  # Finished and data, one flight
        received = bytearray()

        def on_arrival():
            safe_step(transport)
            if transport.ready():
                _read_available(transport, received)

        deliver(wire, client.outgoing.read(), finish_cuts + data_cuts, on_arrival)
        while transport.has_pending_reads():       # bounded: each read takes bytes
            _read_available(transport, received)
        assert transport.ready()
        assert bytes(received) == PAYLOAD
        # And back: the broker's writes come out as whole records for the client.
        view, sent = memoryview(PAYLOAD), 0
        while sent < len(view) or transport.has_pending_writes():
            sent += transport.write(view[sent:])
        pump_to_client(wire, client)
        assert client.tls.read(len(PAYLOAD) + 1) + _drain(client) == PAYLOAD
    finally:
        transport.close()
        wire.close()


def _read_available(transport, received: bytearray) -> None:
    try:
        received += transport.read(1000)
    except BlockingIOError:
        pass


def _drain(client: Client) -> bytes:
    out = b""
    while True:
        try:
            out += client.tls.read(65536)
        except ssl.SSLWantReadError:
            return out


_FACTORIES: dict = {}


def factory_cache(pki) -> SslFactory:
    # One SSLContext per session: building it loads keys, not what is tested here.
    if pki.directory not in _FACTORIES:
        _FACTORIES[pki.directory] = factory(pki)
    return _FACTORIES[pki.directory]


def test_plaintext_transport_is_the_socket():
    a, b = socket.socketpair()
    with a, b:
        transport = PlaintextTransportLayer(a)
        assert transport.ready() and not transport.has_pending_reads()
        assert transport.write(memoryview(b"ping")) == 4
        assert b.recv(4) == b"ping"
        b.sendall(b"pong")
        assert transport.read(10) == b"pong"


def test_ssl_transport_end_of_stream_reads_empty(pki):
    server_sock, wire = socket.socketpair()
    server_sock.setblocking(False)
    transport = factory_cache(pki).create_transport(server_sock)
    client = Client(pki)
    client.step()
    wire.sendall(client.outgoing.read())
    transport.handshake()
    pump_to_client(wire, client)
    assert client.step()
    wire.sendall(client.outgoing.read())
    transport.handshake()
    assert transport.ready()
    pump_to_client(wire, client)   # the session tickets: unread, the close would be a reset
    wire.close()
    assert transport.read(10) == b""
    transport.close()
