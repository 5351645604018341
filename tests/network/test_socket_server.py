"""SocketServer (kafka_net/network/socket_server.py) on its own: real Acceptors and
Processors on 127.0.0.1:0, no handler threads (the test plays the handler side
of the RequestChannel).

Its contract: every listener's socket is bound before any thread starts (a
bind error leaves nothing running or open), Processor ids are global across
listeners, a graceful ``drain`` refuses new clients and waits only for the
requests already received, and stopping twice (or without a start) is safe.
"""

from __future__ import annotations

import logging
import socket

import pytest

from kafka_net.config import parse_listeners
from kafka_net.network.request_channel import RequestChannel
from kafka_net.server.broker import BrokerCore
from tests.support import LOOPBACK, RawClient, make_config, wait_until

TIMEOUT = 10.0
TWO_LISTENERS = {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT"}


class Env:
    """A SocketServer, its RequestChannel and a KafkaApis to answer with."""

    def __init__(self, config) -> None:
        core = BrokerCore(config, RequestChannel(50))
        self.channel, self.apis = core.request_channel, core.apis
        self.server = core.new_socket_server()

    def threads(self) -> list:
        return [*self.server.acceptors, *self.server.processors]

    def answer_one(self) -> None:
        request = self.channel.receive_request(TIMEOUT)
        assert request is not None, "no request reached the RequestChannel"
        self.apis.handle(request)


@pytest.fixture
def env():
    e = Env(make_config())
    e.server.startup()
    try:
        yield e
    finally:
        e.server.stop_processing_requests()


def two_listener_config(**overrides):
    listeners = parse_listeners(f"PLAINTEXT://{LOOPBACK}:0,INTERNAL://{LOOPBACK}:0",
                                protocol_map=TWO_LISTENERS)
    return make_config(listeners=listeners, **overrides)


def refused(port: int) -> bool:
    try:
        socket.create_connection((LOOPBACK, port), timeout=TIMEOUT).close()
    except ConnectionRefusedError:
        return True
    return False


def test_startup_binds_port_zero_and_serves(env):
    port = env.server.bound_port()
    assert port > 0
    [endpoint] = env.server.bound_endpoints()
    assert (endpoint.listener_name, endpoint.host, endpoint.port) == ("PLAINTEXT", LOOPBACK, port)
    assert all(t.is_alive() for t in env.threads())
    with RawClient(port) as client:
        client.send(18, 0, {})
        env.answer_one()
        _, body = client.receive(18, 0)
        assert body["error_code"] == 0


def test_bound_port_of_an_unknown_listener(env):
    with pytest.raises(KeyError):
        env.server.bound_port("NOPE")


def test_processor_ids_are_global_across_listeners():
    e = Env(two_listener_config(num_network_threads=2))
    e.server.startup()
    try:
        assert [p.id for p in e.server.processors] == [0, 1, 2, 3]
        by_listener = {a.endpoint.listener_name: [p.id for p in a.processors]
                       for a in e.server.acceptors}
        assert by_listener == {"PLAINTEXT": [0, 1], "INTERNAL": [2, 3]}
        assert sorted(e.channel.response_queue_sizes()) == [0, 1, 2, 3]
        ports = [e.server.bound_port("PLAINTEXT"), e.server.bound_port("INTERNAL")]
        assert len(set(ports)) == 2
        for port in ports:
            with RawClient(port) as client:
                client.send(18, 0, {})
                e.answer_one()
                assert client.receive(18, 0)[1]["error_code"] == 0
    finally:
        e.server.stop_processing_requests()


def test_a_bind_error_leaves_nothing_running_or_open():
    with socket.create_server((LOOPBACK, 0)) as taken:
        busy = taken.getsockname()[1]
        listeners = parse_listeners(f"PLAINTEXT://{LOOPBACK}:0,INTERNAL://{LOOPBACK}:{busy}",
                                    protocol_map=TWO_LISTENERS)
        e = Env(make_config(listeners=listeners))
        with pytest.raises(OSError, match=f"failed to bind to {LOOPBACK}:{busy}"):
            e.server.startup()
    [first] = e.server.acceptors                 # the listener bound before the error
    assert first.server_socket.fileno() == -1    # ...is closed again
    assert not any(t.is_alive() for t in e.threads())
    e.server.stop_processing_requests()          # and a stop after it does not hang


def test_stop_twice_and_stop_without_start():
    e = Env(make_config())
    e.server.stop_processing_requests()          # never started: nothing to do
    e = Env(make_config())
    e.server.startup()
    e.server.stop_processing_requests()
    e.server.stop_processing_requests()
    assert not any(t.is_alive() for t in e.threads())
    assert e.channel.response_queue_sizes() == {}    # every Processor deregistered


def test_stop_closes_every_connection(env):
    with RawClient(env.server.bound_port()) as client:
        client.send(18, 0, {})
        assert wait_until(lambda: env.channel.request_queue_size() == 1, TIMEOUT)
        env.server.stop_processing_requests()
        assert client.is_closed_by_server(TIMEOUT)
        assert env.channel.request_queue_size() == 0    # the unhandled request dropped


def test_drain_with_nothing_outstanding(env):
    port = env.server.bound_port()
    called = []
    assert env.server.drain(TIMEOUT, after_stop_reading=lambda: called.append(1)) is True
    assert called == [1]
    assert refused(port)                          # the Acceptor is gone: no new clients


def test_drain_waits_for_received_requests_and_answers_them(env):
    with RawClient(env.server.bound_port()) as client:
        client.send(18, 0, {})
        assert wait_until(lambda: env.channel.request_queue_size() == 1, TIMEOUT)
        # The handler side answers only once reading has stopped.
        assert env.server.drain(TIMEOUT, after_stop_reading=env.answer_one) is True
        assert client.receive(18, 0)[1]["error_code"] == 0


def test_drain_gives_up_when_cancelled(env, caplog):
    caplog.set_level(logging.WARNING, logger="kafka_net.network.socket_server")
    with RawClient(env.server.bound_port()) as client:
        client.send(18, 0, {})
        assert wait_until(lambda: env.channel.request_queue_size() == 1, TIMEOUT)
        assert env.server.drain(TIMEOUT, cancelled=lambda: True) is False
    assert "1 request(s) still unanswered" in caplog.text and "(cut short)" in caplog.text


def test_drain_gives_up_at_its_timeout(env, caplog):
    caplog.set_level(logging.WARNING, logger="kafka_net.network.socket_server")
    with RawClient(env.server.bound_port()) as client:
        client.send(18, 0, {})
        assert wait_until(lambda: env.channel.request_queue_size() == 1, TIMEOUT)
        assert env.server.drain(0.05) is False
    assert "1 request(s) still unanswered" in caplog.text
    assert "(cut short)" not in caplog.text


def test_capture_dir_gives_every_processor_a_writer(tmp_path):
    e = Env(make_config(capture_dir=str(tmp_path), num_network_threads=2))
    e.server.startup()
    try:
        writers = [p.capture for p in e.server.processors]
        assert all(w is not None for w in writers) and len(set(map(id, writers))) == 2
    finally:
        e.server.stop_processing_requests()


def test_one_memory_pool_for_every_processor():
    e = Env(two_listener_config(queued_max_request_bytes=1 << 20,
                                socket_request_max_bytes=1 << 20))
    e.server.startup()
    try:
        pools = {id(p.selector.memory_pool) for p in e.server.processors}
        assert pools == {id(e.server.memory_pool)}
        assert e.server.memory_pool.size == 1 << 20
    finally:
        e.server.stop_processing_requests()


def test_an_empty_host_listens_on_every_interface_ipv6_too():
    """PLAINTEXT://:0 is Kafka's wildcard: IPv4 and IPv6 clients both get answers,
    and an IPv4 client is known by its IPv4 address (not ::ffff:127.0.0.1), as in
    Kafka's connection ids and logs."""
    e = Env(make_config(listeners=parse_listeners("PLAINTEXT://:0")))
    e.server.startup()
    try:
        port = e.server.bound_port()
        for host in (LOOPBACK, "::1"):
            with RawClient(port, host=host) as client:
                client.send(18, 0, {})
                request = e.channel.receive_request(TIMEOUT)
                assert request.connection_id.split("-")[1].rsplit(":", 1)[0] == host
                e.apis.handle(request)
                _, body = client.receive(18, 0)
                assert body["error_code"] == 0
    finally:
        e.server.stop_processing_requests()
