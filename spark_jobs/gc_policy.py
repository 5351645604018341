"""Fewer garbage collections while the conformance job reads and checks captures.

The job allocates millions of small objects that live until their connection
is checked (packets, frames, pair and row dicts) and form almost no reference
cycles.  With CPython's default thresholds (a young collection every 700
allocations, the oldest generation whenever it grew by a quarter) the cycle
collector walked those live objects again and again: 20-25 µs of a 45-95 µs
frame on a real-client capture (``bench/spark_capture.py``, 60,000 frames, in
one process; the same with the collector off).  Reference counting still frees
everything as before; only the search for cycles runs less often.
"""

from __future__ import annotations

import contextlib
import gc

# A young collection every 50,000 allocations instead of 700; the older
# generations in proportion (CPython's rule of a quarter still holds for the oldest).
THRESHOLDS = (50_000, 20, 100)


@contextlib.contextmanager
def fewer_collections():
    """Inside: what exists already (modules, the task's setup) is frozen out of
    every collection (``gc.freeze``) and collections run at :data:`THRESHOLDS`;
    both undone on the way out."""
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()
