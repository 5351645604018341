"""RequestQueue: when a put wakes a waiting handler, and that no request is left behind."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from kafka_net.network.request_queue import WAKE_AFTER_NS, RequestQueue


class Item:
    def __init__(self, start_time_ns: int) -> None:
        self.start_time_ns = start_time_ns


@pytest.fixture
def wakes(monkeypatch):
    q = RequestQueue(maxsize=4)
    count = []
    notify = q.not_empty.notify
    monkeypatch.setattr(q.not_empty, "notify", lambda n=1: (count.append(n), notify(n)))
    return q, count


def test_a_put_into_an_empty_queue_wakes_a_handler(wakes):
    q, count = wakes
    q.put(Item(time.monotonic_ns()))
    assert count == [1]


def test_a_put_behind_a_fresh_request_wakes_nobody(wakes):
    q, count = wakes
    q.put(Item(time.monotonic_ns()))
    assert count == [1]


def test_an_item_without_a_start_time_at_the_head_counts_as_old(wakes):
    q, count = wakes
    q.put("a sentinel")
    q.put(Item(time.monotonic_ns()))
    assert count == [1, 1]


def test_a_put_behind_a_request_that_waited_too_long_wakes_another(wakes):
    q, count = wakes
    q.put(Item(time.monotonic_ns() - 2 * WAKE_AFTER_NS))
    q.put(Item(time.monotonic_ns()))
    assert count == [1, 1]


def test_wake_true_always_wakes(wakes):
    q, count = wakes
    q.put(Item(time.monotonic_ns()))
    q.put(Item(time.monotonic_ns()), wake=True)
    assert count == [1, 1]


def test_one_awake_consumer_takes_everything_put_without_a_wake():
    q = RequestQueue(maxsize=100)
    taken = []

    def consume():
        while len(taken) < 50:
            taken.append(q.get(timeout=10))

    consumer = threading.Thread(target=consume)
    consumer.start()
    for i in range(50):
        q.put(Item(time.monotonic_ns()))
    consumer.join(timeout=30)
    assert not consumer.is_alive() and len(taken) == 50 and q.empty()


def test_full_queue_keeps_queue_semantics():
    q = RequestQueue(maxsize=1)
    q.put(Item(0))
    with pytest.raises(queue.Full):
        q.put_nowait(Item(0))
    with pytest.raises(queue.Full):
        q.put(Item(0), timeout=0.01)
    assert q.qsize() == 1 and q.get_nowait().start_time_ns == 0
