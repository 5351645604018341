"""The transport/authenticator seam of KafkaChannel and the Selector (Kafka's
KafkaChannel.prepare/ready and Selector.pollSelectionKeys), with a fake
authenticator: a channel that is not ready is never read for requests, its
events drive prepare(); success lets requests in; failure closes only it."""

from __future__ import annotations

import select
import socket
import struct

import pytest

from kafka_net.network.authenticator import AuthenticationError, NetworkReceive
from kafka_net.network.kafka_channel import KafkaChannel
from kafka_net.network.selector import Selector
from kafka_net.network.wakeup import WakeupSocketpair
from tests.network.test_selector import connectable, run_selector_until


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class FakeAuthenticator:
    """Completes on a frame b"open", fails on b"bad", answers b"ok" to anything else."""

    def __init__(self, channel) -> None:
        self.channel = channel
        self.receive = NetworkReceive(1000)
        self.done = False
        self.failure_sent = False

    def authenticate(self) -> None:
        token = self.receive.read_from(self.channel.transport)
        if token == b"bad":
            raise AuthenticationError("bad token")
        if token == b"open":
            self.done = True
        elif token is not None:
            self.channel.set_send(frame(b"ok"))
            self.channel.write()

    def complete(self) -> bool:
        return self.done

    def principal(self) -> str:
        return "User:fake" if self.done else "User:ANONYMOUS"

    def session_expiration_ns(self):
        return None

    def send_failure_response(self) -> None:
        self.failure_sent = True

    def close(self) -> None:
        pass


class FakeBuilder:
    security_protocol = "SASL_PLAINTEXT"

    def build(self, connection_id, sock, max_frame_size, memory_pool=None):
        channel = KafkaChannel(connection_id, sock, max_frame_size, memory_pool)
        channel.authenticator = FakeAuthenticator(channel)
        return channel


@pytest.fixture(params=[0, 50], ids=["no-delay", "delayed-close"])
def sel(request):
    with connectable(Selector(1 << 20, -1, WakeupSocketpair(), name="test",
                              channel_builder=FakeBuilder(),
                              failed_authentication_delay_ms=request.param)) as s:
        yield s


def recv_frame(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
    return sock.recv(size, socket.MSG_WAITALL)


def test_prepare_runs_the_transport_handshake_before_the_authenticator():
    calls = []

    class Transport:
        ready_now = False

        def ready(self):
            return self.ready_now

        def handshake(self):
            calls.append("handshake")
            self.ready_now = True

        def close(self):
            pass

    class Auth(FakeAuthenticator):
        def authenticate(self):
            calls.append("authenticate")
            self.done = True

    a, b = socket.socketpair()
    channel = KafkaChannel("c", a, 100, transport=Transport())
    channel.authenticator = Auth(channel)
    assert not channel.ready()
    channel.prepare()
    assert calls == ["handshake", "authenticate"] and channel.ready()
    assert channel.successful_authentications == 1 and channel.principal() == "User:fake"
    channel.close()
    b.close()


def test_frames_before_authentication_go_to_the_authenticator_not_the_processor(sel):
    client = sel.connect("c1")
    client.sendall(frame(b"hello"))
    run_selector_until(sel, lambda: select.select([client], [], [], 0)[0])
    assert recv_frame(client) == b"ok"
    assert sel.completed_receives == []
    client.sendall(frame(b"open") + frame(b"request"))
    run_selector_until(sel, lambda: sel.completed_receives)
    (channel, request), = sel.completed_receives
    assert bytes(request) == b"request" and channel.principal() == "User:fake"
    assert sel.auth_counts["successful-authentication-total"] == 1


def test_a_failed_authentication_closes_that_channel_only(sel):
    good, bad = sel.connect("good"), sel.connect("bad")
    good.sendall(frame(b"open"))
    run_selector_until(sel, lambda: sel.channels["good"].ready())
    bad_channel = sel.channels["bad"]
    bad.sendall(frame(b"bad"))
    run_selector_until(sel, lambda: "bad" not in sel.channels)
    assert bad_channel.authenticator.failure_sent
    assert sel.disconnected == [("bad", "failed authentication: bad token")]
    assert sel.auth_counts["failed-authentication-total"] == 1
    good.sendall(frame(b"still here"))
    run_selector_until(sel, lambda: sel.completed_receives)
    assert bytes(sel.completed_receives[0][1]) == b"still here"


def test_a_frame_larger_than_the_receive_limit_fails_authentication(sel):
    client = sel.connect("c1")
    client.sendall(struct.pack(">i", 1001))
    run_selector_until(sel, lambda: "c1" not in sel.channels)
    assert "invalid receive size" in sel.disconnected[0][1]


# -- NetworkReceive and the SASL state machine under any input ----------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kafka_net.network.authenticator import SaslServerAuthenticator  # noqa: E402
from kafka_net.network.channel_builder import AuthenticationHooks  # noqa: E402
from kafka_net.protocol.errors import InvalidRequestError  # noqa: E402
from kafka_net.security.credential_cache import CredentialCache  # noqa: E402
from kafka_net.security.plain import PlainSaslServer  # noqa: E402


class ChunkTransport:
    """Hands out the given chunks one read at a time, then 'nothing now'."""

    def __init__(self, chunks) -> None:
        self.chunks = list(chunks)

    def read(self, n: int) -> bytes:
        if not self.chunks:
            raise BlockingIOError
        chunk = self.chunks.pop(0)
        if len(chunk) > n:
            self.chunks.insert(0, chunk[n:])
        return chunk[:n]


@given(payloads=st.lists(st.binary(max_size=50), min_size=1, max_size=4), data=st.data())
def test_network_receive_returns_exact_frames_over_any_segmentation(payloads, data):
    stream = b"".join(frame(p) for p in payloads)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(stream) - 1)), max_size=8)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)]) if a < b]
    receive, transport, got = NetworkReceive(1000), ChunkTransport(chunks), []
    while len(got) < len(payloads):
        payload = receive.read_from(transport)
        if payload is not None:
            got.append(payload)
    assert got == payloads


def _hooks() -> AuthenticationHooks:
    from kafka_net.server.apis import HANDLERS
    supported = {key: module.VERSIONS for key, module in HANDLERS.items()}
    return AuthenticationHooks(
        CredentialCache(), lambda parsed: {"error_code": 0, "api_keys": []},
        lambda: supported,
        lambda parsed, code: HANDLERS[parsed.header.api_key].error_response(
            parsed.body, parsed.header.api_version, code))


# Frames with a plausible request header (any API key and version, null client
# id) and a random body, as well as plain garbage.
_headed = st.builds(lambda key, version, body: struct.pack(">hhih", key, version, 1, -1) + body,
                    st.sampled_from([0, 3, 17, 18, 36, 99]), st.integers(-1, 5),
                    st.binary(max_size=30))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=40), _headed), min_size=1, max_size=4))
def test_any_frames_leave_the_sasl_authenticator_in_a_defined_state(frames):
    # Garbage in: the exchange completes, waits, or fails with an error the Selector
    # closes on; nothing else escapes the network thread.
    a, b = socket.socketpair()
    a.setblocking(False)
    try:
        channel = KafkaChannel("c", a, 1 << 20)
        channel.authenticator = SaslServerAuthenticator(
            channel, "SASL_PLAINTEXT", ("PLAIN",),
            lambda mechanism: PlainSaslServer({"alice": "secret"}), _hooks())
        b.sendall(b"".join(frame(f) for f in frames))
        for _ in range(len(frames) + 1):
            try:
                channel.prepare()
            except (AuthenticationError, InvalidRequestError, OSError):
                break
    finally:
        a.close()
        b.close()
