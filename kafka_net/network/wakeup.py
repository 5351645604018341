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

Both ends are non-blocking; a full pipe (``BlockingIOError``) on write means a
wakeup is already pending, which is all we need.
"""

from __future__ import annotations

import socket


class WakeupSocketpair:
    def __init__(self) -> None:
        self.read_sock, self.write_sock = socket.socketpair()
        self.read_sock.setblocking(False)
        self.write_sock.setblocking(False)

    def fileno(self) -> int:
        return self.read_sock.fileno()

    def wakeup(self) -> None:
        try:
            self.write_sock.send(b"\x00")
        except (BlockingIOError, InterruptedError):
            pass  # a wakeup is already pending
        except OSError:
            pass  # closed during shutdown: nobody is waiting any more

    def drain(self) -> None:
        try:
            while self.read_sock.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def close(self) -> None:
        self.read_sock.close()
        self.write_sock.close()
