"""The log's background work: one daemon thread running delayed jobs, the slice of
Kafka's ``KafkaScheduler`` the storage layer needs (``delete-file`` after
``file.delete.delay.ms``, ``flush-log`` after a roll).

A failing job is logged and the thread carries on.  :meth:`shutdown` runs
what is still pending at once: after a broker stops no send can still be
reading a deleted segment, and a restart must not find half-deleted logs.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)


class LogScheduler:
    def __init__(self, name: str = "kafka-scheduler") -> None:
        self.name = name
        self._jobs: list = []                 # (due monotonic s, seq, name, fn)
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def schedule_once(self, name: str, fn: Callable[[], None], delay_ms: int = 0) -> None:
        with self._cond:
            if self._stopped:
                self._run(name, fn)
                return
            heapq.heappush(self._jobs, (time.monotonic() + delay_ms / 1000,
                                        next(self._seq), name, fn))
            if self._thread is None:
                self._thread = threading.Thread(target=self._body, name=self.name,
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def _body(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (
                        not self._jobs or self._jobs[0][0] > time.monotonic()):
                    self._cond.wait(None if not self._jobs
                                    else self._jobs[0][0] - time.monotonic())
                if self._stopped:
                    return
                _, _, name, fn = heapq.heappop(self._jobs)
            self._run(name, fn)

    @staticmethod
    def _run(name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:   # noqa: BLE001 -- Kafka's scheduler logs and carries on
            log.exception("Uncaught exception in scheduled task '%s'", name)

    def shutdown(self, run_pending: bool = True) -> None:
        """Stop the thread and run every pending job now (or drop them: a test's
        simulated crash)."""
        with self._cond:
            self._stopped = True
            pending, self._jobs = sorted(self._jobs), []
            self._cond.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        for _, _, name, fn in pending if run_pending else ():
            self._run(name, fn)
