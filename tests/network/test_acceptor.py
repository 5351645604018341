"""The Acceptor alone, with fake (or unstarted) Processors.  Reference 1.A (A8, A9), 1.B."""

from __future__ import annotations

import errno
import logging
import socket
import threading

import pytest

from kafka_net.config import parse_listeners
from kafka_net.network import acceptor as acceptor_module
from kafka_net.network.acceptor import Acceptor
from kafka_net.network.processor import CONNECTION_QUEUE_SIZE, Processor
from kafka_net.network.request_channel import RequestChannel
from kafka_net.server.broker import BrokerCore
from tests.support import LOOPBACK, make_config, wait_until

TIMEOUT = 10.0


class FakeProcessor:
    """Records every offer; ``full`` refuses non-blocking offers, and a blocking offer
    waits for ``release`` (as a full ArrayBlockingQueue.put would)."""

    def __init__(self, processor_id: int, log: list, full: bool = False) -> None:
        self.id = processor_id
        self.log = log
        self.full = full
        self.release = threading.Event()
        self.sockets: list[socket.socket] = []

    def accept(self, sock, may_block: bool, ip=None) -> bool:
        self.log.append((self.id, may_block))
        if self.full:
            if not may_block:
                return False
            if not self.release.wait(0.05):
                return False   # a blocking offer that timed out (see Processor.accept)
        self.sockets.append(sock)
        return True


def start_acceptor(processors, **config) -> Acceptor:
    cfg = make_config(**config)
    acceptor = Acceptor(cfg.listeners[0], cfg, processors)
    acceptor.start()
    return acceptor


def stop_acceptor(acceptor: Acceptor) -> None:
    acceptor.begin_shutdown()
    acceptor.join(TIMEOUT)
    assert not acceptor.is_alive(), "acceptor thread did not stop"


def connect(port: int) -> socket.socket:
    return socket.create_connection((LOOPBACK, port), timeout=TIMEOUT)


def total_sockets(processors) -> int:
    return sum(len(p.sockets) for p in processors)


def close_all(processors, clients) -> None:
    for p in processors:
        for s in p.sockets:
            s.close()
    for c in clients:
        c.close()


def test_round_robin_over_processors():
    log: list = []
    processors = [FakeProcessor(i, log) for i in range(3)]
    acceptor = start_acceptor(processors)
    clients = []
    try:
        for n in range(1, 8):
            clients.append(connect(acceptor.port))
            assert wait_until(lambda: total_sockets(processors) == n, 5)
        assert [pid for pid, _ in log] == [0, 1, 2, 0, 1, 2, 0]
        assert all(not may_block for _, may_block in log)  # nobody was full
        assert [len(p.sockets) for p in processors] == [3, 2, 2]
        assert acceptor.accepted == 7
    finally:
        stop_acceptor(acceptor)
        close_all(processors, clients)


def test_accepted_sockets_are_configured():
    log: list = []
    processors = [FakeProcessor(0, log)]
    acceptor = start_acceptor(processors, socket_send_buffer_bytes=65536)
    client = connect(acceptor.port)
    try:
        assert wait_until(lambda: total_sockets(processors) == 1, 5)
        sock = processors[0].sockets[0]
        assert sock.getblocking() is False
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) != 0
        # Linux doubles the requested size; at least what we asked for.
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 65536
    finally:
        stop_acceptor(acceptor)
        close_all(processors, [client])


def test_full_processors_are_skipped_without_blocking():
    log: list = []
    processors = [FakeProcessor(0, log, full=True), FakeProcessor(1, log),
                  FakeProcessor(2, log, full=True)]
    acceptor = start_acceptor(processors)
    clients = []
    try:
        for n in range(1, 4):
            clients.append(connect(acceptor.port))
            assert wait_until(lambda: total_sockets(processors) == n, 5)
        assert [len(p.sockets) for p in processors] == [0, 3, 0]
        # Every offer that reached a full processor was non-blocking (it was never
        # the last try), so the Acceptor never blocked on a full queue.
        assert not [pid for pid, may_block in log if may_block and pid != 1], log
        # Offers walk round robin: each connection tries processors in order.
        assert [pid for pid, _ in log] == [0, 1, 2, 0, 1, 2, 0, 1]
    finally:
        stop_acceptor(acceptor)
        close_all(processors, clients)


def test_blocks_only_on_the_last_try_when_all_are_full():
    log: list = []
    processors = [FakeProcessor(i, log, full=True) for i in range(3)]
    acceptor = start_acceptor(processors)
    client = connect(acceptor.port)
    try:
        # Offers 1 and 2 non-blocking, the 3rd (last try) blocking, then it keeps
        # waiting (blocking offers) until a processor takes the socket.
        assert wait_until(lambda: len(log) >= 5, 5)
        first = log[:3]
        assert [pid for pid, _ in first] == [0, 1, 2]
        assert [mb for _, mb in first] == [False, False, True]
        assert all(mb for _, mb in log[3:5])
        assert total_sockets(processors) == 0
        processors[1].release.set()
        assert wait_until(lambda: total_sockets(processors) == 1, 5)
        assert len(processors[1].sockets) == 1
    finally:
        stop_acceptor(acceptor)
        close_all(processors, [client])


class FlakyServerSocket:
    """Wraps the listening socket; accept() fails ``failures`` times first."""

    def __init__(self, real: socket.socket, failures: list[OSError]) -> None:
        self._real = real
        self.failures = failures
        self.calls = 0

    def accept(self):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return self._real.accept()

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.mark.parametrize("failures", [
    [OSError(errno.EMFILE, "Too many open files")] * 3,
    [OSError(errno.ENFILE, "File table overflow"), OSError(errno.ECONNABORTED, "aborted"),
     OSError(errno.EPERM, "firewall"), RuntimeError("unexpected")],
], ids=["emfile", "mixed"])
def test_accept_errors_do_not_kill_the_thread(failures, caplog):
    log: list = []
    processors = [FakeProcessor(0, log)]
    cfg = make_config()
    acceptor = Acceptor(cfg.listeners[0], cfg, processors)
    flaky = FlakyServerSocket(acceptor.server_socket, list(failures))
    acceptor.server_socket = flaky
    clients = []
    with caplog.at_level(logging.ERROR):
        acceptor.start()
        try:
            clients.append(connect(acceptor.port))
            assert wait_until(lambda: total_sockets(processors) == 1, 10)
            assert flaky.failures == [] and acceptor.is_alive()
            clients.append(connect(acceptor.port))
            assert wait_until(lambda: total_sockets(processors) == 2, 5)
        finally:
            stop_acceptor(acceptor)
            close_all(processors, clients)
    assert any("accept" in r.getMessage() for r in caplog.records)


def test_configure_error_closes_the_socket_and_keeps_accepting(monkeypatch):
    # testExceptionInAcceptor.
    log: list = []
    processors = [FakeProcessor(0, log)]
    cfg = make_config()
    acceptor = Acceptor(cfg.listeners[0], cfg, processors)
    real = acceptor._configure_accepted_socket
    calls = []

    def configure(sock):
        calls.append(sock)
        if len(calls) == 1:
            raise OSError(errno.EINVAL, "cannot configure")
        real(sock)

    monkeypatch.setattr(acceptor, "_configure_accepted_socket", configure)
    acceptor.start()
    first = connect(acceptor.port)
    try:
        first.settimeout(5)
        assert first.recv(1) == b""  # closed by the Acceptor
        second = connect(acceptor.port)
        assert wait_until(lambda: total_sockets(processors) == 1, 5)
        second.close()
    finally:
        stop_acceptor(acceptor)
        close_all(processors, [first])


def test_shutdown_while_every_processor_queue_is_full():
    """testStagedListenerShutdownWhenConnectionQueueIsFull: real, never-started Processors
    whose new-connection queues fill up; the Acceptor blocks on the last try, and a
    shutdown must still end it and close the socket it was holding."""
    cfg = make_config(num_network_threads=1)
    core = BrokerCore(cfg, RequestChannel(10))
    processor = Processor(0, "PLAINTEXT", core.request_channel, core.apis.parse_request, cfg)
    acceptor = Acceptor(cfg.listeners[0], cfg, [processor])
    acceptor.start()
    clients = []
    try:
        for _ in range(CONNECTION_QUEUE_SIZE + 1):
            clients.append(connect(acceptor.port))
        assert wait_until(lambda: processor.new_connections.full()
                          and acceptor.accepted == CONNECTION_QUEUE_SIZE + 1, 5)
        acceptor.begin_shutdown()
        acceptor.join(TIMEOUT)
        assert not acceptor.is_alive(), "acceptor hung in a blocking put"
        # The socket it could not hand over is closed, not leaked.
        extra = clients[-1]
        extra.settimeout(5)
        try:
            assert extra.recv(1) == b""
        except ConnectionResetError:
            pass
        assert processor.new_connections.qsize() == CONNECTION_QUEUE_SIZE
    finally:
        if acceptor.is_alive():
            # Unblock the hung put so the test run can finish.
            while not processor.new_connections.empty():
                processor.new_connections.get_nowait().close()
            acceptor.join(TIMEOUT)
        processor._close_all()
        for c in clients:
            c.close()


def test_port_zero_is_resolved_at_construction():
    cfg = make_config()
    acceptor = Acceptor(cfg.listeners[0], cfg, [])
    try:
        assert acceptor.port != 0
        assert acceptor.server_socket.getsockname()[1] == acceptor.port
        assert str(acceptor.port) in acceptor.name
    finally:
        acceptor.close_unstarted()
    assert acceptor.server_socket.fileno() == -1


def test_bind_failure_names_host_and_port():
    with socket.create_server((LOOPBACK, 0)) as taken:
        port = taken.getsockname()[1]
        cfg = make_config(listeners=parse_listeners(f"PLAINTEXT://{LOOPBACK}:{port}"))
        with pytest.raises(OSError) as info:
            Acceptor(cfg.listeners[0], cfg, [])
        assert f"{LOOPBACK}:{port}" in str(info.value)


def test_select_timeout_constant_is_kafkas():
    assert acceptor_module.SELECT_TIMEOUT_S == 0.5
