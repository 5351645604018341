"""LogManager's timer: the ``kafka-log-retention`` task.

Retention (a topic's ``retention.ms`` / ``retention.bytes``) is enforced when
a partition is appended to and when the topic's configs change
(:meth:`ReplicaManager.apply_retention`).  A topic nobody writes to would
keep its old records forever; Kafka's ``LogManager`` therefore runs
``cleanupLogs`` every ``log.retention.check.interval.ms`` (default 5 min),
first ``log.initial.task.delay.ms`` (30 s) after startup.  This is that task,
on one daemon thread.

As in Kafka, a failing run is logged and the next one runs on schedule: the
thread never dies of it.
"""

from __future__ import annotations

import logging
import threading

from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.scheduler import BackgroundTask

log = logging.getLogger(__name__)


class LogManager:
    def __init__(self, replica_manager: ReplicaManager, retention_check_ms: int,
                 initial_task_delay_ms: int) -> None:
        self.replica_manager = replica_manager
        self.retention_check_ms = retention_check_ms
        self.initial_task_delay_ms = initial_task_delay_ms
        self._task = BackgroundTask("kafka-log-retention", "kn-retention", self._run)

    def startup(self) -> None:
        log.info("Starting log cleanup with a period of %d ms.", self.retention_check_ms)
        self._task.startup()

    def shutdown(self) -> None:
        self._task.shutdown()

    def cleanup_logs(self) -> int:
        """One run of the task: batches deleted across every partition."""
        log.debug("Beginning log cleanup...")
        deleted = self.replica_manager.apply_retention()
        log.debug("Log cleanup completed. %d batches deleted.", deleted)
        return deleted

    def _run(self, stop: threading.Event) -> None:
        if stop.wait(self.initial_task_delay_ms / 1000):
            return
        while True:
            try:
                self.cleanup_logs()
            except Exception:   # noqa: BLE001 -- Kafka's scheduler logs and carries on
                log.exception("Uncaught exception in scheduled task 'kafka-log-retention'")
            if stop.wait(self.retention_check_ms / 1000):
                return
