"""The request memory pool on real sockets (reference 1.I, D2, D11, F5; issue 8).

``queued.max.request.bytes`` bounds the bytes of requests the broker holds.
A frame's bytes come from the pool once its size is known; a connection the
pool refuses is muted for memory (not read) until memory is released, then
served.  Every grant comes back however the request or connection ends.
A MemoryError on the read path closes only that connection, with one log
line, and the Processor goes on.  Real producers (kafka-python) under a bound
smaller than two of their requests wait and lose nothing.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading

import pytest

from kafka_net.metrics import server_snapshot
from kafka_net.network.kafka_channel import READ_CHUNK
from kafka_net.network.memory_pool import SimpleMemoryPool
from kafka_net.protocol import encode_request
from kafka_net.protocol.framing import FrameDecoder
from kafka_net.server.handlers import CLOSE_CONNECTION, metadata, produce
from kafka_net.server.kafka_server import KafkaServer
from tests.integration.client_support import bootstrap, fast_group_config
from tests.network.helpers import (
    SlowHandler, closed_by_server, healthy, metadata_body, rst_close, server_threads_alive)
from tests.support import API_VERSIONS_V3_BODY, RawClient, make_config, running_server, wait_until

USED = "kafka.network:type=SocketServer,name=MemoryPoolUsed"
AVAILABLE = "kafka.network:type=SocketServer,name=MemoryPoolAvailable"
DEPLETED = "kafka.server:type=socket-server-metrics,name=MemoryPoolDepletedTimeTotal"
DEPLETED_PCT = "kafka.server:type=socket-server-metrics,name=MemoryPoolAvgDepletedPercent"


def big_metadata_body(n_topics: int) -> dict:
    """A Metadata v12 request of ~250 bytes per topic (unknown topics, no auto-create)."""
    return metadata_body(12, topics=[{"name": f"{i:04d}" + "t" * 240}
                                     for i in range(n_topics)])


def frame_size(api_key: int, version: int, body: dict) -> int:
    return len(encode_request(api_key, version, 0, body)) - 4


def channels(server):
    return [c for p in server.socket_server.processors
            for c in list(p.selector.channels.values())]


def memory_muted_ports(server) -> set[int]:
    return {c.peer[1] for p in server.socket_server.processors
            for c in list(p.selector._memory_muted.values())}


def port_of(client: RawClient) -> int:
    return client.sock.getsockname()[1]


def server_channel(server, client: RawClient):
    return next(c for c in channels(server) if c.peer[1] == port_of(client))


def send_in_background(client: RawClient, data: bytes) -> threading.Thread:
    """sendall in a thread: a connection muted for memory is not read, so a large
    frame may not fit the socket buffers until it is."""
    thread = threading.Thread(target=client.send_raw, args=(data,), daemon=True)
    thread.start()
    return thread


class PeakPool(SimpleMemoryPool):
    """Records the highest usage after any grant, and the refusals."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.peak = 0
        self.refusals = 0

    def try_allocate(self, size_bytes: int) -> bool:
        ok = super().try_allocate(size_bytes)
        if ok:
            self.peak = max(self.peak, self.used)
        else:
            self.refusals += 1
        return ok


# --- waiting for memory --------------------------------------------------------------------

def test_a_large_request_waits_muted_until_the_first_ones_memory_is_released():
    gate = threading.Event()
    slow = SlowHandler(metadata, gate=gate)
    body = big_metadata_body(600)            # ~158 KB: several reads
    size = frame_size(3, 12, body)
    config = make_config(socket_request_max_bytes=size, queued_max_request_bytes=size)
    with running_server(config, apis_handlers={3: slow}) as server:
        pool = server.socket_server.memory_pool
        port = server.bound_port()
        with RawClient(port) as first, RawClient(port) as second, RawClient(port) as small:
            first_id = first.send(3, 12, body)
            assert wait_until(lambda: slow.started == 1)
            assert pool.used == size and pool.is_out_of_memory
            second_id, second_frame = second.request_frame(3, 12, body)
            sender = send_in_background(second, second_frame)
            assert wait_until(lambda: port_of(second) in memory_muted_ports(server))
            # Muted for memory, not for a request: nothing of it reached a handler,
            # and at most one read of it is buffered.
            waiting = server_channel(server, second)
            assert not waiting.mute_state.muted
            assert 4 <= waiting.decoder.buffered() <= READ_CHUNK < size
            assert slow.started == 1
            metrics = server_snapshot(server)
            assert (metrics[USED], metrics[AVAILABLE]) == (size, 0)
            # The pool is empty: a small request has to wait as well (Kafka's reads
            # pause for every channel that needs a new buffer).
            small_id = small.send(18, 3, API_VERSIONS_V3_BODY)
            assert wait_until(lambda: port_of(small) in memory_muted_ports(server))

            gate.set()                        # the first request is handled, then released
            assert first.receive(3, 12)[0] == first_id
            assert second.receive(3, 12)[0] == second_id
            assert small.receive(18, 3)[0] == small_id
            sender.join(5)
            assert slow.calls == 2
        assert wait_until(lambda: pool.used == 0)
        assert not memory_muted_ports(server)
        metrics = server_snapshot(server)
        assert metrics[DEPLETED] > 0 and 0 < metrics[DEPLETED_PCT] <= 1
        assert server_threads_alive(server)


def test_pool_usage_and_buffered_bytes_stay_bounded_with_many_large_senders():
    gate = threading.Event()
    slow = SlowHandler(metadata, gate=gate)
    body = big_metadata_body(300)            # ~79 KB each
    size = frame_size(3, 12, body)
    clients = 12
    pool = PeakPool(3 * size, size)
    config = make_config(socket_request_max_bytes=size, queued_max_request_bytes=3 * size,
                         num_io_threads=4)
    with running_server(config, {3: slow}, pool) as server:
        port = server.bound_port()
        with contextlib.ExitStack() as stack:
            conns = [stack.enter_context(RawClient(port)) for _ in range(clients)]
            frames = [c.request_frame(3, 12, body) for c in conns]
            senders = [send_in_background(c, f) for c, (_, f) in zip(conns, frames)]
            # Three frames fill the pool exactly; the other nine wait, each holding at
            # most one read, while 12 x 79 KB were sent.
            assert wait_until(lambda: len(memory_muted_ports(server)) == clients - 3)
            assert pool.used == 3 * size and pool.refusals > 0
            for channel in channels(server):
                if channel.peer[1] in memory_muted_ports(server):
                    assert channel.decoder.buffered() <= READ_CHUNK
            gate.set()
            for conn, (correlation_id, _) in zip(conns, frames):
                assert conn.receive(3, 12)[0] == correlation_id
            for sender in senders:
                sender.join(5)
        assert slow.calls == clients
        # Kafka's non-strict bound: the pool plus at most one request.
        assert pool.peak <= pool.size + size - 1
        assert wait_until(lambda: pool.used == 0)


def test_a_client_that_leaves_while_waiting_for_memory_leaves_nothing_behind():
    gate = threading.Event()
    slow = SlowHandler(metadata, gate=gate)
    body = big_metadata_body(100)
    size = frame_size(3, 12, body)
    config = make_config(socket_request_max_bytes=size, queued_max_request_bytes=size)
    with running_server(config, apis_handlers={3: slow}) as server:
        pool = server.socket_server.memory_pool
        with RawClient(server.bound_port()) as first:
            first_id = first.send(3, 12, body)
            assert wait_until(lambda: slow.started == 1)
            leaver = RawClient(server.bound_port())
            leaver.send_raw(encode_request(3, 12, 9, body)[:1000])
            assert wait_until(lambda: port_of(leaver) in memory_muted_ports(server))
            leaver.close()
            gate.set()
            assert first.receive(3, 12)[0] == first_id
        assert wait_until(lambda: pool.used == 0 and not channels(server))
        assert slow.calls == 1
        healthy(server.bound_port())


# --- every grant comes back ----------------------------------------------------------------

def test_pool_used_returns_to_zero_however_requests_and_connections_end():
    gate = threading.Event()
    gate.set()
    slow = SlowHandler(metadata, gate=gate)
    closer = SlowHandler(metadata)
    closer.handle = lambda ctx, body: CLOSE_CONNECTION
    closer.API_KEY = 19      # CreateTopics' slot: any served API will do
    size = 64 * 1024
    config = make_config(socket_request_max_bytes=size, queued_max_request_bytes=4 * size,
                         connections_max_idle_ms=1000)
    with running_server(config, apis_handlers={3: slow}) as server:
        pool = server.socket_server.memory_pool
        port = server.bound_port()
        drained = lambda: wait_until(lambda: pool.used == 0)   # noqa: E731

        # Many ordinary requests, pipelined too, on several connections.
        with RawClient(port) as a, RawClient(port) as b:
            for i in range(40):
                assert a.call(18, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
                assert b.call(3, 12, metadata_body(12, topics=[{"name": f"t{i}"}]))
            frames = [b.request_frame(18, 0, {})[1] for _ in range(5)]
            b.send_raw(b"".join(frames))
            for _ in frames:
                b.receive(18, 0)
        assert drained()

        # The client closes (FIN, then RST) with a partial frame whose size is known.
        for close in (socket.socket.close, rst_close):
            c = RawClient(port)
            c.send_raw(struct.pack(">i", 50_000) + b"x" * 1000)
            assert wait_until(lambda: pool.used == 50_000)
            close(c.sock)
            assert drained()
        # ... or with half a size prefix.
        c = RawClient(port)
        c.send_raw(b"\x00\x00")
        c.close()

        # A frame that does not parse; a size over socket.request.max.bytes.
        for bad in (struct.pack(">ihhih", 10, 9999, 0, 1, -1), struct.pack(">i", size + 1)):
            with RawClient(port) as c:
                c.send_raw(bad)
                assert closed_by_server(c.sock)
        assert drained()

        # The client goes (RST) and the server closes its connection (idle expiry of
        # a muted connection) while its request is still in a handler.
        gate.clear()
        c = RawClient(port)
        client_port = port_of(c)
        c.send(3, 12, metadata_body(12, topics=[{"name": "x" * 200}]))
        assert wait_until(lambda: slow.started == slow.calls + 1)
        rst_close(c.sock)
        assert wait_until(lambda: all(ch.peer[1] != client_port for ch in channels(server)))
        assert pool.used > 0 and slow.calls < slow.started
        gate.set()
        assert drained()

        # The handler closes the connection instead of answering.
        server.apis.set_handlers({**server.apis.handlers, 19: closer})
        with RawClient(port) as c:
            c.send(19, 7, {"topics": [], "timeout_ms": 1000, "validate_only": False})
            assert closed_by_server(c.sock)
        assert drained()

        # Idle expiry of a connection holding a partial frame's grant.
        c = RawClient(port)
        c.send_raw(struct.pack(">i", 30_000) + b"y" * 10)
        assert wait_until(lambda: pool.used == 30_000)
        assert closed_by_server(c.sock, timeout=10)
        c.close()
        assert drained()

        # Graceful stop: requests read after it began are dropped unanswered.
        with RawClient(port) as c:
            assert c.call(18, 0, {})["error_code"] == 0
            for p in server.socket_server.processors:
                p.stop_reading()
            c.send(18, 0, {})
            c.send_raw(struct.pack(">i", 20_000) + b"z" * 10)
            assert drained()
        assert server_threads_alive(server)
    assert pool.used == 0


def test_requests_still_queued_at_shutdown_give_their_memory_back():
    gate = threading.Event()
    slow = SlowHandler(metadata, gate=gate)
    config = make_config(queued_max_request_bytes=200 * 1024 * 1024, num_io_threads=1)
    server = KafkaServer(config)
    server.apis.set_handlers({**server.apis.handlers, 3: slow})
    server.startup()
    pool = server.socket_server.memory_pool
    try:
        with RawClient(server.bound_port()) as a, RawClient(server.bound_port()) as b:
            a.send(3, 12, metadata_body(12, topics=[{"name": "a"}]))
            assert wait_until(lambda: slow.started == 1)
            b.send(3, 12, metadata_body(12, topics=[{"name": "b"}]))
            assert wait_until(lambda: server.request_channel.request_queue_size() == 1)
            assert pool.used > 0
            # Hard stop: the queued request is dropped (RequestChannel.clear), the one
            # in the handler finishes once the queue is cleared.
            real_clear = server.request_channel.clear

            def clear_then_open_the_gate():
                real_clear()
                gate.set()

            server.request_channel.clear = clear_then_open_the_gate
            server.shutdown(graceful=False)
    finally:
        gate.set()
        server.shutdown(graceful=False)
    assert slow.calls == 1
    assert pool.used == 0


# --- MemoryError on the read path -----------------------------------------------------------

class FailingPool(SimpleMemoryPool):
    """Raises MemoryError for one frame size, as an allocation failing would."""

    FAIL_SIZE = 7777

    def try_allocate(self, size_bytes: int) -> bool:
        if size_bytes == self.FAIL_SIZE:
            raise MemoryError
        return super().try_allocate(size_bytes)


def _oom_lines(caplog):
    """WARNING and above (the disconnect is also noted at DEBUG, as every one is)."""
    return [r for r in caplog.records
            if r.levelno >= logging.WARNING and "out of memory" in r.getMessage()]


def test_a_memory_error_allocating_closes_only_that_connection(caplog):
    size = 1024 * 1024
    pool = FailingPool(size, size)
    with caplog.at_level(logging.DEBUG, logger="kafka_net"), \
            running_server(make_config(queued_max_request_bytes=size,
                                       socket_request_max_bytes=size), memory_pool=pool) as server:
        port = server.bound_port()
        with RawClient(port) as bystander, RawClient(port) as victim:
            assert bystander.call(18, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
            victim.send_raw(struct.pack(">i", FailingPool.FAIL_SIZE) + b"q" * 5000)
            assert closed_by_server(victim.sock)
            healthy(port, bystander)
            lines = _oom_lines(caplog)
            assert len(lines) == 1
            assert f":{port_of(victim)}" in lines[0].getMessage()
            assert lines[0].exc_info is None          # one line, no traceback
        assert server_threads_alive(server)
        assert wait_until(lambda: pool.used == 0)


def test_a_memory_error_buffering_read_bytes_closes_the_connection_once(monkeypatch, caplog):
    """The bug of issue 8: ``self._buf += data`` raised MemoryError, the bytes were
    lost, the connection stayed open and every 64 KiB read logged a traceback."""
    real = FrameDecoder.receive_data

    def receive_data(self, data):
        if b"BOOM" in bytes(data):
            raise MemoryError
        real(self, data)

    monkeypatch.setattr(FrameDecoder, "receive_data", receive_data)
    config = make_config(num_network_threads=1)
    with caplog.at_level(logging.DEBUG, logger="kafka_net"), running_server(config) as server:
        port = server.bound_port()
        with RawClient(port) as bystander:
            victims = [RawClient(port) for _ in range(3)]
            for victim in victims:
                # 1 MB of it: before the fix, one traceback per read.
                send_in_background(victim, struct.pack(">i", 1_000_000) + b"BOOM" * 250_000)
            for victim in victims:
                assert closed_by_server(victim.sock)
                victim.close()
            healthy(port, bystander)
        lines = _oom_lines(caplog)
        # Three connections, one Processor: the first line, the rest rate-limited.
        assert len(lines) == 1 and lines[0].exc_info is None
        assert not [r for r in caplog.records if r.exc_info]
        assert server_threads_alive(server)


def test_a_memory_error_parsing_closes_that_connection_with_one_line(caplog):
    config = make_config(num_network_threads=1, queued_max_request_bytes=104857600)
    with caplog.at_level(logging.DEBUG, logger="kafka_net"), running_server(config) as server:
        processor = server.socket_server.processors[0]
        real = processor._parse_request

        def parse(frame):
            if b"oom-client" in frame:
                raise MemoryError
            return real(frame)

        processor._parse_request = parse
        port = server.bound_port()
        with RawClient(port) as bystander, RawClient(port) as victim:
            victim.send_raw(encode_request(18, 3, 1, API_VERSIONS_V3_BODY,
                                           client_id="oom-client"))
            assert closed_by_server(victim.sock)
            healthy(port, bystander)
        lines = _oom_lines(caplog)
        assert len(lines) == 1 and "parsing" in lines[0].getMessage()
        assert server_threads_alive(server)
        assert wait_until(lambda: server.socket_server.memory_pool.used == 0)


# --- metrics ----------------------------------------------------------------------------------

def test_without_a_bound_the_metrics_are_kafkas_memory_pool_none():
    with running_server(make_config()) as server:
        metrics = server_snapshot(server)
        assert metrics[USED] == 0 and metrics[AVAILABLE] == 2**63 - 1
        assert metrics[DEPLETED] == 0 and metrics[DEPLETED_PCT] == 0
        assert not server.socket_server.memory_pool.bounded


# --- a real client under a small bound ---------------------------------------------------------

@pytest.mark.interop
def test_kafka_python_producers_wait_for_memory_and_every_message_lands():
    from kafka import KafkaConsumer, KafkaProducer

    gate = threading.Event()
    slow_produce = SlowHandler(produce, gate=gate)
    bound = 40 * 1024
    pool = PeakPool(bound, bound)
    config = fast_group_config(socket_request_max_bytes=bound, queued_max_request_bytes=bound)
    values = [bytes([65 + i]) * (30 * 1024) for i in range(3)]   # one ~30 KB Produce each
    with running_server(config, {0: slow_produce}, pool) as server:
        results, errors = [], []

        def produce_one(value: bytes) -> None:
            producer = KafkaProducer(bootstrap_servers=bootstrap(server), acks="all",
                                     linger_ms=0, max_request_size=bound)
            try:
                results.append(producer.send("pooled", value).get(timeout=30))
            except Exception as exc:   # reported below, in the test thread
                errors.append(exc)
            finally:
                producer.close(timeout=10)

        threads = [threading.Thread(target=produce_one, args=(v,), daemon=True)
                   for v in values]
        for t in threads:
            t.start()
        # Two 30 KB requests fill the 40 KB pool (the second one overshoots it, as
        # Kafka's non-strict pool may); the third producer is refused and waits.
        assert wait_until(lambda: pool.refusals > 0 and slow_produce.started == 2,
                          timeout=20)
        assert slow_produce.started == 2 and pool.is_out_of_memory
        gate.set()
        for t in threads:
            t.join(40)
        assert errors == [] and len(results) == 3
        consumer = KafkaConsumer("pooled", bootstrap_servers=bootstrap(server),
                                 auto_offset_reset="earliest", consumer_timeout_ms=10_000)
        try:
            got = []
            for record in consumer:
                got.append(record.value)
                if len(got) == 3:
                    break
        finally:
            consumer.close()
        assert sorted(got) == sorted(values) and slow_produce.calls == 3
        assert pool.peak <= bound + bound - 1
        assert wait_until(lambda: pool.used == 0)
