"""Purgatory: delayed operations completed by an event or by their deadline, exactly once."""

from __future__ import annotations

import threading

import pytest

from kafka_net.server import purgatory as purgatory_module
from kafka_net.server.purgatory import DelayedOperation, Purgatory
from tests.server.conftest import wait_until

LONG = 60_000  # a deadline no test waits for


class Op(DelayedOperation):
    """Completes when ``ready`` is set; counts its callbacks."""

    def __init__(self, delay_ms: int = LONG, ready: bool = False) -> None:
        super().__init__(delay_ms)
        self.ready = ready
        self.try_calls = 0
        self.completions = 0
        self.expirations = 0
        self._count_lock = threading.Lock()
        self.completed_event = threading.Event()

    def try_complete(self) -> bool:
        with self._count_lock:
            self.try_calls += 1
        if self.ready:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        with self._count_lock:
            self.completions += 1
        self.completed_event.set()

    def on_expiration(self) -> None:
        with self._count_lock:
            self.expirations += 1


@pytest.fixture
def purgatory():
    p = Purgatory("test")
    p.start()
    try:
        yield p
    finally:
        p.shutdown()


def test_operation_ready_at_once_completes_without_being_watched(purgatory):
    op = Op(ready=True)
    assert purgatory.try_complete_else_watch(op, ["k"]) is True
    assert op.is_completed and op.completions == 1
    assert purgatory.watched() == 0
    assert purgatory.check_and_complete("k") == 0


def test_completes_on_event(purgatory):
    op = Op()
    assert purgatory.try_complete_else_watch(op, ["k"]) is False
    assert purgatory.watched() == 1
    assert purgatory.check_and_complete("other") == 0
    assert not op.is_completed
    op.ready = True
    assert purgatory.check_and_complete("k") == 1
    assert op.completions == 1 and op.expirations == 0
    assert purgatory.watched() == 0
    # A second event finds nothing: the completed operation left the watcher list.
    assert purgatory.check_and_complete("k") == 0
    assert op.completions == 1


def test_event_on_any_of_several_keys_completes_once(purgatory):
    op = Op()
    purgatory.try_complete_else_watch(op, ["a", "b", "c"])
    assert purgatory.watched() == 3  # one entry per key, as in Kafka
    op.ready = True
    assert purgatory.check_and_complete("b") == 1
    assert purgatory.check_and_complete("a") == 0
    assert purgatory.check_and_complete("c") == 0
    assert op.completions == 1
    assert purgatory.watched() == 0


def test_completes_on_timeout_exactly_once(purgatory):
    op = Op(delay_ms=20)
    assert purgatory.try_complete_else_watch(op, ["k"]) is False
    assert op.completed_event.wait(5), "the timer never expired the operation"
    assert wait_until(lambda: op.expirations == 1)
    assert op.completions == 1
    # A late event does nothing: the operation is already complete.
    op.ready = True
    assert purgatory.check_and_complete("k") == 0
    assert op.completions == 1 and op.expirations == 1


def test_operations_expire_in_deadline_order_not_insertion_order(purgatory):
    order = []

    class Recording(Op):
        def __init__(self, name, delay_ms):
            super().__init__(delay_ms)
            self.name = name

        def on_complete(self):
            order.append(self.name)
            super().on_complete()

    late, early = Recording("late", 300), Recording("early", 10)
    purgatory.try_complete_else_watch(late, ["k"])
    purgatory.try_complete_else_watch(early, ["k"])
    assert wait_until(lambda: len(order) == 2)
    assert order == ["early", "late"]


def test_zero_and_negative_delay_expire_immediately(purgatory):
    ops = [Op(delay_ms=0), Op(delay_ms=-5)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["k"])
    assert all(op.completed_event.wait(5) for op in ops)
    assert [op.expirations for op in ops] == [1, 1]


def test_event_and_timer_race_complete_exactly_once():
    """Hammer: many operations whose deadline is now, completed concurrently by
    event threads and the timer; on_complete must run exactly once for each."""
    p = Purgatory("race")
    p.start()
    try:
        ops = [Op(delay_ms=i % 3) for i in range(400)]
        for op in ops:
            p.try_complete_else_watch(op, ["hot"])
        for op in ops:
            op.ready = True
        barrier = threading.Barrier(8)

        def hammer():
            barrier.wait()
            for _ in range(20):
                p.check_and_complete("hot")
                for op in ops[::7]:
                    op.force_complete()

        threads = [threading.Thread(target=hammer) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert not any(t.is_alive() for t in threads)
        assert wait_until(lambda: all(op.is_completed for op in ops))
    finally:
        p.shutdown()
    assert [op.completions for op in ops] == [1] * len(ops)
    # on_expiration only for those the timer won, and never more than once.
    assert all(op.expirations in (0, 1) for op in ops)


def test_force_complete_returns_true_only_to_the_winner():
    op = Op()
    results = []
    lock = threading.Lock()
    barrier = threading.Barrier(16)

    def race():
        barrier.wait()
        won = op.force_complete()
        with lock:
            results.append(won)

    threads = [threading.Thread(target=race) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert results.count(True) == 1 and results.count(False) == 15
    assert op.completions == 1


def test_on_complete_that_raises_still_counts_as_completed(purgatory):
    class Boom(Op):
        def on_complete(self):
            super().on_complete()
            raise RuntimeError("boom")

    op = Boom()
    purgatory.try_complete_else_watch(op, ["k"])
    op.ready = True
    assert purgatory.check_and_complete("k") == 1
    assert op.is_completed and op.completions == 1
    assert op.force_complete() is False


def test_second_check_catches_event_between_first_check_and_watch(purgatory):
    """try_complete_else_watch re-checks after watching: an event that happened
    between the first check and the watch is not lost."""

    class BecomesReadyAfterFirstCheck(Op):
        def try_complete(self):
            result = super().try_complete()
            self.ready = True  # the "event" lands right after the first check
            return result

    op = BecomesReadyAfterFirstCheck()
    assert purgatory.try_complete_else_watch(op, ["k"]) is True
    assert op.try_calls == 2
    assert op.completions == 1
    # It completed on the second check, so it was never armed on the timer, and
    # the watcher entry it left is dropped at the next event on the key.
    assert purgatory.watched() == 0
    assert purgatory.check_and_complete("k") == 0


def test_complete_all_force_completes_every_watched_operation(purgatory):
    ops = [Op() for _ in range(5)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [f"k{i}", "shared"])
    assert purgatory.complete_all() == 5
    assert [op.completions for op in ops] == [1] * 5
    assert [op.expirations for op in ops] == [0] * 5  # not a timeout
    assert purgatory.watched() == 0
    assert purgatory.complete_all() == 0


def test_complete_all_skips_already_completed_operations(purgatory):
    done, waiting = Op(), Op()
    purgatory.try_complete_else_watch(done, ["k"])
    purgatory.try_complete_else_watch(waiting, ["k"])
    done.force_complete()
    assert purgatory.complete_all() == 1
    assert done.completions == 1 and waiting.completions == 1


def test_schedule_arms_only_the_timer(purgatory):
    op = Op(delay_ms=10)
    purgatory.schedule(op)
    assert purgatory.watched() == 0  # not watched under any key
    assert op.completed_event.wait(5)
    assert wait_until(lambda: op.expirations == 1)
    assert op.try_calls == 0  # no event check is ever made


def test_scheduled_operation_completed_early_is_not_expired(purgatory):
    op = Op(delay_ms=30)
    purgatory.schedule(op)
    assert op.force_complete() is True
    sentinel = Op(delay_ms=60)
    purgatory.schedule(sentinel)
    assert sentinel.completed_event.wait(5)
    assert op.completions == 1 and op.expirations == 0


def test_shutdown_joins_the_timer_thread():
    p = Purgatory("stopping")
    p.start()
    timer = p._timer
    assert timer.is_alive() and timer.daemon
    assert timer.name == "ExpirationReaper-stopping"
    pending = Op(delay_ms=LONG)
    p.try_complete_else_watch(pending, ["k"])
    p.shutdown()
    assert not timer.is_alive()
    assert not pending.is_completed  # shutdown does not complete operations
    p.shutdown()  # idempotent


def test_shutdown_of_a_purgatory_never_started():
    p = Purgatory("never")
    p.shutdown()
    assert not p._timer.is_alive()


def test_shutdown_while_the_timer_waits_on_an_empty_heap():
    p = Purgatory("idle")
    p.start()
    assert wait_until(lambda: p._timer.is_alive())
    p.shutdown()
    assert not p._timer.is_alive()


def test_timer_expired_operations_are_purged_from_watcher_lists(purgatory):
    ops = [Op(delay_ms=1) for _ in range(10)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [f"quiet-{i}"])
    assert wait_until(lambda: all(op.is_completed for op in ops))
    # Completed operations are not counted, but still sit in the lists...
    assert purgatory.watched() == 0
    assert len(purgatory._watchers) == 10
    purgatory.purge_completed()
    assert len(purgatory._watchers) == 0


def test_purge_keeps_live_operations(purgatory):
    live, done = Op(), Op()
    purgatory.try_complete_else_watch(live, ["k"])
    purgatory.try_complete_else_watch(done, ["k", "j"])
    done.force_complete()
    purgatory.purge_completed()
    assert purgatory._watchers == {"k": [live]}


def test_purge_runs_every_purge_interval_additions(purgatory, monkeypatch):
    monkeypatch.setattr(purgatory_module, "PURGE_INTERVAL", 4)
    first = [Op() for _ in range(3)]
    for i, op in enumerate(first):
        purgatory.try_complete_else_watch(op, [f"k{i}"])
    for op in first:
        op.force_complete()
    assert len(purgatory._watchers) == 3
    purgatory.try_complete_else_watch(Op(), ["last"])  # the 4th addition sweeps
    assert list(purgatory._watchers) == ["last"]


def test_check_and_complete_drops_completed_entries(purgatory):
    a, b = Op(), Op()
    purgatory.try_complete_else_watch(a, ["k"])
    purgatory.try_complete_else_watch(b, ["k"])
    a.force_complete()
    assert purgatory.check_and_complete("k") == 0
    assert purgatory._watchers["k"] == [b]
    b.force_complete()
    assert purgatory.check_and_complete("k") == 0
    assert "k" not in purgatory._watchers


def test_concurrent_watch_and_events_complete_each_operation_once(purgatory):
    """Operations become ready while they are being watched and while other
    threads fire events on their key: none completes twice, and after one last
    event none is left waiting."""
    ops = [Op() for _ in range(300)]
    stop = threading.Event()

    def fire():
        while not stop.is_set():
            purgatory.check_and_complete("k")

    def flip():
        for op in ops:
            op.ready = True

    firers = [threading.Thread(target=fire) for _ in range(3)]
    flipper = threading.Thread(target=flip)
    for t in firers:
        t.start()
    try:
        flipper.start()
        for op in ops:
            purgatory.try_complete_else_watch(op, ["k"])
        flipper.join(5)
    finally:
        stop.set()
        for t in firers:
            t.join(5)
    purgatory.check_and_complete("k")
    assert [op.completions for op in ops] == [1] * len(ops)
    assert purgatory.watched() == 0
