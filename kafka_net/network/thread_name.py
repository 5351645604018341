"""OS-level thread names, so that ``ps -L``, ``top -H`` and py-spy tell the threads apart.

Python's ``Thread.name`` (Kafka's long names, e.g.
``data-plane-kafka-network-thread-1-ListenerName(PLAINTEXT)-PLAINTEXT-0``) lives
only inside the interpreter: the kernel sees every thread as the process's
name.  Linux keeps up to 15 bytes per thread (``/proc/PID/task/TID/comm``),
set by the thread itself with ``pthread_setname_np``.  kafka-net's short names:

==================  ===========================================
``kn-accept-9092``  a listener's Acceptor (by its port)
``kn-network-1``    Processor 1 (ids count across listeners)
``kn-handler-7``    request handler thread 7
``kn-metrics``      the metrics listener (metrics.listener)
``kn-reaper-Fetch`` a purgatory's expiration reaper (``kn-reaper-Rebal``)
``kn-throttle``     the client quotas' ThrottledChannelReaper
==================  ===========================================

Elsewhere than Linux, or without glibc's function, nothing happens.
"""

from __future__ import annotations

import ctypes
import re
import sys

LINUX_MAX_BYTES = 15   # TASK_COMM_LEN 16, with the terminating NUL


def _pthread_setname():
    if not sys.platform.startswith("linux"):
        return None
    try:
        # The process's own symbols, libc's among them: ctypes.util.find_library
        # would run ldconfig in a subprocess, at every broker start.
        libc = ctypes.CDLL(None, use_errno=True)
        setname, self_ = libc.pthread_setname_np, libc.pthread_self
    except (OSError, AttributeError):
        return None
    setname.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    self_.restype = ctypes.c_void_p
    return lambda name: setname(self_(), name)


_SETNAME = _pthread_setname()


def os_thread_name(name: str) -> bytes:
    """``name`` in at most 15 bytes, readably: a longer one is cut, but keeps a
    trailing number (``kn-handler-12``'s 12), after a ``~``."""
    raw = name.encode("ascii", "replace")
    if len(raw) <= LINUX_MAX_BYTES:
        return raw
    number = re.search(rb"[0-9]+$", raw)
    if number is None or len(number[0]) > LINUX_MAX_BYTES - 2:
        return raw[:LINUX_MAX_BYTES]
    return raw[:LINUX_MAX_BYTES - 1 - len(number[0])] + b"~" + number[0]


def set_os_thread_name(name: str) -> None:
    """Name the calling thread for the OS (call it first thing in ``run``)."""
    if _SETNAME is not None:
        _SETNAME(os_thread_name(name))
