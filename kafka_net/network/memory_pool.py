"""The request memory pool: Kafka's ``MemoryPool`` and ``SimpleMemoryPool``.

``queued.max.request.bytes`` bounds the bytes of requests the broker holds:
read from a socket, queued for a handler or being handled.  Without a bound
the broker holds whatever clients send.  Kafka puts the bound in one pool
shared by every Processor of the broker; a Processor that learns a frame's
size (its first four bytes) asks the pool for that many bytes before it
reads the body, and a connection the pool refuses stops being read until
memory comes back (see :mod:`.selector`).

Python allocates the bytes itself, so this pool only *accounts*: it hands
out permission for ``size_bytes`` and takes it back with :meth:`release`;
callers must release exactly what they were granted, once.

Kafka's semantics, kept:

* non-strict (what the broker uses): an allocation succeeds if *any* memory
  is available, so usage may overshoot ``size_bytes`` by one request (at most
  ``max_single_allocation`` bytes); a large request is never starved by a
  stream of small ones.  Strict: only if the whole size is available.
* a size below 1 or above ``max_single_allocation`` is a caller bug
  (``ValueError``, Kafka's ``IllegalArgumentException``);
* ``is_out_of_memory``: available <= 0;
* depleted time: from the first refused allocation until the next successful
  allocation or release (Kafka's "dry spell"), summed for
  ``MemoryPoolDepletedTimeTotal`` / ``MemoryPoolAvgDepletedPercent``.

Allocation happens on Processor threads, release mostly on handler threads:
one lock makes both whole.  After a refusal, the next release calls the
``on_recovery`` callbacks (Processors wake their selector), so a connection
waiting for memory does not wait for the 300 ms poll timeout; without a
refusal a release costs no wake-up.

The Selector resumes waiting connections once ``is_out_of_memory`` is False
(available > 0), as Kafka's does: right for the non-strict pool the broker
uses.  With a strict pool a connection waiting for more than is available
would be retried (and refused) at every poll.

:data:`MemoryPool.NONE` is the unbounded pool (``queued.max.request.bytes``
<= 0, the default): ``bounded`` is False and the read path skips it
entirely, so the default costs nothing per request.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

LONG_MAX = 2**63 - 1


class MemoryPool:
    """The interface, and ``MemoryPool.NONE``: every allocation succeeds, nothing counted."""

    NONE: "MemoryPool"
    bounded = False

    @property
    def size(self) -> int:
        return LONG_MAX

    @property
    def available(self) -> int:
        return LONG_MAX

    @property
    def used(self) -> int:
        return 0

    @property
    def is_out_of_memory(self) -> bool:
        return False

    def try_allocate(self, size_bytes: int) -> bool:
        return True

    def release(self, size_bytes: int) -> None:
        pass

    def poll_out_of_memory(self) -> bool:
        return False

    def add_recovery_listener(self, callback: Callable[[], None]) -> None:
        pass  # never out of memory: nobody ever waits

    def depleted_time_ns(self) -> int:
        return 0

    def avg_depleted_fraction(self) -> float:
        return 0.0

    def __repr__(self) -> str:
        return "MemoryPool.NONE"


MemoryPool.NONE = MemoryPool()


class SimpleMemoryPool(MemoryPool):
    bounded = True

    def __init__(self, size_bytes: int, max_single_allocation: int, strict: bool = False,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        if size_bytes <= 0 or max_single_allocation <= 0 or max_single_allocation > size_bytes:
            raise ValueError(
                "must provide a positive size and max single allocation size smaller than "
                f"size. provided {size_bytes} and {max_single_allocation} respectively")
        self._size = size_bytes
        self.max_single_allocation = max_single_allocation
        self.strict = strict
        self._clock = clock
        self._lock = threading.Lock()
        self._available = size_bytes
        self._created_ns = clock()
        self._dry_spell_start_ns = 0      # 0 = not refusing now
        self._depleted_ns = 0             # finished dry spells
        self._refused = False             # a refusal since the last recovery callback
        self._listeners: list[Callable[[], None]] = []

    @property
    def size(self) -> int:
        return self._size

    @property
    def available(self) -> int:
        return self._available     # one int read: no lock needed

    @property
    def used(self) -> int:
        return self._size - self._available

    @property
    def is_out_of_memory(self) -> bool:
        return self._available <= 0

    def try_allocate(self, size_bytes: int) -> bool:
        if size_bytes < 1:
            raise ValueError(f"requested size {size_bytes}<=0")
        if size_bytes > self.max_single_allocation:
            raise ValueError(f"requested size {size_bytes} is larger than "
                             f"maxSingleAllocationSize {self.max_single_allocation}")
        threshold = size_bytes if self.strict else 1
        with self._lock:
            if self._available >= threshold:
                self._available -= size_bytes
                self._end_dry_spell()
                return True
            if not self._dry_spell_start_ns:
                self._dry_spell_start_ns = self._clock() or 1
            self._refused = True
            return False

    def release(self, size_bytes: int) -> None:
        if size_bytes < 1:
            raise ValueError(f"released size {size_bytes}<=0")
        with self._lock:
            self._available += size_bytes
            self._end_dry_spell()
            notify, self._refused = self._refused, False
            listeners = self._listeners if notify else ()
        for callback in listeners:
            callback()

    def poll_out_of_memory(self) -> bool:
        """``is_out_of_memory``, and if so, the next release calls the recovery
        listeners.  Checked and armed under the lock, so a release between a
        caller's check and its sleep cannot go unnoticed."""
        with self._lock:
            if self._available > 0:
                return False
            self._refused = True
            return True

    def add_recovery_listener(self, callback: Callable[[], None]) -> None:
        """``callback()`` runs (on the releasing thread) at the first release after a
        refused allocation.  It must be quick and must not call into the pool."""
        with self._lock:
            self._listeners = [*self._listeners, callback]

    def _end_dry_spell(self) -> None:
        if self._dry_spell_start_ns:
            self._depleted_ns += self._clock() - self._dry_spell_start_ns
            self._dry_spell_start_ns = 0

    def depleted_time_ns(self) -> int:
        """Time spent refusing allocations, including a dry spell still going on."""
        with self._lock:
            ongoing = self._clock() - self._dry_spell_start_ns if self._dry_spell_start_ns else 0
            return self._depleted_ns + ongoing

    def avg_depleted_fraction(self) -> float:
        """Share of the pool's lifetime spent refusing allocations (0..1)."""
        elapsed = self._clock() - self._created_ns
        return min(1.0, self.depleted_time_ns() / elapsed) if elapsed > 0 else 0.0

    def __repr__(self) -> str:
        return f"SimpleMemoryPool{{{self.used}/{self._size} bytes used}}"


def memory_pool_for(queued_max_request_bytes: int, socket_request_max_bytes: int) -> MemoryPool:
    """Kafka's choice in SocketServer: a pool if the bound is > 0, else NONE."""
    if queued_max_request_bytes > 0:
        return SimpleMemoryPool(queued_max_request_bytes, socket_request_max_bytes)
    return MemoryPool.NONE
