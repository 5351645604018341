"""WakeupSocketpair (kafka_net/network/wakeup.py): coalesced wake-ups that never lose one.

The module's argument, in two halves, each pinned down here:

* Ordering: a handler enqueues its response, *then* wakes; the Processor
  drains the wake-up bytes, *then* reads its queue.
* Coalescing: a wake-up that finds one pending writes nothing; ``drain``
  clears ``pending`` only *after* it has read, so ``pending`` never stays set
  over an empty pipe.

The interleaving tests run the real ``wakeup`` and ``drain`` on two threads that
take one visible step at a time (a read or write of ``pending``, a ``send``, a
``recv``, the queue append and the queue read) in an order the test picks, and
go through *every* order.  After each, the invariant is checked: the response
was seen, or the read end is readable (the next ``select`` returns at once);
and ``pending`` is never left set with nothing to read.  The same explorer run
on the swapped orders (a handler that wakes before it enqueues, a ``drain``
that clears before it reads, a ``wakeup`` that sends before it sets
``pending``) must find a schedule that breaks the invariant: proof that the
tests would fail if the code's order were swapped.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading

import pytest

from kafka_net.network.wakeup import WakeupSocketpair

TIMEOUT = 10.0  # a bound on a hung step, never reached when the test passes


def pending_bytes(w: WakeupSocketpair) -> int:
    try:
        return len(w.read_sock.recv(4096, socket.MSG_PEEK))
    except BlockingIOError:
        return 0


def test_wakeups_coalesce_until_drained():
    w = WakeupSocketpair()
    try:
        for _ in range(10):
            w.wakeup()
        assert pending_bytes(w) == 1
        w.drain()
        assert pending_bytes(w) == 0 and not w.pending
        w.wakeup()                                  # after a drain it writes again
        assert pending_bytes(w) == 1
    finally:
        w.close()


def test_no_wakeup_is_lost_under_concurrent_wakers():
    """Many threads each append then wake; one reader drains then reads the list, as
    the Processor does.  Every item must be seen without waiting for a poll timeout:
    the reader's select has a 5 s timeout and the test fails if one ever runs out."""
    w = WakeupSocketpair()
    sel = selectors.DefaultSelector()
    sel.register(w.fileno(), selectors.EVENT_READ)
    items: list[int] = []
    seen = 0
    total = 8 * 2000

    def waker(base: int) -> None:
        for i in range(2000):
            items.append(base + i)
            w.wakeup()

    threads = [threading.Thread(target=waker, args=(k * 2000,)) for k in range(8)]
    try:
        for t in threads:
            t.start()
        while seen < total:
            if seen == len(items):
                assert sel.select(5.0), f"lost wake-up: {seen} of {total} seen"
                w.drain()
            seen = len(items)
    finally:
        for t in threads:
            t.join()
        sel.close()
        w.close()


def test_wakeup_during_a_drain_leaves_the_next_wakeup_working():
    """Deterministic form of the race the ordering in drain() is there for: a handler
    wakes the Processor while the Processor is inside drain().  Whatever drain()
    reads then, a later wakeup must still make the read end readable."""
    w = WakeupSocketpair()
    real_sock = w.read_sock

    class RacingSocket:
        raced = False

        def fileno(self):
            return real_sock.fileno()

        def recv(self, n, *flags):
            if not RacingSocket.raced:      # a handler runs while drain() reads
                RacingSocket.raced = True
                w.wakeup()
            return real_sock.recv(n, *flags)

        def close(self):
            real_sock.close()

    try:
        w.wakeup()
        w.read_sock = RacingSocket()
        w.drain()
        w.read_sock = real_sock
        if pending_bytes(w) == 0:           # drain() took every byte...
            w.wakeup()                      # ...so the next wakeup must write one
        assert pending_bytes(w) == 1
    finally:
        w.read_sock = real_sock
        w.close()


def test_fileno_is_the_read_end_and_close_closes_both():
    w = WakeupSocketpair()
    assert w.fileno() == w.read_sock.fileno()
    w.close()
    assert w.read_sock.fileno() == -1 and w.write_sock.fileno() == -1


def test_wakeup_after_close_is_harmless():
    """Shutdown closes the pair while a handler may still wake it: no exception."""
    w = WakeupSocketpair()
    w.close()
    w.wakeup()


def test_drain_on_an_empty_pipe_clears_pending():
    w = WakeupSocketpair()
    try:
        w.pending = True          # a wake-up set the flag; its byte never arrived
        w.drain()
        assert not w.pending
        w.wakeup()
        assert pending_bytes(w) == 1
    finally:
        w.close()


def test_a_full_pipe_on_wakeup_is_not_an_error():
    """A full pipe means a wake-up is already pending: wakeup() swallows the
    BlockingIOError, and one drain empties the pipe however full it was."""
    w = WakeupSocketpair()
    try:
        w.write_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        with pytest.raises(BlockingIOError):
            while True:
                w.write_sock.send(b"\x00" * 4096)
        w.wakeup()
        assert w.pending
        w.drain()
        assert pending_bytes(w) == 0 and not w.pending
    finally:
        w.close()


# -- every interleaving of one handler and one Processor iteration ---------------------


class Interleaver:
    """Runs actors, each on its own thread, one visible step at a time.

    An actor calls :meth:`step` before each visible action and blocks there until
    the scheduler lets it go; between two steps it runs alone.  ``run`` takes a
    ``choose(ready)`` that picks which waiting actor moves next."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: dict[str, str] = {}   # actor -> the step it waits to take
        self._done: set[str] = set()
        self._go: str | None = None
        self._actors: set[str] = set()
        self.trace: list[tuple[str, str]] = []

    def step(self, what: str) -> None:
        me = threading.current_thread().name
        if me not in self._actors:
            return                       # set-up on the test's thread: not a step
        with self._cond:
            self._waiting[me] = what
            self._cond.notify_all()
            assert self._cond.wait_for(lambda: self._go == me, TIMEOUT), "step never granted"
            self._go = None
            self._cond.notify_all()

    def run(self, actors: dict, choose) -> None:
        self._actors = set(actors)
        errors: list[BaseException] = []

        def body(name, fn):
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 (reported on the test's thread)
                errors.append(e)
            finally:
                with self._cond:
                    self._done.add(name)
                    self._cond.notify_all()

        threads = [threading.Thread(target=body, args=(n, f), name=n, daemon=True)
                   for n, f in actors.items()]
        for t in threads:
            t.start()
        with self._cond:
            while True:
                settled = self._cond.wait_for(
                    lambda: self._go is None and
                    all(n in self._waiting or n in self._done for n in actors), TIMEOUT)
                assert settled, "an actor neither stepped nor finished"
                ready = sorted(self._waiting)
                if not ready:
                    break
                name = choose(ready)
                self.trace.append((name, self._waiting.pop(name)))
                self._go = name
                self._cond.notify_all()
        for t in threads:
            t.join(TIMEOUT)
        if errors:
            raise errors[0]


class SteppedSocket:
    """A socket end whose send/recv are steps of the Interleaver."""

    def __init__(self, sock: socket.socket, steps: Interleaver) -> None:
        self._sock, self._steps = sock, steps

    def send(self, data):
        self._steps.step("send")
        return self._sock.send(data)

    def recv(self, n, *flags):
        self._steps.step("recv")
        return self._sock.recv(n, *flags)

    def fileno(self):
        return self._sock.fileno()

    def close(self):
        self._sock.close()


def stepped(cls):
    """``cls`` (WakeupSocketpair or a variant) with every read and write of
    ``pending`` a step, and its sockets stepped."""

    class Stepped(cls):
        def __init__(self, steps: Interleaver) -> None:
            self._steps = steps
            super().__init__()
            # No lock: the explorer then also tries orders that wakeup's lock rules
            # out (steps inside it interleaved), a superset of the real schedules.
            self._lock = contextlib.nullcontext()
            self.read_sock = SteppedSocket(self.read_sock, steps)
            self.write_sock = SteppedSocket(self.write_sock, steps)

        @property
        def pending(self):
            self._steps.step("read pending")
            return self._pending

        @pending.setter
        def pending(self, value):
            self._steps.step(f"pending = {value}")
            self._pending = value

    return Stepped


def handler_enqueue_then_wake(steps, w, queue, item):
    steps.step("enqueue")
    queue.append(item)
    w.wakeup()


def handler_wake_then_enqueue(steps, w, queue, item):   # the wrong order
    w.wakeup()
    steps.step("enqueue")
    queue.append(item)


def processor_drain_then_read(steps, w, queue, seen):
    w.drain()
    steps.step("read queue")
    seen.extend(queue)
    queue.clear()


class ClearThenRead(WakeupSocketpair):
    """The wrong drain(): clears ``pending`` before it reads."""

    def drain(self) -> None:
        self.pending = False
        try:
            while len(self.read_sock.recv(4096)) == 4096:
                pass
        except BlockingIOError:
            pass


class SendThenSet(WakeupSocketpair):
    """The wrong wakeup(): writes its byte before it sets ``pending``."""

    def wakeup(self) -> None:
        if self.pending:
            return
        try:
            self.write_sock.send(b"\x00")
        except BlockingIOError:
            pass
        self.pending = True


def run_once(cls, handler, earlier_pending: bool, choices: list[int], depth_widths: list[int]):
    """One schedule: ``choices`` picks the actor at each step (then the first ready
    one); returns what went wrong at the end ("" if nothing) and the trace."""
    steps = Interleaver()
    w = stepped(cls)(steps)
    queue, seen = [], []
    if earlier_pending:   # an earlier response, woken for but not yet drained
        queue.append("earlier")
        w._pending = True
        assert w.write_sock._sock.send(b"\x00") == 1

    def choose(ready):
        depth = len(depth_widths)
        pick = choices[depth] if depth < len(choices) else 0
        depth_widths.append(len(ready))
        return ready[pick]

    try:
        steps.run({"handler": lambda: handler(steps, w, queue, "response"),
                   "processor": lambda: processor_drain_then_read(steps, w, queue, seen)},
                  choose)
        readable = pending_bytes(w) > 0
        problems = []
        if queue and not readable:
            problems.append(f"lost wake-up: {queue} queued, nothing to read")
        if w._pending and not readable:
            problems.append("pending left set over an empty pipe: later wake-ups skipped")
        return "; ".join(problems), steps.trace
    finally:
        w.close()


def every_schedule(cls, handler, earlier_pending: bool):
    """Yield (problem, trace) for every interleaving (depth-first over the choices)."""
    choices: list[int] = []
    while True:
        widths: list[int] = []
        yield run_once(cls, handler, earlier_pending, choices, widths)
        choices = (choices + [0] * len(widths))[:len(widths)]
        while choices and choices[-1] + 1 >= widths[len(choices) - 1]:
            choices.pop()
        if not choices:
            return
        choices[-1] += 1


@pytest.mark.parametrize("earlier_pending", [False, True],
                         ids=["nothing-pending", "a-wakeup-pending"])
def test_no_interleaving_loses_a_wakeup(earlier_pending):
    schedules = 0
    for problem, trace in every_schedule(WakeupSocketpair, handler_enqueue_then_wake,
                                         earlier_pending):
        assert not problem, (problem, trace)
        schedules += 1
    assert schedules >= 10   # both actors take several steps: many orders were tried


@pytest.mark.parametrize("cls,handler,earlier_pending,expected", [
    (WakeupSocketpair, handler_wake_then_enqueue, False, "lost wake-up"),
    (WakeupSocketpair, handler_wake_then_enqueue, True, "lost wake-up"),
    (ClearThenRead, handler_enqueue_then_wake, False, "pending left set"),
    (ClearThenRead, handler_enqueue_then_wake, True, "pending left set"),
    # With a wake-up pending the handler skips: the wrong wakeup() is not reached.
    (SendThenSet, handler_enqueue_then_wake, False, "pending left set"),
], ids=["handler-wakes-before-enqueue", "handler-wakes-before-enqueue-while-pending",
        "drain-clears-before-read", "drain-clears-before-read-while-pending",
        "wakeup-sends-before-set"])
def test_the_swapped_orders_are_caught(cls, handler, earlier_pending, expected):
    problems = [p for p, _ in every_schedule(cls, handler, earlier_pending) if p]
    assert any(expected in p for p in problems), problems
