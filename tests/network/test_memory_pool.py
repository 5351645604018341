"""SimpleMemoryPool and MemoryPool.NONE: Kafka's semantics (reference 1.I, I1-I4).

Kafka's SimpleMemoryPoolTest checks the same things: non-strict allocation
succeeds while any memory is left (and may overshoot by one request), strict
only with the whole size, sizes outside 1..maxSingleAllocation are refused
with an error, and release from other threads keeps the count exact.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.network.memory_pool import (
    LONG_MAX, MemoryPool, SimpleMemoryPool, memory_pool_for)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def test_non_strict_allocates_while_any_memory_is_left_and_may_overshoot():
    pool = SimpleMemoryPool(100, 80)
    assert pool.try_allocate(80)
    assert pool.available == 20 and pool.used == 80
    assert pool.try_allocate(80)          # 20 left: enough for non-strict
    assert pool.available == -60 and pool.used == 160
    assert pool.is_out_of_memory
    assert not pool.try_allocate(1)
    pool.release(80)
    assert pool.available == 20 and not pool.is_out_of_memory


def test_strict_allocates_only_the_whole_size():
    pool = SimpleMemoryPool(100, 80, strict=True)
    assert pool.try_allocate(80)
    assert not pool.try_allocate(21)
    assert pool.try_allocate(20)
    assert pool.available == 0 and pool.is_out_of_memory


@pytest.mark.parametrize("size", [0, -1, 81])
def test_sizes_outside_one_to_max_single_allocation_are_refused_with_an_error(size):
    pool = SimpleMemoryPool(100, 80)
    with pytest.raises(ValueError):
        pool.try_allocate(size)
    assert pool.used == 0


@pytest.mark.parametrize("size, single", [(0, 1), (100, 0), (100, 101), (-5, 1)])
def test_construction_needs_positive_sizes_and_single_at_most_size(size, single):
    with pytest.raises(ValueError):
        SimpleMemoryPool(size, single)


def test_none_pool_always_allocates_and_counts_nothing():
    pool = MemoryPool.NONE
    assert not pool.bounded
    assert pool.try_allocate(10**12)
    pool.release(10**12)
    assert (pool.available, pool.used, pool.is_out_of_memory) == (LONG_MAX, 0, False)


@pytest.mark.parametrize("queued, expected_bounded", [(-1, False), (0, False), (500, True)])
def test_the_broker_uses_a_pool_only_for_a_positive_bound(queued, expected_bounded):
    pool = memory_pool_for(queued, 500)
    assert pool.bounded is expected_bounded
    if expected_bounded:
        assert pool.size == 500 and pool.max_single_allocation == 500


def test_depleted_time_runs_from_the_first_refusal_to_the_next_release():
    clock = FakeClock()
    pool = SimpleMemoryPool(10, 10, clock=clock)
    assert pool.try_allocate(10)
    clock.now += 100
    assert not pool.try_allocate(5)       # dry spell starts
    clock.now += 50
    assert not pool.try_allocate(5)       # still the same spell
    assert pool.depleted_time_ns() == 50  # an ongoing spell counts
    clock.now += 30
    pool.release(10)                      # spell ends: 80 ns
    clock.now += 1000
    assert pool.depleted_time_ns() == 80
    assert pool.avg_depleted_fraction() == pytest.approx(80 / 1180)


def test_first_release_after_a_refusal_calls_the_recovery_listeners_once():
    pool = SimpleMemoryPool(10, 10)
    calls = []
    pool.add_recovery_listener(lambda: calls.append(1))
    assert pool.try_allocate(10)
    pool.release(10)
    assert calls == []                    # nobody was refused: no wake-up
    assert pool.try_allocate(10)
    assert not pool.try_allocate(1)
    pool.release(5)
    pool.release(5)
    assert calls == [1]


def test_poll_out_of_memory_arms_the_listener_only_while_out():
    pool = SimpleMemoryPool(10, 10)
    calls = []
    pool.add_recovery_listener(lambda: calls.append(1))
    assert pool.try_allocate(10)
    assert pool.poll_out_of_memory()      # out: the next release must wake us
    pool.release(10)
    assert calls == [1]
    assert not pool.poll_out_of_memory()
    assert pool.try_allocate(4)
    pool.release(4)
    assert calls == [1]


def test_release_from_many_threads_keeps_the_count_exact():
    pool = SimpleMemoryPool(1000, 10)
    granted = []
    for _ in range(100):
        assert pool.try_allocate(10)
        granted.append(10)
    assert pool.used == 1000

    def release_some(n):
        for _ in range(n):
            pool.release(10)

    threads = [threading.Thread(target=release_some, args=(25,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert pool.used == 0 and pool.available == 1000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 50)), max_size=60),
       st.booleans())
def test_used_is_always_the_sum_of_the_grants_outstanding(ops, strict):
    pool = SimpleMemoryPool(100, 50, strict=strict)
    outstanding = []
    for allocate, size in ops:
        if allocate or not outstanding:
            before = pool.available
            ok = pool.try_allocate(size)
            assert ok == (before >= (size if strict else 1))
            if ok:
                outstanding.append(size)
        else:
            pool.release(outstanding.pop())
        assert pool.used == sum(outstanding)
        assert pool.used <= 100 + (0 if strict else 50 - 1)
    for size in outstanding:
        pool.release(size)
    assert pool.used == 0
