"""A socketpair that wakes a thread blocked in ``selector.select()``.

Handler threads finish requests on their own threads; the Processor that owns
the connection sleeps in ``select``.  After putting a response on the
Processor's queue, the handler writes one byte here, which makes the read end
readable and ends the ``select`` at once: no polling interval, no lost
response.

The lost-wakeup argument: the handler *first* enqueues, *then* writes the
byte.  The Processor *first* drains the byte(s), *then* reads its queue.  If
the byte arrives after the Processor drained but before it read the queue,
the response is seen now and the byte only causes one extra, empty wakeup
later.  If the byte arrives before the drain, the response was enqueued
before it, so the queue read that follows the drain sees it.  Either way no
response waits for the next timeout.

Coalescing: a wakeup that finds one already pending (``pending`` set and not
yet cleared by ``drain``) writes nothing, so a burst of responses costs one
byte and one system call, not one each (every system call also lets another
thread take the GIL).  ``drain`` clears ``pending`` *after* it has read the
bytes.  A wakeup that skipped saw ``pending`` set, so a byte was written (or is
about to be) that has not been followed by a clear yet: that clear, and the
queue read after it, come later than the skip, and the skipped response (queued
before the skip) is seen.  Clearing *before* the read would be wrong: a handler
could set ``pending`` and write its byte in between, the read would take that
byte, and ``pending`` would stay set with the pipe empty: every later wakeup
skipped and responses waiting for the 300 ms poll timeout.

Free threading (CPython 3.13t/3.14t): the argument above needs every test of
``pending`` and its clear in one order that both threads agree on, and the
handler's append to come before its test.  Under the GIL each switch between
threads is a full memory barrier, so plain attribute reads and writes gave that.
Without it, the Processor's ``pending = False`` may still sit in its core's
store buffer while it reads the (empty) queue, and a handler on another core
may read the old ``True``, append, and skip the byte: the response then waits
for the poll timeout.  So the test-and-set and the clear take ``_lock`` (C;
one uncontended acquire, as Kafka's ``Selector.wakeup`` is one
``nioSelector.wakeup()``), and every caller goes through :meth:`wakeup`.

Both ends are non-blocking; a full pipe (``BlockingIOError``) on write means a
wakeup is already pending, which is all we need.
"""

from __future__ import annotations

import socket
import threading


class WakeupSocketpair:
    def __init__(self) -> None:
        self.read_sock, self.write_sock = socket.socketpair()
        self.read_sock.setblocking(False)
        self.write_sock.setblocking(False)
        # Set by wakeup(), cleared by drain(), both under _lock (see the module doc).
        self.pending = False
        self._lock = threading.Lock()

    def fileno(self) -> int:
        return self.read_sock.fileno()

    def wakeup(self) -> None:
        with self._lock:
            if self.pending:
                return  # the reader has not drained the last byte yet: it will wake
            self.pending = True
        try:
            self.write_sock.send(b"\x00")
        except (BlockingIOError, InterruptedError):
            pass  # a wakeup is already pending
        except OSError:
            pass  # closed during shutdown: nobody is waiting any more

    def drain(self) -> None:
        try:
            # Coalescing keeps the bytes few; a short read means the pipe is empty,
            # which spares the recv() that would only fail with EAGAIN.
            while len(self.read_sock.recv(4096)) == 4096:
                pass
        except (BlockingIOError, InterruptedError):
            pass
        with self._lock:
            self.pending = False      # after the read: see the module doc

    def close(self) -> None:
        self.read_sock.close()
        self.write_sock.close()
