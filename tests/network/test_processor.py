"""A Processor driven directly (no Acceptor): sockets are handed to ``accept`` and the test
plays the request-handler side of the RequestChannel.  Reference 1.C, 1.D, 1.E; SocketServerTest
4.1 (testNoOpAction, testConnectionId, testGracefulClose), 4.2 and 4.5."""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading

import pytest

from kafka_net.network import processor as processor_module
from kafka_net.network.mute_state import ChannelMuteState as S
from kafka_net.network.processor import Processor
from kafka_net.network.request_channel import (
    CloseConnectionResponse, EndThrottlingResponse, NoOpResponse, RequestChannel, SendResponse,
    StartThrottlingResponse)
from kafka_net.protocol import decode_response, encode_request
from kafka_net.server.broker import BrokerCore
from tests.network.helpers import still_open
from tests.support import (
    LOOPBACK, closed_by_peer, make_config, recv_exactly, recv_frame, wait_until)

TIMEOUT = 10.0


class Env:
    """One started Processor (id 0) and its RequestChannel."""

    def __init__(self, config, parse_request=None, queue_size: int = 50) -> None:
        self.config = config
        core = BrokerCore(config, RequestChannel(queue_size))
        self.channel, self.apis = core.request_channel, core.apis
        self.processor = Processor(0, "PLAINTEXT", self.channel,
                                   parse_request or self.apis.parse_request, config)
        self.channel.add_processor(self.processor)
        self.processor.start()
        self._open: list[socket.socket] = []

    # -- connections ------------------------------------------------------------------

    def socketpair(self) -> socket.socket:
        """A connected pair; the server end goes to the Processor; returns the client end."""
        client, server = socket.socketpair()
        return self._hand_over(client, server)

    def tcp_pair(self, server_sndbuf: int | None = None) -> socket.socket:
        with socket.create_server((LOOPBACK, 0)) as listener:
            listener.settimeout(TIMEOUT)
            client = socket.create_connection(listener.getsockname(), timeout=TIMEOUT)
            server, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the Acceptor does
        if server_sndbuf is not None:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, server_sndbuf)
        return self._hand_over(client, server)

    def _hand_over(self, client: socket.socket, server: socket.socket) -> socket.socket:
        client.settimeout(TIMEOUT)
        server.setblocking(False)  # the Acceptor's job
        self._open += [client, server]
        assert self.processor.accept(server, may_block=False)
        return client

    # -- the handler side -------------------------------------------------------------

    def next_request(self, timeout: float = TIMEOUT):
        request = self.channel.receive_request(timeout)
        assert request is not None, "no request reached the RequestChannel"
        return request

    def no_request(self, timeout: float = 0.3) -> bool:
        return self.channel.receive_request(timeout) is None

    def answer(self, request, body=None) -> None:
        """Answer with the real handler (an ApiVersions/Metadata response)."""
        self.apis.handle(request)

    def channel_of(self, request):
        return self.processor.selector.channels.get(request.connection_id)

    def close(self) -> None:
        self.processor.begin_shutdown()
        self.processor.join(TIMEOUT)
        assert not self.processor.is_alive()
        for s in self._open:
            s.close()


@pytest.fixture
def env():
    e = Env(make_config())
    try:
        yield e
    finally:
        e.close()


def api_versions_frame(correlation_id: int, version: int = 0) -> bytes:
    body = ({"client_software_name": "t", "client_software_version": "1"}
            if version >= 3 else {})
    return encode_request(18, version, correlation_id, body)


def recv_api_versions(sock: socket.socket, version: int = 0) -> tuple[int, dict]:
    return decode_response(18, version, recv_frame(sock))


# --- request in, response out ----------------------------------------------------------------

def test_request_lands_on_the_request_channel(env):
    client = env.socketpair()
    client.sendall(api_versions_frame(7, version=3))
    request = env.next_request()
    assert request.processor_id == 0
    assert request.listener_name == "PLAINTEXT"
    assert (request.header.api_key, request.header.api_version) == (18, 3)
    assert request.header.correlation_id == 7
    assert request.header.client_id == "kafka-net"
    assert request.body["client_software_name"] == "t"
    assert request.client_software == ("t", "1")  # KIP-511 captured on the network thread
    assert request.connection_id in env.processor.selector.channels
    env.answer(request)
    correlation_id, body = recv_api_versions(client, 3)
    assert correlation_id == 7 and body["error_code"] == 0


def test_connection_is_muted_until_the_response_is_written(env):
    client = env.socketpair()
    client.sendall(api_versions_frame(1) + api_versions_frame(2))  # pipelined
    first = env.next_request()
    assert first.header.correlation_id == 1
    # The Processor queues the request, then mutes (it also handles the response).
    assert wait_until(
        lambda: env.channel_of(first).mute_state.state is S.MUTED_AND_RESPONSE_PENDING, 5)
    # The second request is in the server's buffer but must not be handed out.
    assert env.no_request()
    env.answer(first)
    assert recv_api_versions(client)[0] == 1
    second = env.next_request()
    assert second.header.correlation_id == 2
    env.answer(second)
    assert recv_api_versions(client)[0] == 2
    assert wait_until(lambda: env.channel_of(second).mute_state.state is S.NOT_MUTED, 5)


def test_noop_response_unmutes_without_writing(env):
    # SocketServerTest.testNoOpAction: 3 pipelined requests, each answered by a NoOp.
    client = env.socketpair()
    client.sendall(b"".join(api_versions_frame(i) for i in range(3)))
    for i in range(3):
        request = env.next_request()
        assert request.header.correlation_id == i
        assert env.no_request(0.1)  # the next one waits for the NoOp
        env.channel.send_response(NoOpResponse(request))
    assert still_open(client, 0.2)  # nothing written: no data, no EOF
    assert wait_until(lambda: all(c.mute_state.state is S.NOT_MUTED
                                  for c in env.processor.selector.channels.values()), 5)
    # Still usable afterwards.
    client.sendall(api_versions_frame(9))
    env.answer(env.next_request())
    assert recv_api_versions(client)[0] == 9


def test_close_connection_response_closes(env):
    client = env.socketpair()
    other = env.socketpair()
    client.sendall(api_versions_frame(1))
    request = env.next_request()
    env.channel.send_response(CloseConnectionResponse(request))
    assert closed_by_peer(client)
    assert wait_until(lambda: request.connection_id not in env.processor.selector.channels, 5)
    other.sendall(api_versions_frame(2))
    env.answer(env.next_request())
    assert recv_api_versions(other)[0] == 2


def test_response_for_a_closed_connection_is_dropped(env, caplog):
    client = env.socketpair()
    client.sendall(api_versions_frame(1))
    request = env.next_request()
    env.channel.send_response(CloseConnectionResponse(request))
    assert closed_by_peer(client)
    with caplog.at_level(logging.WARNING, logger="kafka_net.network.processor"):
        env.answer(request)  # its connection is gone
        assert wait_until(lambda: any(request.connection_id in r.getMessage()
                                      for r in caplog.records), 5)
    assert env.processor.is_alive()


def test_send_response_while_throttled_keeps_channel_muted(env):
    # testSendActionResponseWithThrottledChannelWhereThrottlingInProgress, on a real Processor.
    client = env.socketpair()
    client.sendall(api_versions_frame(1) + api_versions_frame(2))
    first = env.next_request()
    env.channel.send_response(StartThrottlingResponse(first))
    env.answer(first)
    assert recv_api_versions(client)[0] == 1  # the response is sent at once (KIP-219)
    assert wait_until(lambda: env.channel_of(first).mute_state.state is S.MUTED_AND_THROTTLED, 5)
    assert env.no_request()  # still throttled: the pipelined request waits
    env.channel.send_response(EndThrottlingResponse(first))
    second = env.next_request()
    assert second.header.correlation_id == 2
    env.answer(second)
    assert recv_api_versions(client)[0] == 2


def test_throttle_ended_before_send_unmutes_after_send(env):
    client = env.socketpair()
    client.sendall(api_versions_frame(1) + api_versions_frame(2))
    first = env.next_request()
    env.channel.send_response(StartThrottlingResponse(first))
    env.channel.send_response(EndThrottlingResponse(first))
    assert env.no_request(0.2)  # throttle over, but the response is still pending
    env.answer(first)
    assert recv_api_versions(client)[0] == 1
    assert env.next_request().header.correlation_id == 2


def test_noop_while_throttled_stays_muted(env):
    client = env.socketpair()
    client.sendall(api_versions_frame(1) + api_versions_frame(2))
    first = env.next_request()
    env.channel.send_response(StartThrottlingResponse(first))
    env.channel.send_response(NoOpResponse(first))
    assert wait_until(lambda: env.channel_of(first).mute_state.state is S.MUTED_AND_THROTTLED, 5)
    assert env.no_request(0.2)
    env.channel.send_response(EndThrottlingResponse(first))
    assert env.next_request().header.correlation_id == 2


def test_illegal_mute_event_closes_only_that_connection(env):
    client = env.socketpair()
    other = env.socketpair()
    client.sendall(api_versions_frame(1))
    request = env.next_request()
    # EndThrottling without StartThrottling is illegal in MUTED_AND_RESPONSE_PENDING.
    env.channel.send_response(EndThrottlingResponse(request))
    assert closed_by_peer(client)
    other.sendall(api_versions_frame(2))
    env.answer(env.next_request())
    assert recv_api_versions(other)[0] == 2
    assert env.processor.is_alive()


# --- connection ids ---------------------------------------------------------------------------

def test_connection_id_format_and_index():
    # testConnectionId: localHost:localPort-remoteHost:remotePort-processorId-index.
    e = Env(make_config())
    try:
        clients = [e.tcp_pair() for _ in range(5)]
        ids = []
        for i, client in enumerate(clients):
            client.sendall(api_versions_frame(i))
            request = e.next_request()
            e.answer(request)
            recv_api_versions(client)
            local_host, local_port = client.getpeername()[:2]   # the server's end
            remote_host, remote_port = client.getsockname()[:2]
            assert request.connection_id == (
                f"{local_host}:{local_port}-{remote_host}:{remote_port}-0-{i}")
            ids.append(request.connection_id)
        assert len(set(ids)) == 5
    finally:
        e.close()


def test_socketpair_connections_get_an_id_too(env):
    # An AF_UNIX socket has no ports; the Processor must still register it.
    client = env.socketpair()
    client.sendall(api_versions_frame(3))
    request = env.next_request()
    assert request.connection_id.endswith("-0-0")
    env.answer(request)
    assert recv_api_versions(client)[0] == 3


# --- partial writes ---------------------------------------------------------------------------

def test_large_response_with_tiny_send_buffer_is_written_in_pieces(env):
    slow = env.tcp_pair(server_sndbuf=16384)
    fast = env.tcp_pair()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    slow.sendall(api_versions_frame(1))
    request = env.next_request()
    payload = bytes(range(256)) * (4 * 1024 * 2)   # 2 MiB: far beyond both socket buffers
    data = struct.pack(">i", len(payload)) + payload
    env.channel.send_response(SendResponse(request, data))
    # The first bytes arrive but the send cannot be complete yet: the client has not read.
    assert recv_exactly(slow, 4) == data[:4]
    assert wait_until(lambda: env.channel_of(request) is not None
                      and env.channel_of(request).has_send(), 5)
    # Meanwhile the Processor keeps serving another connection.
    for i in range(3):
        fast.sendall(api_versions_frame(100 + i))
        env.answer(env.next_request())
        assert recv_api_versions(fast)[0] == 100 + i
    # Read the rest in small pieces; every byte must arrive, in order.
    received = bytearray()
    while len(received) < len(payload):
        chunk = slow.recv(min(32 * 1024, len(payload) - len(received)))
        assert chunk, "server closed mid-response"
        received += chunk
    assert bytes(received) == payload
    # Send complete: the connection is unmuted and serves the next request.
    slow.sendall(api_versions_frame(2))
    request2 = env.next_request()
    assert request2.header.correlation_id == 2
    env.answer(request2)
    assert recv_api_versions(slow)[0] == 2


# --- wakeup -----------------------------------------------------------------------------------

def test_response_from_another_thread_wakes_the_processor(monkeypatch):
    # With a one-minute poll timeout, only the wakeup socketpair can get the response out
    # (and the new connection registered) within the client's timeout.
    monkeypatch.setattr(processor_module, "POLL_TIMEOUT_S", 60.0)
    e = Env(make_config())
    try:
        client = e.socketpair()
        for i in range(5):
            client.sendall(api_versions_frame(i))
            request = e.next_request()
            t = threading.Thread(target=e.answer, args=(request,))
            t.start()
            t.join(TIMEOUT)
            client.settimeout(TIMEOUT)
            assert recv_api_versions(client)[0] == i
    finally:
        e.close()


def test_processor_never_sleeps_with_a_response_queued(monkeypatch):
    """A select() that starts while a response is queued must end at once through the
    wakeup byte, never by timing out: count the selects that began with a response
    waiting and returned no event (race-free: the byte is written after the append)."""
    e = Env(make_config())
    sel = e.processor.selector._sel
    real_select = sel.select
    late = []

    def select(timeout=None):
        waiting = len(e.processor.response_queue)
        events = real_select(timeout)
        if waiting and not events and timeout:
            late.append(timeout)
        return events

    monkeypatch.setattr(sel, "select", select)
    try:
        client = e.socketpair()
        for i in range(20):
            client.sendall(api_versions_frame(i))
            request = e.next_request()
            threading.Thread(target=e.answer, args=(request,)).start()
            assert recv_api_versions(client)[0] == i
        assert late == []
    finally:
        e.close()


# --- remote close, resets, bad frames ---------------------------------------------------------

def test_remote_close_with_buffered_receives_serves_them_all(env):
    # remoteCloseWithBufferedReceives / testGracefulClose.
    client = env.tcp_pair()
    client.sendall(b"".join(api_versions_frame(i) for i in range(3)))
    client.shutdown(socket.SHUT_WR)
    for i in range(3):
        request = env.next_request()
        assert request.header.correlation_id == i
        env.answer(request)
        assert recv_api_versions(client)[0] == i
    assert closed_by_peer(client)
    assert wait_until(lambda: not env.processor.selector.channels, 5)


def test_remote_close_with_complete_and_incomplete_buffered_receives(env):
    client = env.tcp_pair()
    partial = api_versions_frame(9)[:7]
    client.sendall(api_versions_frame(0) + api_versions_frame(1) + partial)
    client.shutdown(socket.SHUT_WR)
    for i in range(2):
        request = env.next_request()
        assert request.header.correlation_id == i
        env.answer(request)
        assert recv_api_versions(client)[0] == i
    assert closed_by_peer(client)
    assert env.no_request(0.2)  # the partial one is dropped


def test_remote_close_with_only_incomplete_receive(env):
    client = env.tcp_pair()
    client.sendall(api_versions_frame(0)[:10])
    client.shutdown(socket.SHUT_WR)
    assert closed_by_peer(client)
    assert env.no_request(0.2)
    assert wait_until(lambda: not env.processor.selector.channels, 5)


def test_client_reset_while_response_in_flight(env):
    # testClientDisconnectionUpdatesRequestMetrics: the send fails, the channel goes,
    # the Processor keeps serving others.
    victim = env.tcp_pair(server_sndbuf=4096)
    other = env.tcp_pair()
    victim.sendall(api_versions_frame(1))
    request = env.next_request()
    payload = b"x" * (1024 * 1024)
    env.channel.send_response(SendResponse(request, struct.pack(">i", len(payload)) + payload))
    assert wait_until(lambda: env.channel_of(request) is not None
                      and env.channel_of(request).has_send(), 5)
    victim.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    victim.close()  # RST
    # The selector drops the channel, then the Processor its in-flight response.
    assert wait_until(lambda: request.connection_id not in env.processor.selector.channels
                      and request.connection_id not in env.processor.inflight_responses, 5)
    other.sendall(api_versions_frame(2))
    env.answer(env.next_request())
    assert recv_api_versions(other)[0] == 2
    assert env.processor.is_alive()


def test_invalid_frame_size_closes_only_that_connection(env, caplog):
    bad = env.socketpair()
    good = env.socketpair()
    with caplog.at_level(logging.WARNING):
        bad.sendall(struct.pack(">i", -1))
        assert closed_by_peer(bad)
    assert any("Invalid receive" in r.getMessage() for r in caplog.records)
    good.sendall(api_versions_frame(1))
    env.answer(env.next_request())
    assert recv_api_versions(good)[0] == 1


def test_unexpected_parse_exception_closes_only_that_connection(caplog):
    """A parser bug (any exception, not only InvalidRequestError) must close that
    connection, not leave it unanswered, and must not lose other connections' requests."""
    def parse(frame):
        if struct.unpack_from(">i", frame, 4)[0] == 666:
            raise IndexError("codec bug")
        return apis.parse_request(frame)

    e = Env(make_config(), parse_request=parse)
    apis = e.apis
    try:
        bad = e.socketpair()
        good = [e.socketpair() for _ in range(4)]
        with caplog.at_level(logging.WARNING):
            # Send them together so they likely share one batch of completed receives.
            for i, g in enumerate(good):
                g.sendall(api_versions_frame(i))
            bad.sendall(api_versions_frame(666))
            for i, g in enumerate(good[:2]):
                g.sendall(api_versions_frame(10 + i))
            assert closed_by_peer(bad)
        # A connection's second request waits for the answer to its first (the
        # mute); which connection comes next is the Processor's order, not ours.
        seen = []
        for _ in range(len(good) + 2):
            request = e.next_request()
            seen.append(request.header.correlation_id)
            e.answer(request)
        assert sorted(seen) == [0, 1, 2, 3, 10, 11]
        assert seen.index(0) < seen.index(10) and seen.index(1) < seen.index(11)
        for i, g in enumerate(good):
            assert recv_api_versions(g)[0] == i
        for i, g in enumerate(good[:2]):
            assert recv_api_versions(g)[0] == 10 + i
        assert e.processor.is_alive()
    finally:
        e.close()


def test_a_repeated_parser_bug_logs_one_traceback_not_one_per_request(caplog):
    """A client that found a parser bug and sends it again and again gets each
    connection closed, and the log one traceback per interval, the rest counted."""
    def parse(frame):
        raise KeyError("codec bug")

    e = Env(make_config(), parse_request=parse)
    try:
        with caplog.at_level(logging.ERROR):
            for i in range(20):
                bad = e.socketpair()
                bad.sendall(api_versions_frame(i))
                assert closed_by_peer(bad)
        lines = [r for r in caplog.records if "unexpected error parsing" in r.getMessage()]
        assert len(lines) == 1 and lines[0].exc_info is not None
        assert e.processor.is_alive()
    finally:
        e.close()


def test_registration_failure_closes_only_that_socket(env, monkeypatch):
    # configureNewConnectionException.
    real = env.processor.selector.register
    calls = []

    def register(connection_id, sock):
        calls.append(connection_id)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return real(connection_id, sock)

    monkeypatch.setattr(env.processor.selector, "register", register)
    first = env.socketpair()
    second = env.socketpair()
    assert closed_by_peer(first)
    second.sendall(api_versions_frame(5))
    env.answer(env.next_request())
    assert recv_api_versions(second)[0] == 5


def test_poll_exception_does_not_kill_the_processor(env, monkeypatch):
    # pollException.
    real = env.processor.selector.poll
    failures = [RuntimeError("poll boom"), OSError("poll os boom")]

    def poll(timeout):
        if failures:
            raise failures.pop()
        return real(timeout)

    monkeypatch.setattr(env.processor.selector, "poll", poll)
    client = env.socketpair()
    env.processor.wakeup.wakeup()
    client.sendall(api_versions_frame(4))
    env.answer(env.next_request())
    assert recv_api_versions(client)[0] == 4
    assert not failures and env.processor.is_alive()


def test_shutdown_closes_connections_and_queued_sockets():
    e = Env(make_config())
    client = e.socketpair()
    client.sendall(api_versions_frame(1))
    e.next_request()
    e.processor.begin_shutdown()
    e.processor.join(TIMEOUT)
    assert not e.processor.is_alive()
    assert closed_by_peer(client)
    with contextlib.suppress(Exception):
        e.close()


def test_slow_reader_of_a_large_response_is_not_idle():
    """Idle expiry must count partial writes as activity (Kafka refreshes a channel's idle
    time whenever its key is selected): a client reading a big response slowly, for longer
    than connections.max.idle.ms in total, must get all of it."""
    e = Env(make_config(connections_max_idle_ms=400))
    try:
        slow = e.tcp_pair(server_sndbuf=16384)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        slow.sendall(api_versions_frame(1))
        request = e.next_request()
        payload = bytes(range(256)) * 4096            # 1 MiB
        e.channel.send_response(SendResponse(request, struct.pack(">i", len(payload)) + payload))
        received = bytearray()
        pause = threading.Event()
        while len(received) < len(payload) + 4:
            chunk = slow.recv(16384)
            assert chunk, f"closed after {len(received)} bytes: expired while being written"
            received += chunk
            pause.wait(0.01)   # a slow reader: the whole read spans well over 400 ms
        assert bytes(received[4:]) == payload
    finally:
        e.close()


# --- connection disconnect listeners (Kafka's ConnectionDisconnectListener) -------------------

class Recorder:
    """A ConnectionDisconnectListener noting the ids it is told of."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def on_disconnect(self, connection_id: str) -> None:
        self.ids.append(connection_id)


class Broken:
    def on_disconnect(self, connection_id: str) -> None:
        raise RuntimeError("listener bug")


def listening_env(*listeners) -> Env:
    e = Env(make_config())
    e.processor.connection_disconnect_listeners = tuple(listeners)
    return e


def connection_id_of(e: Env, client: socket.socket, correlation_id: int) -> str:
    client.sendall(api_versions_frame(correlation_id))
    request = e.next_request()
    e.answer(request)
    assert recv_api_versions(client)[0] == correlation_id
    return request.connection_id


def test_each_close_path_tells_the_listeners_the_connection_id_once():
    recorder = Recorder()
    e = listening_env(recorder)
    try:
        by_client, by_api, at_shutdown = (e.socketpair() for _ in range(3))
        ids = [connection_id_of(e, c, i) for i, c in enumerate((by_client, by_api, at_shutdown))]
        by_client.close()                                        # the client's EOF
        assert wait_until(lambda: recorder.ids == ids[:1], 5)
        by_api.sendall(api_versions_frame(9))                    # the API layer's close
        e.channel.send_response(CloseConnectionResponse(e.next_request()))
        assert closed_by_peer(by_api)
        assert wait_until(lambda: recorder.ids == ids[:2], 5)
        by_api.close()
        e.processor.begin_shutdown()                             # shutdown closes the rest
        e.processor.join(TIMEOUT)
        assert recorder.ids == ids
    finally:
        with contextlib.suppress(Exception):
            e.close()


def test_a_listener_that_raises_is_logged_and_the_processor_goes_on(caplog):
    recorder = Recorder()
    e = listening_env(Broken(), recorder)
    try:
        client = e.socketpair()
        gone = connection_id_of(e, client, 1)
        with caplog.at_level(logging.ERROR, logger=processor_module.__name__):
            client.close()
            assert wait_until(lambda: recorder.ids == [gone], 5)   # the next one still ran
        [record] = [r for r in caplog.records if "disconnect listener" in r.getMessage()]
        assert "Broken" in record.getMessage() and gone in record.getMessage()
        assert record.exc_info and "listener bug" in str(record.exc_info[1])
        assert e.processor.is_alive()
        other = e.socketpair()                                   # still serving
        assert connection_id_of(e, other, 2) != gone
    finally:
        e.close()


def test_without_listeners_a_close_calls_nothing(env, monkeypatch):
    called = []
    monkeypatch.setattr(Processor, "_notify_disconnect", lambda self, cid: called.append(cid))
    client = env.socketpair()
    gone = connection_id_of(env, client, 1)
    client.close()
    assert wait_until(lambda: gone not in env.processor.selector.channels, 5)
    assert called == []
