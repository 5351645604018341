"""RequestQueue: the RequestChannel's one bounded request queue, waking fewer handlers.

A ``queue.Queue`` (Kafka's ``ArrayBlockingQueue``) in everything but when a
``put`` wakes a waiting handler thread.  ``queue.Queue.put`` wakes one on
every put; here a put wakes one only

* when the queue was empty: no handler may be coming for the request, or
* when the oldest queued request has waited ``WAKE_AFTER_NS`` already: the
  handlers at work are not keeping up (say one is busy with a slow request),
  so another one joins, as any idle handler would in Kafka.

Otherwise the request waits for a handler that is already awake: each handler
goes back to ``get`` after every request and takes the next one without
sleeping (Python's ``Condition.wait`` is never reached while the queue holds
something).  No request is left behind: a non-empty queue always has a handler
coming, the one woken when it last was empty, or one still at work.

Why: on CPython only the thread holding the GIL runs Python code, so a second
handler woken for a request the first would take a moment later adds no
parallelism, only a futex wake-up, a GIL hand-over and, often, a wake-up that
finds the queue empty again.  Under kload at 3 network and 8 handler threads,
waking on every put cost about 8 context switches per ApiVersions request (see
bench/RESULTS.md, "Hot path readings", round 2).

A request put without a wake-up could still wait behind a slow one (the
awake handler took a one-second request just before it): so the Processor
that put it polls with a 1 ms timeout and calls :meth:`wake_if_stale` each
turn until the queue's oldest request has a handler coming (Processor's
``_watch_queue``).  A request then waits for a handler at most about
``WAKE_AFTER_NS`` plus a poll, where Kafka hands it to an idle handler at
once.  Shutdown sentinels always wake.

Both ends take the queue's lock (``mutex``, the one under its Conditions)
directly, and ``get`` signals ``not_full`` only when a put waits on it: each
``with`` on a Condition and each ``notify`` is a Python call, where the plain
lock is C; a queue.Queue paid five such calls per request for nothing (nobody
waits while the queue has room).
"""

from __future__ import annotations

import queue
import time

WAKE_AFTER_NS = 1_000_000   # 1 ms: below Kafka's request time resolution


class RequestQueue(queue.Queue):
    def __init__(self, maxsize: int = 0) -> None:
        super().__init__(maxsize)
        self._waiting_putters = 0   # puts blocked on not_full (under mutex)

    def put(self, item, block: bool = True, timeout: float | None = None,
            wake: bool = False) -> bool:
        """``queue.Queue.put`` with the wake-up rule above; ``wake``: always wake one.
        True if it woke a handler."""
        with self.mutex:
            if self.maxsize > 0 and len(self.queue) >= self.maxsize:
                if not block:
                    raise queue.Full
                deadline = None if timeout is None else time.monotonic() + timeout
                while len(self.queue) >= self.maxsize:
                    self._waiting_putters += 1
                    try:
                        _wait(self.not_full, deadline, queue.Full)
                    finally:
                        self._waiting_putters -= 1
            queued = self.queue
            # _head_waited, inline: one call fewer per request
            woke = (wake or not queued or time.monotonic_ns()
                    - getattr(queued[0], "start_time_ns", 0) >= WAKE_AFTER_NS)
            if woke:
                self.not_empty.notify()
            queued.append(item)
            self.unfinished_tasks += 1
            return woke

    def get(self, block: bool = True, timeout: float | None = None):
        """``queue.Queue.get``, same semantics (``queue.Empty``, ``ValueError``)."""
        if block and timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        with self.mutex:
            queued = self.queue
            if not queued:
                if not block:
                    raise queue.Empty
                deadline = None if timeout is None else time.monotonic() + timeout
                while not queued:
                    _wait(self.not_empty, deadline, queue.Empty)
            item = queued.popleft()
            if self._waiting_putters:
                self.not_full.notify()
            return item

    def wake_if_stale(self) -> bool:
        """For the putter of a request that woke nobody: wake a handler if the oldest
        request has now waited ``WAKE_AFTER_NS``.  True: look again later (the oldest
        is still young); False: nothing left to watch."""
        with self.mutex:
            if not self.queue:
                return False
            if self._head_waited():
                self.not_empty.notify()
                return False
            return True

    def _head_waited(self) -> bool:
        head = self.queue[0]
        return time.monotonic_ns() - getattr(head, "start_time_ns", 0) >= WAKE_AFTER_NS


def _wait(condition, deadline: float | None, timed_out: type[Exception]) -> None:
    """One wait on ``condition`` (its lock held) until ``deadline`` (None: none);
    raises ``timed_out`` once the deadline has passed."""
    remaining = None if deadline is None else deadline - time.monotonic()
    if remaining is not None and remaining <= 0.0:
        raise timed_out
    condition.wait(remaining)
