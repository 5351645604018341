"""A hostile TLS client (issue 20): renegotiation, and handshakes left half-open.

A TLS 1.2 renegotiation (a ClientHello on an established connection) is
refused and the connection closed, as Kafka's SslTransportLayer does
("Renegotiation requested, but it is not supported"); before, OpenSSL's
no_renegotiation alert stayed in the broker's buffer and the client waited
for a handshake that never came.  Python's ssl module cannot start a
renegotiation, so the real one comes from ``openssl s_client`` and its ``R``
command.

A handshake left half-open (a ClientHello, then nothing) holds OpenSSL's
handshake state, about 53 KB of RSS per connection on CPython 3.11 with
OpenSSL 3.0 (Python objects: about 2 KB, by tracemalloc); a connection that
sent nothing holds no TLS state at all (the SSLObject is made at its first
bytes).  ``connection.authentication.timeout.ms`` closes it, where before
only ``connections.max.idle.ms`` (10 minutes) did.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol import encode_request
from kafka_net.protocol.api_keys import ApiKey
from tests.support import API_VERSIONS_V3_BODY, LOOPBACK, running_server, wait_until
from tests.tls_support import client_hello, pki, tls_raw_client  # noqa: F401 (pki: fixture)

OPENSSL = shutil.which("openssl")


@pytest.fixture(scope="module")
def server(pki):  # noqa: F811
    props = {"listeners": f"SSL://{LOOPBACK}:0", "log.store": "memory",
             "num.network.threads": "1",
             "num.io.threads": "2", "shutdown.timeout.ms": "5000", **pki.broker_props()}
    with running_server(ServerConfig.from_properties(props)) as running:
        yield running


def open_channels(server) -> int:
    return sum(len(p.selector.channels) for p in server.socket_server.processors)


class SClient:
    """``openssl s_client`` on the SSL listener; its output read by a thread, so
    every wait here is bounded."""

    def __init__(self, port: int, ca: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [OPENSSL, "s_client", "-connect", f"{LOOPBACK}:{port}", "-CAfile", ca,
             *args],   # (no -ign_eof: with it s_client ignores its R and k commands)
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while chunk := self.proc.stdout.read1(4096):
            self.output += chunk

    def connected(self) -> bool:
        return b"Verify return code" in self.output and b"---\n" in self.output

    def command(self, line: bytes) -> None:
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def exited(self, timeout: float = 10.0) -> bool:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self._reader.join(5)
        return True

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.mark.skipif(OPENSSL is None, reason="needs the openssl command (s_client)")
def test_a_renegotiation_attempt_is_refused_and_closed(server, pki):  # noqa: F811
    client = SClient(server.bound_port("SSL"), pki.ca, "-tls1_2")
    try:
        assert wait_until(client.connected), client.output.decode(errors="replace")
        assert wait_until(lambda: open_channels(server) == 1)
        client.command(b"R\n")   # s_client: renegotiate
        # The broker closes: s_client (its stdin still open) sees the EOF and exits.
        assert client.exited(), client.output.decode(errors="replace")
        text = client.output.decode(errors="replace")
        assert "RENEGOTIATING" in text
        assert wait_until(lambda: open_channels(server) == 0)
    finally:
        client.close()
    # The broker serves TLS clients as before.
    with tls_raw_client(server.bound_port("SSL"), pki.client_context()) as bystander:
        assert bystander.call(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
    assert all(p.is_alive() for p in server.socket_server.processors)


@pytest.mark.skipif(OPENSSL is None, reason="needs the openssl command (s_client)")
def test_tls_1_3_key_update_is_not_a_renegotiation(server, pki):  # noqa: F811
    """s_client's ``k`` sends a TLS 1.3 KeyUpdate asking for the broker's: legal,
    and a request after it is answered."""
    client = SClient(server.bound_port("SSL"), pki.ca, "-tls1_3")
    try:
        assert wait_until(client.connected), client.output.decode(errors="replace")
        client.command(b"k\n")
        assert wait_until(lambda: b"KEYUPDATE" in client.output)
        client.command(encode_request(ApiKey.API_VERSIONS, 0, 0x0BADCAFE, {}))
        # The answer's correlation id, in what s_client prints of the data it got.
        assert wait_until(lambda: b"\x0b\xad\xca\xfe" in client.output), client.output
        assert open_channels(server) == 1
    finally:
        client.close()
    assert wait_until(lambda: open_channels(server) == 0)


# -- half-open handshakes ----------------------------------------------------------------

HALF_OPEN = 500
# What one half-open handshake may cost the process, as RSS growth (the test's
# own 500 client sockets included); measured: about 53 KB.
HALF_OPEN_BOUND_BYTES = 96 * 1024
AUTH_TIMEOUT_MS = 1500   # long enough to open all 500 on a busy 2-core machine


@pytest.fixture
def short_deadline_server(pki):  # noqa: F811
    props = {"listeners": f"SSL://{LOOPBACK}:0", "log.store": "memory",
             "num.network.threads": "1",
             "num.io.threads": "2", "shutdown.timeout.ms": "5000",
             "connection.authentication.timeout.ms": str(AUTH_TIMEOUT_MS),
             # 500 connects in a burst overflow Kafka's 50 (the client then waits
             # for its SYN's retransmission, a second).
             "socket.listen.backlog.size": "1024",
             **pki.broker_props()}
    with running_server(ServerConfig.from_properties(props)) as running:
        yield running


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def server_flight(sock: socket.socket) -> bool:
    """True once the broker answered the ClientHello (its ServerHello arrived)."""
    sock.settimeout(10)
    return sock.recv(5)[:1] == b"\x16"   # a handshake record


def closed(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except (socket.timeout, TimeoutError):
        return False
    return True


def test_half_open_handshakes_are_bounded_and_closed_by_the_deadline(
        short_deadline_server, pki):  # noqa: F811
    server = short_deadline_server
    port = server.bound_port("SSL")
    hello = client_hello()
    before = rss_bytes()
    socks = []
    try:
        for _ in range(HALF_OPEN):
            sock = socket.create_connection((LOOPBACK, port))
            socks.append(sock)
            sock.sendall(hello)
        assert all(server_flight(sock) for sock in socks)   # every handshake began
        grown = rss_bytes() - before
        assert grown < HALF_OPEN * HALF_OPEN_BOUND_BYTES, (
            f"{grown / HALF_OPEN:.0f} bytes per half-open handshake")
        # A bystander is served meanwhile (it finishes well before its deadline).
        with tls_raw_client(port, pki.client_context()) as bystander:
            assert bystander.call(ApiKey.API_VERSIONS, 3,
                                  API_VERSIONS_V3_BODY)["error_code"] == 0
        # Then the deadline closes every half-open one.
        assert all(closed(sock) for sock in socks)
        assert wait_until(lambda: open_channels(server) == 0)
    finally:
        for sock in socks:
            sock.close()
    assert all(p.is_alive() for p in server.socket_server.processors)


def test_a_connection_that_sends_nothing_holds_no_tls_state(short_deadline_server):
    server = short_deadline_server
    with socket.create_connection((LOOPBACK, server.bound_port("SSL"))) as sock:
        assert wait_until(lambda: open_channels(server) == 1)
        (channel,) = server.socket_server.processors[0].selector.channels.values()
        assert channel.transport._ssl is None
        assert closed(sock)   # the deadline holds for it too
