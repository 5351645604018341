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
==================  ===========================================

Elsewhere than Linux, or without glibc's function, nothing happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

LINUX_MAX_BYTES = 15   # TASK_COMM_LEN 16, with the terminating NUL


def _pthread_setname():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        setname, self_ = libc.pthread_setname_np, libc.pthread_self
    except (OSError, AttributeError):
        return None
    setname.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    self_.restype = ctypes.c_void_p
    return lambda name: setname(self_(), name)


_SETNAME = _pthread_setname()


def os_thread_name(name: str) -> bytes:
    """``name`` in at most 15 bytes, readably: a longer one keeps its start and its
    end (where the number is), joined by ``~``."""
    raw = name.encode("ascii", "replace")
    if len(raw) <= LINUX_MAX_BYTES:
        return raw
    return raw[:6] + b"~" + raw[-(LINUX_MAX_BYTES - 7):]


def set_os_thread_name(name: str) -> None:
    """Name the calling thread for the OS (call it first thing in ``run``)."""
    if _SETNAME is not None:
        _SETNAME(os_thread_name(name))
