"""RequestChannel: bounded request queue, shutdown sentinels, response routing (reference 1.F)."""

from __future__ import annotations

import queue
import threading

import pytest

from kafka_net.network.request_channel import (
    SHUTDOWN, CloseConnectionResponse, EndThrottlingResponse, NoOpResponse, Request,
    RequestChannel, SendResponse, StartThrottlingResponse)
from kafka_net.protocol.headers import RequestHeader


def make_request(processor_id: int = 0, correlation_id: int = 0,
                 connection_id: str = "a:1-b:2-0-0") -> Request:
    header = RequestHeader(18, 0, correlation_id, "test", 1)
    return Request(processor_id, connection_id, "PLAINTEXT", ("127.0.0.1", 2), header, {}, 0)


class FakeProcessor:
    def __init__(self, processor_id: int) -> None:
        self.id = processor_id
        self.responses = []

    def enqueue_response(self, response) -> None:
        self.responses.append(response)

    def response_queue_size(self) -> int:
        return len(self.responses)


def test_requests_come_out_in_fifo_order():
    ch = RequestChannel(10)
    reqs = [make_request(correlation_id=i) for i in range(5)]
    for r in reqs:
        ch.send_request(r)
    assert ch.request_queue_size() == 5
    assert [ch.receive_request(1) for _ in reqs] == reqs
    assert ch.receive_request(0.01) is None  # empty: times out, returns None


def test_full_queue_with_timeout_raises_full():
    ch = RequestChannel(2)
    ch.send_request(make_request())
    ch.send_request(make_request())
    with pytest.raises(queue.Full):
        ch.send_request(make_request(), timeout=0.05)
    assert ch.request_queue_size() == 2


def test_full_queue_blocks_sender_until_a_handler_takes_one():
    ch = RequestChannel(1)
    first, second = make_request(correlation_id=1), make_request(correlation_id=2)
    ch.send_request(first)
    done = threading.Event()

    def producer():
        ch.send_request(second)  # no timeout: must block
        done.set()

    t = threading.Thread(target=producer, daemon=True)
    t.start()
    # Behaviour, not time: while the queue stays full the put has not returned.
    assert not done.wait(0.2)
    assert ch.request_queue_size() == 1
    assert ch.receive_request(1) is first
    assert done.wait(5), "sender still blocked after the queue freed a slot"
    t.join(5)
    assert ch.receive_request(1) is second


def test_shutdown_sentinel_per_call():
    ch = RequestChannel(10)
    r = make_request()
    ch.send_request(r)
    ch.send_shutdown_request()
    ch.send_shutdown_request()
    assert ch.receive_request(1) is r
    assert ch.receive_request(1) is SHUTDOWN
    assert ch.receive_request(1) is SHUTDOWN
    assert ch.receive_request(0.01) is None


def test_clear_empties_the_request_queue():
    ch = RequestChannel(10)
    for i in range(4):
        ch.send_request(make_request(correlation_id=i))
    ch.clear()
    assert ch.request_queue_size() == 0
    assert ch.receive_request(0.01) is None


@pytest.mark.parametrize("kind", [SendResponse, NoOpResponse, CloseConnectionResponse,
                                  StartThrottlingResponse, EndThrottlingResponse])
def test_response_routed_to_owning_processor(kind):
    ch = RequestChannel(10)
    p0, p1, p2 = FakeProcessor(0), FakeProcessor(1), FakeProcessor(2)
    for p in (p0, p1, p2):
        ch.add_processor(p)
    request = make_request(processor_id=1)
    response = kind(request, b"x") if kind is SendResponse else kind(request)
    ch.send_response(response)
    assert p1.responses == [response]
    assert p0.responses == [] and p2.responses == []
    assert ch.response_queue_sizes() == {0: 0, 1: 1, 2: 0}


def test_response_for_removed_processor_is_dropped():
    ch = RequestChannel(10)
    p0, p1 = FakeProcessor(0), FakeProcessor(1)
    ch.add_processor(p0)
    ch.add_processor(p1)
    ch.remove_processor(1)
    ch.send_response(SendResponse(make_request(processor_id=1), b"x"))  # must not raise
    ch.send_response(NoOpResponse(make_request(processor_id=7)))        # never registered
    assert p0.responses == [] and p1.responses == []
    assert ch.response_queue_sizes() == {0: 0}
    ch.remove_processor(1)  # removing twice is harmless


def test_duplicate_processor_id_is_refused():
    ch = RequestChannel(10)
    ch.add_processor(FakeProcessor(0))
    with pytest.raises(ValueError):
        ch.add_processor(FakeProcessor(0))

