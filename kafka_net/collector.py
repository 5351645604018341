"""The cyclic garbage collector paused while the broker starts.

A start makes some hundred thousand objects that live as long as the process
(modules, classes, functions, the configuration), and the cyclic collector,
triggered every 700 allocations, walks the younger of them again and again and
frees nothing: about a sixth of the start's CPU (issue 28: time to listen).  So
the ``kafka-net`` command (:mod:`kafka_net.entry`) pauses it before it imports
anything else, and :class:`kafka_net.daemon.Daemon` resumes it as soon as the
broker listens, after :func:`gc.freeze` has moved what the start made out of the
collector's sight for good.  Nothing else changes: reference counting frees every
object without cycles at once, as always.  An embedded broker or a test never
pauses it, so resuming is a no-op there.
"""

from __future__ import annotations

import gc

_paused = False


def pause_collector() -> None:
    """Cyclic GC off, unless someone else already turned it off."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """After :func:`pause_collector`: what exists now frozen, the GC on again.
    A no-op where this process did not pause it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
