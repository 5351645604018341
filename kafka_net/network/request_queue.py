"""The RequestChannel's request queue: bounded and FIFO like Kafka's ArrayBlockingQueue,
but a put wakes a sleeping handler only when the handlers already awake will not get
to the request soon.

``queue.Queue.put`` wakes a waiting consumer on every put.  Under one GIL a woken
handler cannot run while another handler is running Python: by the time it gets the
GIL, the running handler has finished its request, come back and taken the new one
itself, and the woken handler finds the queue empty and sleeps again.  Counted with
kload at 16 connections x 1 on 3 + 8 threads: 0.87 wake-ups per request, 0.57 of them
finding nothing; each is a futex call and a GIL hand-over for nothing.

Here a handler counts as *awake* from the moment a put wakes it, or :meth:`get` gives
it a request, until it calls :meth:`get` again.  A put (or a handler leaving requests
behind) wakes one sleeper only when

* no handler is awake, or
* the queue holds more than ``BACKLOG_PER_AWAKE`` requests per awake handler (a
  burst: spread it over the pool), or
* no handler has taken a request for ``STALL_NS`` (the awake ones may be blocked
  rather than running Python, and a sleeping one can then help).

With that, 0.36 wake-ups per request remain and 0.06 find nothing (same count).  What
it trades: a request may wait for a busy handler to finish the one it has instead of
going to an idle handler at once; with one GIL the idle handler could not have run
beside it.  A request behind a handler that blocks waits until the next put after
``STALL_NS``, a backlog, or a sleeper's own timeout (300 ms, as every handler polls).

Which thread is awake is kept per thread (``threading.local``), so any thread may call
:meth:`get`; the shutdown sentinel never counts its taker as busy, as it leaves.
"""

from __future__ import annotations

import collections
import queue
import threading
import time


# Wake a sleeper anyway when the queue holds more than this many requests per awake
# handler (a burst), or when no handler has taken a request for STALL_NS (the awake
# ones may be blocked, not running Python: a sleeping handler can then help).
BACKLOG_PER_AWAKE = 4
STALL_NS = 5_000_000          # CPython's GIL switch interval


class RequestQueue:
    def __init__(self, maxsize: int, is_final=lambda item: False,
                 stall_ns: int = STALL_NS) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be >= 1")
        self.maxsize = maxsize
        self._items: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._not_full = threading.Condition(self._lock)
        self._putters = 0             # Processors waiting in put() for room
        # Sleeping handlers, each blocked on a lock of its own that a put releases.
        # Kept here rather than in a Condition so that a handler already woken, but
        # not yet running, is not counted as asleep and woken again by the next put.
        self._sleepers: collections.deque = collections.deque()
        self._woken = 0               # woken by a put, not yet back in get()
        self._busy = 0                # handlers holding a request from get()
        self._last_take_ns = 0
        self._stall_ns = stall_ns
        self._thread = threading.local()
        self._is_final = is_final     # an item after which its taker calls get() no more

    def put(self, item, timeout: float | None = None) -> None:
        """Blocking put; ``queue.Full`` when ``timeout`` runs out first."""
        with self._lock:
            if len(self._items) >= self.maxsize:
                self._wait_for_room(timeout)
            self._items.append(item)
            self._wake_if_needed()

    def _wake_if_needed(self) -> None:
        # Called with the lock held: wake one sleeper if the queue holds more requests
        # than the handlers awake (busy, or woken and on their way) will come back for.
        if not self._sleepers:
            return
        awake = self._busy + self._woken
        if (awake == 0 or len(self._items) > BACKLOG_PER_AWAKE * awake
                or time.monotonic_ns() - self._last_take_ns > self._stall_ns):
            self._woken += 1
            self._sleepers.popleft().release()

    def _wait_for_room(self, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        self._putters += 1
        try:
            while len(self._items) >= self.maxsize:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise queue.Full
                self._not_full.wait(remaining)
        finally:
            self._putters -= 1

    def get(self, timeout: float):
        """The oldest item, or None after ``timeout`` seconds with nothing to take."""
        local = self._thread
        with self._lock:
            if getattr(local, "busy", False):
                local.busy = False
                self._busy -= 1
            if not self._items and not self._wait_for_item(timeout):
                return None
            item = self._items.popleft()
            self._last_take_ns = time.monotonic_ns()
            if not self._is_final(item):
                local.busy = True
                self._busy += 1
            self._wake_if_needed()
            if self._putters:
                self._not_full.notify()
            return item

    def _wait_for_item(self, timeout: float) -> bool:
        # Called with the lock held; returns with it held.
        deadline = time.monotonic() + timeout
        while not self._items:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            sleeper = threading.Lock()
            sleeper.acquire()
            self._sleepers.append(sleeper)
            self._lock.release()
            try:
                sleeper.acquire(timeout=remaining)
            finally:
                self._lock.acquire()
            try:
                self._sleepers.remove(sleeper)      # timed out: nobody woke it
            except ValueError:
                self._woken -= 1                    # a put took it off the list
        return True

    def qsize(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._not_full.notify_all()
