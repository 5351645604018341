"""KafkaRequestHandlerPool (kafka_net/server/handler_pool.py) on its own: a real
RequestChannel, a fake KafkaApis at the seam, and a fake Processor that records
the responses routed to it.

What it must do (Kafka's KafkaRequestHandler.run): call ``apis.handle`` for
each request; survive whatever ``handle`` raises, closing that connection;
give the request's pool bytes back whatever happened; stop on one sentinel
per thread, and not hang when stopped twice.
"""

from __future__ import annotations

import logging
import threading

import pytest

from kafka_net.network.memory_pool import SimpleMemoryPool
from kafka_net.network.request_channel import CloseConnectionResponse, Request, RequestChannel
from kafka_net.protocol.headers import RequestHeader
from kafka_net.server.handler_pool import KafkaRequestHandlerPool
from tests.support import wait_until

TIMEOUT = 10.0


class RecordingProcessor:
    """What the RequestChannel routes responses to (processor id 0)."""

    id = 0

    def __init__(self) -> None:
        self.responses: list = []

    def enqueue_response(self, response) -> None:
        self.responses.append(response)

    def response_queue_size(self) -> int:
        return len(self.responses)


class FakeApis:
    """``handle`` records each request; a request with client id "boom" raises;
    with ``gate`` set every call waits for it."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.handled: list[Request] = []
        self.threads: set[str] = set()
        self.gate = gate

    def handle(self, request: Request) -> None:
        if self.gate is not None:
            assert self.gate.wait(TIMEOUT)
        self.threads.add(threading.current_thread().name)
        if request.header.client_id == "boom":
            raise RuntimeError("a bug that escaped KafkaApis")
        self.handled.append(request)


def request(correlation_id: int, client_id: str = "c", pool=None, size: int = 0) -> Request:
    header = RequestHeader(18, 0, correlation_id, client_id, 1)
    return Request(0, f"conn-{correlation_id}", "PLAINTEXT", ("10.0.0.1", 5000), header, {},
                   0, buffer_size=size, memory_pool=pool)


@pytest.fixture
def channel():
    ch = RequestChannel(10)
    ch.add_processor(RecordingProcessor())
    return ch


@pytest.fixture
def running(channel):
    """(pool of 2 threads, its apis, the processor); stopped at the end."""
    apis = FakeApis()
    pool = KafkaRequestHandlerPool(channel, apis, 2)
    pool.start()
    try:
        yield pool, apis, channel._processors[0]
    finally:
        pool.shutdown()


def test_threads_are_named_as_kafkas_and_are_daemons(channel):
    pool = KafkaRequestHandlerPool(channel, FakeApis(), 3)
    assert [h.name for h in pool.handlers] == [
        f"data-plane-kafka-request-handler-{i}" for i in range(3)]
    assert all(h.daemon for h in pool.handlers)


def test_every_request_goes_to_apis_handle(running):
    pool, apis, _ = running
    for i in range(20):
        pool.request_channel.send_request(request(i))
    assert wait_until(lambda: len(apis.handled) == 20, TIMEOUT)
    assert sorted(r.header.correlation_id for r in apis.handled) == list(range(20))
    assert all(r.request_dequeue_time_ns >= r.start_time_ns for r in apis.handled)
    assert wait_until(lambda: sum(h.handled for h in pool.handlers) == 20, TIMEOUT)


def test_an_escaping_exception_closes_that_connection_and_the_thread_lives_on(
        running, caplog):
    pool, apis, processor = running
    caplog.set_level(logging.ERROR, logger="kafka_net.server.handler_pool")
    bad = request(1, client_id="boom")
    pool.request_channel.send_request(bad)
    assert wait_until(lambda: processor.responses, TIMEOUT)
    [response] = processor.responses
    assert isinstance(response, CloseConnectionResponse) and response.request is bad
    assert "unexpected error handling api_key=18" in caplog.text
    for i in range(2, 6):                       # both threads still serve
        pool.request_channel.send_request(request(i))
    assert wait_until(lambda: len(apis.handled) == 4, TIMEOUT)
    assert all(h.is_alive() for h in pool.handlers)


def test_even_a_failing_close_does_not_kill_the_thread(channel, caplog):
    apis = FakeApis()
    pool = KafkaRequestHandlerPool(channel, apis, 1)

    def broken_send_response(response):
        raise RuntimeError("the channel is broken too")

    channel.send_response = broken_send_response
    caplog.set_level(logging.ERROR, logger="kafka_net.server.handler_pool")
    pool.start()
    try:
        channel.send_request(request(1, client_id="boom"))
        channel.send_request(request(2))
        assert wait_until(lambda: len(apis.handled) == 1, TIMEOUT)
        assert "could not close conn-1" in caplog.text
        assert pool.handlers[0].is_alive()
    finally:
        pool.shutdown()


@pytest.mark.parametrize("client_id", ["c", "boom"], ids=["answered", "raised"])
def test_the_requests_pool_bytes_go_back_whatever_happened(running, client_id):
    pool, apis, processor = running
    memory = SimpleMemoryPool(1000, 1000)
    assert memory.try_allocate(300)
    pool.request_channel.send_request(request(1, client_id, memory, 300))
    assert wait_until(lambda: memory.available == 1000, TIMEOUT)


def test_shutdown_stops_every_thread_and_twice_does_not_hang():
    """One sentinel per live thread: with a queue smaller than the pool and
    after a second call there is no sentinel nobody takes."""
    channel = RequestChannel(1)
    channel.add_processor(RecordingProcessor())
    pool = KafkaRequestHandlerPool(channel, FakeApis(), 3)
    pool.start()
    stopper = threading.Thread(target=lambda: (pool.shutdown(), pool.shutdown()), daemon=True)
    stopper.start()
    stopper.join(TIMEOUT)
    assert not stopper.is_alive(), "shutdown hung"
    assert not any(h.is_alive() for h in pool.handlers)
    assert channel.request_queue_size() == 0


def test_shutdown_before_start_does_not_block(channel):
    pool = KafkaRequestHandlerPool(channel, FakeApis(), 2)
    pool.shutdown()
    assert channel.request_queue_size() == 0


def test_requests_queued_before_shutdown_are_handled_first(channel):
    """The sentinels go behind what is already queued: a graceful stop answers it."""
    gate = threading.Event()
    apis = FakeApis(gate)
    pool = KafkaRequestHandlerPool(channel, apis, 1)
    pool.start()
    for i in range(3):
        channel.send_request(request(i))
    stopper = threading.Thread(target=pool.shutdown, daemon=True)
    stopper.start()
    gate.set()
    stopper.join(TIMEOUT)
    assert not stopper.is_alive()
    assert [r.header.correlation_id for r in apis.handled] == [0, 1, 2]


def test_idle_fraction_is_a_fraction(channel):
    assert KafkaRequestHandlerPool(channel, FakeApis(), 0).avg_idle_fraction() == 1.0
    pool = KafkaRequestHandlerPool(channel, FakeApis(), 2)
    pool.start()
    try:
        assert 0.0 <= pool.avg_idle_fraction() <= 1.0
    finally:
        pool.shutdown()
