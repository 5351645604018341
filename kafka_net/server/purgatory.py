"""Delayed operations: answering a request later without holding a handler thread.

Some requests cannot be answered at once: a Fetch with ``min_bytes`` waits
for data, a JoinGroup waits for the other members.  Kafka parks such a
request in a *purgatory* (``DelayedOperationPurgatory``) and frees the handler
thread.  The operation completes in one of two ways, whichever comes first:

* an event: another request changes the state it waits on (an append to a
  watched partition, a member joining) and calls :meth:`Purgatory.check_and_complete`
  with the operation's key, which runs the operation's ``try_complete``;
* its deadline: the purgatory's reaper thread expires it.

Exactly one of them wins: ``force_complete`` flips a flag under a lock, and
only the caller that flipped it runs ``on_complete``.  ``on_complete``
typically sends the response through the RequestChannel, from whichever
thread completed the operation.

Lock order: an operation's ``try_complete`` may take the lock of the state it
reads (a partition log, a group); purgatory locks are never held while
calling into an operation, so no cycle can form.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import defaultdict
from typing import Hashable, Iterable

from kafka_net.network.thread_name import set_os_thread_name

log = logging.getLogger(__name__)

PURGE_INTERVAL = 1000  # Kafka's purgatory.purge.interval.requests default


class DelayedOperation:
    """Subclass and implement ``try_complete`` (call ``force_complete`` when ready),
    ``on_complete`` (send the answer) and optionally ``on_expiration``."""

    def __init__(self, delay_ms: int) -> None:
        self.deadline = time.monotonic() + max(0, delay_ms) / 1000
        self._completed = False
        self._lock = threading.Lock()

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now; True only for the one caller that actually completed it."""
        with self._lock:
            if self._completed:
                return False
            self._completed = True
        try:
            self.on_complete()
        except Exception:
            log.exception("%s: on_complete failed", type(self).__name__)
        return True

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called after on_complete when the deadline, not an event, completed it
        (bookkeeping only: on_complete has already answered from the state as it is)."""


class Purgatory:
    """Operations watched by key, plus a reaper thread for deadlines."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, list[DelayedOperation]] = defaultdict(list)
        self._lock = threading.Lock()
        self._timer = _Timer(f"ExpirationReaper-{name}")
        self._added = 0
        self._closing = False   # set by complete_all: later operations complete at once

    def start(self) -> None:
        self._timer.start()

    def shutdown(self) -> None:
        self._timer.shutdown()

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete ``op`` now if it can; otherwise watch it under ``keys`` and arm its timer.

        Returns True if it completed right away.
        """
        if op.try_complete():
            return True
        keys = list(keys)
        with self._lock:
            closing = self._closing
            if not closing:
                for key in keys:
                    self._watchers[key].append(op)
        if closing:   # after complete_all nothing waits: answer now
            op.force_complete()
            return True
        # Re-check after watching: an event between the first check and the watch
        # would otherwise be missed (Kafka does the same second tryComplete).
        if op.try_complete():
            return True
        self._timer.add(op)
        self._maybe_purge()
        return False

    def _maybe_purge(self) -> None:
        # Operations completed by their timer stay in the watcher lists of keys
        # that see no event; sweep them now and then so the lists stay bounded.
        # Counted under the lock (Kafka: an AtomicInteger): without the GIL two
        # handlers' += could both read the same count, and a count that skips or
        # repeats the multiple of PURGE_INTERVAL skips a sweep.
        with self._lock:
            self._added += 1
            due = self._added % PURGE_INTERVAL == 0
        if due:
            self.purge_completed()

    def schedule(self, op: DelayedOperation) -> None:
        """Arm only the timer: for operations that no event completes."""
        self._timer.add(op)

    def check_and_complete(self, key: Hashable) -> int:
        """Run ``try_complete`` for every operation watching ``key``; count completions."""
        if key not in self._watchers:
            # Every append asks, and mostly nothing waits: no lock for that answer.  A
            # watch added right after this look is safe: try_complete_else_watch
            # tries again after watching.
            return 0
        with self._lock:
            ops = self._watchers.get(key)
            if not ops:
                return 0
            ops = [op for op in ops if not op.is_completed]
            if ops:
                self._watchers[key] = ops
            else:
                del self._watchers[key]
        return sum(1 for op in ops if op.try_complete())

    def complete_all(self) -> int:
        """Force-complete every pending operation, watched or only timed (a
        graceful stop, so no request waits for its deadline); count them.

        Operations added afterwards (a request that was already queued for a
        handler) complete at once instead of waiting.
        """
        with self._lock:
            self._closing = True
            ops = {id(op): op for ops in self._watchers.values() for op in ops}
            self._watchers.clear()
        ops.update((id(op), op) for op in self._timer.pending())
        return sum(1 for op in ops.values() if op.force_complete())

    def watched(self) -> int:
        """Operations still waiting (for metrics: Kafka's PurgatorySize)."""
        with self._lock:
            return sum(1 for ops in self._watchers.values() for op in ops if not op.is_completed)

    def purge_completed(self) -> None:
        with self._lock:
            for key in list(self._watchers):
                live = [op for op in self._watchers[key] if not op.is_completed]
                if live:
                    self._watchers[key] = live
                else:
                    del self._watchers[key]


class _Timer(threading.Thread):
    """Expires operations at their deadline (Kafka's SystemTimer + reaper, simplified
    to a heap under a condition variable: the heap holds only delayed operations,
    which are few compared with requests)."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._heap: list[tuple[float, int, DelayedOperation]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._running = True

    def add(self, op: DelayedOperation) -> None:
        with self._cond:
            heapq.heappush(self._heap, (op.deadline, next(self._seq), op))
            self._cond.notify()

    def pending(self) -> list[DelayedOperation]:
        with self._cond:
            return [op for _, _, op in self._heap if not op.is_completed]

    def run(self) -> None:
        set_os_thread_name(f"kn-reaper-{self.name.rsplit('-', 1)[-1]}")
        while (op := self._next_due()) is not None:
            if op.force_complete():  # False if an event completed it first
                try:
                    op.on_expiration()
                except Exception:
                    log.exception("%s: on_expiration failed", type(op).__name__)

    def _next_due(self):
        with self._cond:
            while self._running:
                if self._heap:
                    deadline, _, op = self._heap[0]
                    if op.is_completed:
                        heapq.heappop(self._heap)
                        continue
                    wait = deadline - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._heap)
                        return op
                    self._cond.wait(wait)
                else:
                    self._cond.wait()
            return None

    def shutdown(self) -> None:
        with self._cond:
            self._running = False
            self._cond.notify()
        if self.is_alive():
            self.join()
