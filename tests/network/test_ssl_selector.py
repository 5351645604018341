"""The Selector over TLS, driven directly (no Processor): the handshake as
prepare() steps, and Kafka's three SocketServerTest cases for TLS data that
is already decrypted and buffered, which no select() announces again:
testLatencyWithBufferedDataAndNoSocketData, testUnmuteChannelWithBufferedReceives
and idleExpiryWithBufferedReceives.

The client end is a non-blocking ssl.SSLSocket in this thread, its handshake
interleaved with the selector's polls.  To keep decrypted bytes in the
transport, the channel reads 8 bytes per call here (READ_CHUNK), so one TLS
record of a request leaves most of it buffered after the first read.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import time

import pytest

from kafka_net.config import ServerConfig
from kafka_net.network import kafka_channel
from kafka_net.network.channel_builder import ChannelBuilder
from kafka_net.network.mute_state import ChannelMuteEvent as Ev
from kafka_net.network.selector import Selector
from kafka_net.network.ssl_factory import SslFactory
from kafka_net.network.wakeup import WakeupSocketpair
from tests.network.test_selector import frame, run_selector_until
from tests.tls_support import CLIENT_DN, pki  # noqa: F401  (pki is a fixture)


def ssl_selector(pki, idle_ms: int = -1, client_auth: str = "none") -> Selector:
    cfg = ServerConfig.from_properties({"listeners": "SSL://127.0.0.1:0",
                                        **pki.broker_props(client_auth)})
    builder = ChannelBuilder("SSL", SslFactory(cfg.ssl_config("SSL")))
    return Selector(1 << 20, idle_ms, WakeupSocketpair(), name="test",
                    channel_builder=builder)


@contextlib.contextmanager
def tls_pair(selector, context: ssl.SSLContext, connection_id: str = "c1"):
    """A TLS client connected to ``selector`` through a socketpair, handshake done."""
    server_side, client_side = socket.socketpair()
    server_side.setblocking(False)
    selector.register(connection_id, server_side)
    client = context.wrap_socket(client_side, server_hostname="localhost",
                                 do_handshake_on_connect=False)
    client.setblocking(False)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert time.monotonic() < deadline, "handshake did not finish"
            try:
                client.do_handshake()
                break
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                selector.poll(0.01)
        run_selector_until(selector, lambda: selector.channels[connection_id].ready())
        client.settimeout(10)
        yield client
    finally:
        client.close()
        selector.close_all()
        selector._wakeup.close()


def has_socket_bytes(selector, connection_id: str) -> bool:
    sock = selector.channels[connection_id].socket
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False


def poll_at_once(selector, predicate, polls: int = 200) -> bool:
    """Poll with timeout 0 (no waiting for the socket) until ``predicate()``."""
    for _ in range(polls):
        if predicate():
            return True
        selector.poll(0)
    return predicate()


@pytest.fixture
def small_reads(monkeypatch):
    monkeypatch.setattr(kafka_channel, "READ_CHUNK", 8)


def test_handshake_then_request_and_response(pki):
    selector = ssl_selector(pki)
    with tls_pair(selector, pki.client_context()) as client:
        client.sendall(frame(b"hello over tls"))
        run_selector_until(selector, lambda: selector.completed_receives)
        channel, request = selector.completed_receives.pop(0)
        assert request == b"hello over tls"
        assert channel.principal() == "User:ANONYMOUS"
        selector.send("c1", frame(b"answer"))
        run_selector_until(selector, lambda: "c1" in selector.completed_sends)
        assert client.recv(100) == frame(b"answer")
        assert selector.auth_counts["successful-authentication-total"] == 1


def test_client_certificate_gives_the_principal(pki):
    selector = ssl_selector(pki, client_auth="required")
    with tls_pair(selector, pki.client_context("client")):
        assert selector.channels["c1"].principal() == f"User:{CLIENT_DN}"


def test_latency_with_buffered_data_and_no_socket_data(pki, small_reads):
    # Kafka's testLatencyWithBufferedDataAndNoSocketData: the whole request came
    # in one TLS record and was taken off the socket by the first read; the rest
    # of it waits decrypted in the transport.  Polls that do not wait for the
    # socket (timeout 0) must still deliver it: no select will report it.
    selector = ssl_selector(pki)
    with tls_pair(selector, pki.client_context()) as client:
        client.sendall(frame(b"x" * 200))
        run_selector_until(selector, lambda: selector.channels["c1"].has_bytes_buffered())
        assert not has_socket_bytes(selector, "c1")
        assert poll_at_once(selector, lambda: selector.completed_receives)
        assert selector.completed_receives[0][1] == b"x" * 200


def test_unmute_channel_with_buffered_receives(pki, small_reads):
    # Kafka's testUnmuteChannelWithBufferedReceives: a muted channel's buffered
    # bytes are not read; once it is unmuted they are, without socket data.
    selector = ssl_selector(pki)
    with tls_pair(selector, pki.client_context()) as client:
        client.sendall(frame(b"first") + frame(b"second" * 20))
        run_selector_until(selector, lambda: selector.completed_receives)
        channel, request = selector.completed_receives.pop(0)
        assert request == b"first"
        selector.mute("c1")
        channel.mute_state.handle(Ev.REQUEST_RECEIVED)
        buffered = channel.decoder.buffered()
        for _ in range(20):
            selector.poll(0)
        assert selector.completed_receives == []
        assert channel.decoder.buffered() == buffered     # not read while muted
        assert channel.has_bytes_buffered()
        assert not has_socket_bytes(selector, "c1")
        channel.mute_state.handle(Ev.RESPONSE_SENT)
        assert selector.unmute("c1")
        assert poll_at_once(selector, lambda: selector.completed_receives)
        assert selector.completed_receives[0][1] == b"second" * 20


def test_idle_expiry_with_buffered_receives(pki, small_reads):
    # Kafka's idleExpiryWithBufferedReceives: buffered bytes of a muted channel
    # do not keep it alive; connections.max.idle.ms still closes it.
    selector = ssl_selector(pki, idle_ms=200)
    with tls_pair(selector, pki.client_context()) as client:
        client.sendall(frame(b"first") + frame(b"second" * 20))
        run_selector_until(selector, lambda: selector.completed_receives)
        channel, _ = selector.completed_receives.pop(0)
        selector.mute("c1")
        channel.mute_state.handle(Ev.REQUEST_RECEIVED)
        assert channel.has_bytes_buffered()
        run_selector_until(selector, lambda: selector.disconnected)
        assert selector.disconnected == [
            ("c1", "idle for longer than connections.max.idle.ms")]


def test_failed_handshake_is_counted_and_closes_only_that_channel(pki):
    selector = ssl_selector(pki)
    with tls_pair(selector, pki.client_context()) as good:
        server_side, bad = socket.socketpair()
        server_side.setblocking(False)
        selector.register("bad", server_side)
        bad.sendall(b"GET / HTTP/1.1\r\n\r\n")
        run_selector_until(selector, lambda: selector.disconnected)
        (connection_id, reason), = selector.disconnected
        assert connection_id == "bad" and reason.startswith("failed authentication: ")
        assert selector.auth_counts["failed-authentication-total"] == 1
        good.sendall(frame(b"still served"))
        run_selector_until(selector, lambda: selector.completed_receives)
        assert selector.completed_receives[0][1] == b"still served"
        bad.close()


def test_eof_mid_handshake_is_a_disconnect_not_a_failed_authentication(pki):
    # Kafka's EOFException "EOF during handshake": a TCP health check connects
    # and closes; that is no authentication failure.
    selector = ssl_selector(pki)
    try:
        server_side, client = socket.socketpair()
        server_side.setblocking(False)
        selector.register("probe", server_side)
        client.close()
        run_selector_until(selector, lambda: selector.disconnected)
        (connection_id, reason), = selector.disconnected
        assert connection_id == "probe" and "EOF during handshake" in reason
        assert selector.auth_counts["failed-authentication-total"] == 0
    finally:
        selector.close_all()
        selector._wakeup.close()


@pytest.mark.parametrize("certificate, principal", [
    (None, "User:ANONYMOUS"), ("client", f"User:{CLIENT_DN}")])
def test_requested_client_auth_takes_a_certificate_if_one_is_sent(pki, certificate,
                                                                  principal):
    selector = ssl_selector(pki, client_auth="requested")
    with tls_pair(selector, pki.client_context(certificate)):
        assert selector.channels["c1"].principal() == principal


# -- SASL_SSL: the authenticator's frames come through the TLS transport -------------------


def test_sasl_frames_in_one_tls_record_are_read_without_another_select(pki):
    """SASL_SSL's order (TLS handshake, then the authenticator) and Kafka's
    keysWithBufferedRead for an authenticating channel: two SASL tokens and a
    request in one TLS record are decrypted by the first read; the authenticator
    takes one frame per prepare(), and what is left waits in the transport,
    where no select sees it.  Polls with timeout 0 must still get through all
    of it: the exchange completes, then the request reaches the Processor."""
    from tests.network.test_channel_authentication import FakeAuthenticator

    class SaslSslBuilder(ChannelBuilder):
        def build(self, *args, **kwargs):
            channel = super().build(*args, **kwargs)
            channel.authenticator = FakeAuthenticator(channel)
            return channel

    cfg = ServerConfig.from_properties({"listeners": "SSL://127.0.0.1:0",
                                        **pki.broker_props()})
    selector = Selector(1 << 20, -1, WakeupSocketpair(), name="test",
                        channel_builder=SaslSslBuilder("SSL", SslFactory(cfg.ssl_config("SSL"))))
    server_side, client_side = socket.socketpair()
    server_side.setblocking(False)
    channel = selector.register("c1", server_side)
    client = pki.client_context().wrap_socket(client_side, server_hostname="localhost",
                                              do_handshake_on_connect=False)
    client.setblocking(False)
    try:
        deadline = time.monotonic() + 10
        while not channel.transport.ready():
            assert time.monotonic() < deadline, "handshake did not finish"
            try:
                client.do_handshake()
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
            selector.poll(0.01)
        assert not channel.ready()   # TLS is up; the SASL exchange has not begun
        client.settimeout(10)
        client.sendall(frame(b"token") + frame(b"open") + frame(b"request"))
        run_selector_until(selector, lambda: channel.ready() or "c1" not in selector.channels)
        assert channel.ready() and channel.principal() == "User:fake"
        assert not has_socket_bytes(selector, "c1")   # the rest is in the transport only
        assert poll_at_once(selector, lambda: selector.completed_receives)
        assert bytes(selector.completed_receives[0][1]) == b"request"
        assert client.recv(100) == frame(b"ok")   # the answer to b"token", encrypted
        assert selector.auth_counts["successful-authentication-total"] == 1
    finally:
        client.close()
        selector.close_all()
        selector._wakeup.close()
