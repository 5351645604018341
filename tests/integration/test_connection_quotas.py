"""Connection quotas on a real server over loopback.  Reference 1.H, 1.B (B6), 4.6.

Ports of SocketServerTest's quota cases (testMaxConnectionsPerIp,
testZeroMaxConnectionsPerIp, testMaxConnectionsPerIpOverrides,
testConnectionRatePerIp, testThrottledSocketsClosedOnShutdown), the waiting
limits end to end, and a churn test: connections closed every way there is
must all be uncounted.  Synchronisation is on the server's own counts
(wait_until with a bound), never on elapsed time.
"""

from __future__ import annotations

import logging
import socket
import struct

from kafka_net.config import parse_listeners
from kafka_net.metrics import server_snapshot
from kafka_net.network.acceptor import Acceptor
from kafka_net.network.request_channel import RequestChannel
from kafka_net.protocol import encode_request
from kafka_net.server.broker import BrokerCore
from tests.network.helpers import closed_by_server, rst_close, still_open
from tests.support import (
    API_VERSIONS_V3_BODY, LOOPBACK, RawClient, make_config, running_server, wait_until)

TIMEOUT = 10.0
API_VERSIONS = 18
SECOND_LOOPBACK = "127.0.0.2"   # another local source address (Linux routes 127/8 to lo)


def connect(port: int, source: str | None = None) -> socket.socket:
    sock = socket.create_connection((LOOPBACK, port), timeout=TIMEOUT,
                                    source_address=(source, 0) if source else None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def api_versions_works(port: int) -> bool:
    with RawClient(port) as client:
        return client.call(API_VERSIONS, 3, API_VERSIONS_V3_BODY)["error_code"] == 0


def all_uncounted(quotas, *listeners: str) -> bool:
    return (quotas.total_count == 0 and quotas.get(LOOPBACK) == 0
            and all(quotas.listener_count(x) == 0 for x in listeners))


def close_all(socks) -> None:
    for sock in socks:
        sock.close()


# --- per-IP limits ------------------------------------------------------------------


def test_max_connections_per_ip():
    with running_server(make_config(max_connections_per_ip=5, num_network_threads=1)) as server:
        port, quotas = server.bound_port(), server.socket_server.connection_quotas
        conns = [connect(port) for _ in range(5)]
        try:
            extra = connect(port)
            assert closed_by_server(extra)     # the 6th is closed at once
            extra.close()
            conns[0].close()
            assert wait_until(lambda: quotas.get(LOOPBACK) < 5, TIMEOUT)
            assert api_versions_works(port)    # a slot is free again
        finally:
            close_all(conns)
        assert wait_until(lambda: all_uncounted(quotas, "PLAINTEXT"), TIMEOUT)


def test_zero_max_connections_per_ip_with_an_override(caplog):
    config = make_config(max_connections_per_ip=0,
                         max_connections_per_ip_overrides=((LOOPBACK, 5),))
    with caplog.at_level(logging.INFO, logger="kafka_net.network.acceptor"), \
            running_server(config) as server:
        port, quotas = server.bound_port(), server.socket_server.connection_quotas
        conns = [connect(port) for _ in range(5)]
        try:
            extra = connect(port)
            assert closed_by_server(extra)
            extra.close()
            conns[0].close()
            assert wait_until(lambda: quotas.get(LOOPBACK) < 5, TIMEOUT)
            assert api_versions_works(port)
            # Another local address has no override: its limit is 0.
            other = connect(port, source=SECOND_LOOPBACK)
            assert closed_by_server(other)
            other.close()
        finally:
            close_all(conns)
        assert wait_until(lambda: all_uncounted(quotas, "PLAINTEXT"), TIMEOUT)
        assert quotas.get(SECOND_LOOPBACK) == 0
    assert (f"Rejected connection from {SECOND_LOOPBACK}, address already has the "
            "configured maximum of 0 connections.") in caplog.messages


def test_max_connections_per_ip_overrides_by_host_name():
    config = make_config(max_connections_per_ip=5,
                         max_connections_per_ip_overrides=(("localhost", 6),))
    with running_server(config) as server:
        port = server.bound_port()
        conns = [connect(port) for _ in range(6)]
        try:
            conns[-1].sendall(encode_request(API_VERSIONS, 0, 7, {}))
            assert struct.unpack(">ii", conns[-1].recv(8))[1] == 7   # the 6th is served
            extra = connect(port)
            assert closed_by_server(extra)
            extra.close()
        finally:
            close_all(conns)


def test_exception_in_acceptor_closes_and_uncounts(monkeypatch):
    # Kafka's testExceptionInAcceptor: counted first, then configuring fails.
    seen = []

    def failing_configure(acceptor, sock):
        seen.append(acceptor.connection_quotas.get(LOOPBACK))
        raise OSError("test injected OSError")

    monkeypatch.setattr(Acceptor, "_configure_accepted_socket", failing_configure)
    with running_server(make_config()) as server:
        sock = connect(server.bound_port())
        try:
            assert closed_by_server(sock)
        finally:
            sock.close()
        assert seen == [1]
        assert wait_until(lambda: server.socket_server.connection_quotas.get(LOOPBACK) == 0,
                          TIMEOUT)


def test_a_rejection_loop_logs_one_line_per_interval(caplog):
    with caplog.at_level(logging.INFO, logger="kafka_net.network.acceptor"), \
            running_server(make_config(max_connections_per_ip=1)) as server:
        port, quotas = server.bound_port(), server.socket_server.connection_quotas
        held = connect(port)
        try:
            for _ in range(20):
                extra = connect(port)
                assert closed_by_server(extra)
                extra.close()
        finally:
            held.close()
        assert wait_until(lambda: all_uncounted(quotas, "PLAINTEXT"), TIMEOUT)
    rejected = [m for m in caplog.messages if m.startswith("Rejected connection from")]
    assert len(rejected) == 1


# --- the per-IP creation rate: delayed close ----------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


class ThrottlingServer:
    """Kafka's test builds a SocketServer with MockTime and an IP rate quota of 5/s
    (2 samples of 1 s); so do we.  ``start`` connects 6 times: 5 are accepted and
    the 6th is held for a delayed close."""

    def __init__(self) -> None:
        self.clock = Clock()
        cfg = make_config(quota_window_num=2, num_network_threads=1)
        core = BrokerCore(cfg, RequestChannel(50))
        self.channel = core.request_channel
        self.server = core.new_socket_server(clock_ms=self.clock)
        self.server.connection_quotas.update_ip_connection_rate_quota(None, 5)
        self.conns: list[socket.socket] = []

    def start(self) -> "ThrottlingServer":
        self.server.startup()
        self.port = self.server.bound_port()
        self.conns = [connect(self.port) for _ in range(6)]
        assert wait_until(lambda: self.throttled() == 1, TIMEOUT)
        return self

    def throttled(self) -> int:
        return sum(len(a.throttled_sockets) for a in self.server.acceptors)

    def stop(self) -> None:
        self.server.stop_processing_requests()


def test_connection_rate_per_ip():
    env = ThrottlingServer()
    try:
        env.start()
        env.conns.append(connect(env.port))
        assert wait_until(lambda: env.throttled() == 2, TIMEOUT)
        quotas = env.server.connection_quotas
        assert quotas.get(LOOPBACK) == 5         # throttled ones are not counted
        assert still_open(env.conns[-1])          # held open, not refused
        env.clock.ms += 2000                      # past the throttle time
        for acceptor in env.server.acceptors:
            acceptor.wakeup()
        assert wait_until(lambda: env.throttled() == 0, TIMEOUT)
        assert closed_by_server(env.conns[-1])
        # The old samples expired: a new connection is served.
        fresh = connect(env.port)
        env.conns.append(fresh)
        fresh.sendall(encode_request(API_VERSIONS, 0, 1, {}))
        request = env.channel.receive_request(TIMEOUT)
        assert request is not None and request.header.api_key == API_VERSIONS
    finally:
        env.stop()
        close_all(env.conns)
    assert quotas.total_count == 0


def test_throttled_sockets_closed_on_shutdown():
    env = ThrottlingServer()
    try:
        env.start()
    finally:
        env.stop()   # the clock never moves: only the shutdown closes the 6th
    try:
        assert closed_by_server(env.conns[-1])
        assert env.throttled() == 0
        assert env.server.connection_quotas.total_count == 0
    finally:
        close_all(env.conns)


# --- broker-wide and listener limits: the Acceptor waits -----------------------------------


def test_listener_limit_leaves_the_next_connection_in_the_backlog_until_a_slot_frees():
    config = make_config(listener_max_connections=(("PLAINTEXT", 2),), num_network_threads=1)
    with running_server(config) as server:
        port, quotas = server.bound_port(), server.socket_server.connection_quotas
        first, second = RawClient(port), RawClient(port)
        third = RawClient(port)   # connected by the kernel, not accepted by the broker
        try:
            assert wait_until(lambda: quotas.waiting == 1, TIMEOUT)
            correlation_id = third.send(API_VERSIONS, 0, {})
            assert still_open(third.sock)       # no answer while the Acceptor waits
            first.close()
            assert third.receive(API_VERSIONS, 0)[0] == correlation_id
            assert server.socket_server.acceptors[0].blocked_ns > 0
            assert second.call(API_VERSIONS, 0, {})["error_code"] == 0
        finally:
            for client in (first, second, third):
                client.close()
        assert wait_until(lambda: all_uncounted(quotas, "PLAINTEXT"), TIMEOUT)


def test_excess_connections_are_closed_when_the_inter_broker_listener_goes_over():
    config = make_config(
        listeners=parse_listeners(f"INTERNAL://{LOOPBACK}:0,EXTERNAL://{LOOPBACK}:0",
                                  protocol_map={"INTERNAL": "PLAINTEXT",
                                                "EXTERNAL": "PLAINTEXT"}),
        inter_broker_listener_name="INTERNAL", max_connections=3,
        listener_max_connections=(("INTERNAL", 10),), num_network_threads=1)
    with running_server(config) as server:
        quotas = server.socket_server.connection_quotas
        external = [connect(server.bound_port("EXTERNAL")) for _ in range(3)]
        internal = []
        try:
            assert wait_until(lambda: quotas.listener_count("EXTERNAL") == 3, TIMEOUT)
            # The protected listener still gets in; the total (4) is then above
            # max.connections, so an EXTERNAL Processor closes its least recently
            # active connection: the first one.
            internal.append(connect(server.bound_port("INTERNAL")))
            assert closed_by_server(external[0])
            assert wait_until(lambda: quotas.total_count == 3, TIMEOUT)
            assert quotas.listener_count("EXTERNAL") == 2
            assert all(still_open(s) for s in external[1:])
            assert api_versions_works(server.bound_port("INTERNAL"))
        finally:
            close_all(external + internal)
        assert wait_until(lambda: all_uncounted(quotas, "INTERNAL", "EXTERNAL"), TIMEOUT)
        metrics = server_snapshot(server)
        assert metrics["kafka.server:type=socket-server-metrics,listener=EXTERNAL,"
                       "name=connection-accept-rate"] > 0
        assert metrics["kafka.server:type=socket-server-metrics,"
                       "name=broker-connection-accept-rate"] > 0
        assert metrics["kafka.server:type=socket-server-metrics,listener=INTERNAL,"
                       "name=connection-count"] == 0


# --- churn: every close path uncounts ---------------------------------------------------


def _clean(port: int) -> None:
    with RawClient(port) as client:
        assert client.call(API_VERSIONS, 0, {})["error_code"] == 0


def _rst(port: int) -> None:
    rst_close(connect(port))


def _mid_frame(port: int) -> None:
    sock = connect(port)
    sock.sendall(encode_request(API_VERSIONS, 0, 1, {})[:6])   # size and half a header
    sock.close()


def _bad_frame(port: int) -> None:
    sock = connect(port)
    try:
        sock.sendall(struct.pack(">i", -1))
        assert closed_by_server(sock)
    finally:
        sock.close()


def _idle(port: int, n: int = 8) -> None:
    # Few: like Kafka, a Processor expires one idle connection per poll (300 ms).
    socks = [connect(port) for _ in range(n)]
    try:
        for sock in socks:
            assert closed_by_server(sock)   # connections.max.idle.ms
    finally:
        close_all(socks)


def test_thousands_of_connections_closed_every_way_are_all_uncounted(caplog):
    config = make_config(connections_max_idle_ms=200, max_connections_per_ip=1000)
    with caplog.at_level(logging.ERROR), running_server(config) as server:
        port, quotas = server.bound_port(), server.socket_server.connection_quotas
        ways = [_clean, _rst, _mid_frame, _bad_frame]
        for i in range(2000):
            ways[i % len(ways)](port)
            if i % 400 == 399:
                _idle(port)
        assert wait_until(lambda: all_uncounted(quotas, "PLAINTEXT"), TIMEOUT), (
            quotas.total_count, quotas.get(LOOPBACK))
        assert api_versions_works(port)
        assert wait_until(lambda: all_uncounted(quotas, "PLAINTEXT"), TIMEOUT)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not [m for m in errors if "connection count" in m or "uncount" in m], errors
    assert quotas.total_count == 0


def test_connections_open_at_shutdown_are_uncounted():
    with running_server(make_config(num_network_threads=2)) as server:
        port, quotas = server.bound_port(), server.socket_server.connection_quotas
        conns = [connect(port) for _ in range(30)]
        assert wait_until(lambda: quotas.total_count == 30, TIMEOUT)
    try:
        assert quotas.total_count == 0 and quotas.listener_count("PLAINTEXT") == 0
    finally:
        close_all(conns)
