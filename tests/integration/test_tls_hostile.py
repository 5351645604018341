"""A hostile TLS client (issue 20): renegotiation.

A TLS 1.2 renegotiation (a ClientHello on an established connection) is
refused and the connection closed, as Kafka's SslTransportLayer does
("Renegotiation requested, but it is not supported"); before, OpenSSL's
no_renegotiation alert stayed in the broker's buffer and the client waited
for a handshake that never came.  Python's ssl module cannot start a
renegotiation, so the real one comes from ``openssl s_client`` and its ``R``
command.
"""

from __future__ import annotations

import shutil
import subprocess
import threading

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol import encode_request
from kafka_net.protocol.api_keys import ApiKey
from tests.support import API_VERSIONS_V3_BODY, LOOPBACK, running_server, wait_until
from tests.tls_support import pki, tls_raw_client  # noqa: F401 (pki: fixture)

OPENSSL = shutil.which("openssl")


@pytest.fixture(scope="module")
def server(pki):  # noqa: F811
    props = {"listeners": f"SSL://{LOOPBACK}:0", "num.network.threads": "1",
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
