"""BackgroundTask: one daemon thread that runs a broker's periodic work until
shutdown, the slice of Kafka's ``KafkaScheduler`` kafka-net needs (the log
retention task, the transaction coordinator's timeout check).

``run(stop)`` is the thread's body; it sleeps with ``stop.wait(seconds)`` so
that :meth:`shutdown` wakes it at once instead of after its period.
"""

from __future__ import annotations

import threading
from typing import Callable

from kafka_net.network.thread_name import set_os_thread_name


class BackgroundTask:
    def __init__(self, name: str, os_name: str, run: Callable[[threading.Event], None]
                 ) -> None:
        """``name``: Kafka's thread name (``threading`` and logs); ``os_name``: what
        ``ps -L`` shows (15 bytes at most on Linux, see network/thread_name.py)."""
        self.name, self.os_name, self._run = name, os_name, run
        self.stop = threading.Event()
        self._thread: threading.Thread | None = None

    def startup(self) -> None:
        self.stop.clear()
        self._thread = threading.Thread(target=self._body, name=self.name, daemon=True)
        self._thread.start()

    def _body(self) -> None:
        set_os_thread_name(self.os_name)
        self._run(self.stop)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
            self._thread = None
