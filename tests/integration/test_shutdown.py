"""Graceful shutdown with requests in flight, and no leaked threads or sockets (reference 1.K;
SocketServerTest 4.8 testSocketsCloseOnShutdown, testStagedListenerShutdown...)."""

from __future__ import annotations

import gc
import socket
import threading

import psutil
import pytest

from kafka_net.config import parse_listeners
from kafka_net.protocol import encode_request
from kafka_net.server.handlers import api_versions
from kafka_net.server.kafka_server import KafkaServer
from tests.network.helpers import SlowHandler, closed_by_server, healthy, open_fds
from tests.support import LOOPBACK, RawClient, make_config, running_server, wait_until


def _stop_in_background(server) -> tuple[threading.Thread, list]:
    result: list = []
    t = threading.Thread(target=lambda: result.append(server.shutdown()), name="test-stopper",
                         daemon=True)
    t.start()
    return t, result


def _acceptors_stopped(server) -> bool:
    return all(not a.is_alive() for a in server.socket_server.acceptors)


def _refused(port: int) -> bool:
    try:
        socket.create_connection((LOOPBACK, port), timeout=2).close()
    except (ConnectionRefusedError, ConnectionResetError):
        return True
    return False


def test_graceful_shutdown_answers_requests_in_flight():
    gate = threading.Event()
    slow = SlowHandler(api_versions, delay=0.3, gate=gate)
    config = make_config(num_network_threads=2, num_io_threads=4)
    with running_server(config, apis_handlers={18: slow}) as server:
        port = server.bound_port()
        clients = [RawClient(port) for _ in range(4)]
        try:
            for i, c in enumerate(clients):
                c.send(18, 0, {}, correlation_id=100 + i)
            assert wait_until(lambda: slow.started == 4, 5)
            stopper, result = _stop_in_background(server)
            # The drain has begun: the listening socket is closed, new clients refused,
            # while every request is still inside a handler.
            assert wait_until(lambda: _acceptors_stopped(server), 5)
            assert _refused(port)
            assert slow.calls == 0
            gate.set()
            for i, c in enumerate(clients):
                assert c.receive(18, 0)[0] == 100 + i
                assert closed_by_server(c.sock)
            stopper.join(15)
            assert not stopper.is_alive() and result == [True]
        finally:
            gate.set()
            for c in clients:
                c.close()


def test_pipelined_requests_behind_the_in_flight_one_are_not_started():
    gate = threading.Event()
    slow = SlowHandler(api_versions, gate=gate)
    with running_server(make_config(), apis_handlers={18: slow}) as server:
        with RawClient(server.bound_port()) as client:
            client.send_raw(b"".join(encode_request(18, 0, i, {}) for i in range(3)))
            assert wait_until(lambda: slow.started == 1, 5)
            stopper, result = _stop_in_background(server)
            assert wait_until(lambda: _acceptors_stopped(server), 5)
            gate.set()
            assert client.receive(18, 0)[0] == 0
            assert closed_by_server(client.sock)  # requests 1 and 2 never answered
            stopper.join(15)
            assert result == [True] and slow.calls == 1


def test_graceful_shutdown_with_a_full_request_queue():
    """queued.max.requests=1: one request in a handler, one in the queue, one held by the
    Processor blocked on the full queue.  All three were received, all three answered."""
    gate = threading.Event()
    slow = SlowHandler(api_versions, gate=gate)
    config = make_config(num_network_threads=1, num_io_threads=1, queued_max_requests=1)
    with running_server(config, apis_handlers={18: slow}) as server:
        clients = [RawClient(server.bound_port()) for _ in range(3)]
        try:
            clients[0].send(18, 0, {}, correlation_id=0)
            assert wait_until(lambda: slow.started == 1, 5)
            clients[1].send(18, 0, {}, correlation_id=1)
            assert wait_until(lambda: server.request_channel.request_queue_size() == 1, 5)
            clients[2].send(18, 0, {}, correlation_id=2)
            # Let the Processor read it and block on the full queue (not asserted: if it
            # has not got there yet the request is answered all the same).
            processor = server.socket_server.processors[0]
            wait_until(lambda: processor.requests_received > 2, 0.3)
            stopper, result = _stop_in_background(server)
            assert wait_until(lambda: _acceptors_stopped(server), 5)
            gate.set()
            for i, c in enumerate(clients):
                assert c.receive(18, 0)[0] == i, f"client {i} not answered"
                assert closed_by_server(c.sock)
            stopper.join(15)
            assert result == [True]
        finally:
            gate.set()
            for c in clients:
                c.close()


def test_drain_timeout_closes_connections_and_drops_late_responses():
    gate = threading.Event()
    slow = SlowHandler(api_versions, gate=gate)
    config = make_config(shutdown_timeout_ms=200, num_io_threads=1)
    server = KafkaServer(config)
    server.apis.set_handlers({**server.apis.handlers, 18: slow})
    server.startup()
    client = RawClient(server.bound_port())
    try:
        client.send(18, 0, {})
        assert wait_until(lambda: slow.started == 1, 5)
        stopper, result = _stop_in_background(server)
        # The drain gives up after shutdown.timeout.ms: connections close unanswered...
        assert closed_by_server(client.sock, timeout=10)
        # ...and the handler's late response, for a processor that is gone, is dropped.
        gate.set()
        stopper.join(15)
        assert not stopper.is_alive() and result == [False]
        assert slow.calls == 1
    finally:
        gate.set()
        client.close()
        server.shutdown()


def test_sockets_close_on_shutdown():
    # testSocketsCloseOnShutdown: idle connections are closed by the stop.
    with running_server() as server:
        clients = [RawClient(server.bound_port()) for _ in range(5)]
        for c in clients:
            assert c.call(18, 0, {})["error_code"] == 0
    try:
        for c in clients:
            assert closed_by_server(c.sock)
    finally:
        for c in clients:
            c.close()


def test_shutdown_is_idempotent_and_unstarted_server_releases_its_ports():
    server = KafkaServer(make_config())
    assert server.shutdown() is True   # never started
    assert server.shutdown() is True
    with running_server() as s:
        port = s.bound_port()
        s.shutdown()
        assert _refused(port)
    assert s.shutdown() is True


def _net_state():
    gc.collect()
    proc = psutil.Process()
    return (sorted(t.name for t in threading.enumerate()), open_fds(),
            len(proc.net_connections("all")))


def _exercise(server) -> None:
    port = server.bound_port()
    healthy(port)
    with RawClient(port) as c:
        c.send_raw(b"".join(encode_request(18, 0, i, {}) for i in range(5)))
        for i in range(5):
            assert c.receive(18, 0)[0] == i
    # A client that is still connected at shutdown, one that leaves mid-frame.
    lingering = RawClient(port)
    lingering.call(18, 0, {})
    half = RawClient(port)
    half.send_raw(encode_request(18, 0, 9, {})[:7])
    return lingering, half


@pytest.mark.parametrize("graceful", [True, False])
def test_no_leaked_threads_or_sockets(graceful):
    before = _net_state()
    server = KafkaServer(make_config(num_network_threads=3, num_io_threads=4))
    server.startup()
    lingering, half = _exercise(server)
    assert server.shutdown(graceful=graceful) is True
    for c in (lingering, half):
        assert closed_by_server(c.sock)
        c.close()
    assert wait_until(lambda: _net_state() == before, 5), (before, _net_state())


def test_start_stop_five_servers_without_leaks():
    before = _net_state()
    for _ in range(5):
        with running_server(make_config(num_network_threads=2, num_io_threads=2)) as server:
            lingering, half = _exercise(server)
        for c in (lingering, half):
            c.close()
    assert wait_until(lambda: _net_state() == before, 5), (before, _net_state())


def test_startup_failure_leaks_nothing():
    """A listener whose port is taken: startup fails with the bind error and every
    thread and socket already created is released."""
    before = _net_state()
    with socket.create_server((LOOPBACK, 0)) as taken:
        port = taken.getsockname()[1]
        before_with_taken = _net_state()
        server = KafkaServer(make_config(
            listeners=parse_listeners(f"PLAINTEXT://{LOOPBACK}:{port}")))
        with pytest.raises(OSError) as info:
            server.startup()
        assert f"{LOOPBACK}:{port}" in str(info.value)
        server.shutdown()
        assert wait_until(lambda: _net_state() == before_with_taken, 5)
    assert wait_until(lambda: _net_state() == before, 5), (before, _net_state())


def test_shutdown_after_failed_startup_with_more_handlers_than_queue_slots():
    """startup() already stopped the handler pool; a later shutdown() must not block
    putting shutdown sentinels nobody will take into a queue of queued.max.requests."""
    with socket.create_server((LOOPBACK, 0)) as taken:
        port = taken.getsockname()[1]
        server = KafkaServer(make_config(
            listeners=parse_listeners(f"PLAINTEXT://{LOOPBACK}:{port}"),
            queued_max_requests=1, num_io_threads=3))
        with pytest.raises(OSError):
            server.startup()
        stopper, result = _stop_in_background(server)
        stopper.join(10)
        assert not stopper.is_alive(), "shutdown() hung after a failed startup"
        assert result == [True]
