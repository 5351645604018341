"""LogDirFailureChannel: a log dir whose disk failed goes offline (Kafka's class).

Kafka treats any I/O error on a log dir -- a full disk (ENOSPC), too many open
files (EMFILE), a failing device (EIO) -- as the failure of that dir, not as
a bug of the request that met it: ``maybeAddOfflineLogDir`` logs the error
once, the dir's partitions go offline (clients get KAFKA_STORAGE_ERROR, and a
write half done is never acknowledged), and ReplicaManager's
``handleLogDirFailure`` stops the broker when no log dir is left online
("Shutdown broker because all log dirs in ... have failed").  The broker
comes back once the disk is fixed and it is started again: a log dir is
never brought back online in a running broker.

Each request failing on an offline dir logs one rate-limited line per kind
(the action and the error), never a traceback.
"""

from __future__ import annotations

import errno
import logging
import threading
from typing import Callable

from kafka_net.log_safety import RateLimitedLog
from kafka_net.server.storage.base import KafkaStorageException

log = logging.getLogger("kafka_net.server.storage.log_dir_failure")


def describe(exc: OSError) -> str:
    """``[Errno 28] No space left on device`` as ``ENOSPC (No space left on device)``."""
    name = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else type(exc).__name__
    return f"{name} ({exc.strerror or exc})"


class LogDirFailureChannel:
    def __init__(self, on_offline: Callable[[str], None] | None = None,
                 interval_s: float = 10.0) -> None:
        self.on_offline = on_offline   # called once per dir, off any lock
        self._offline: set[str] = set()
        self._lock = threading.Lock()
        self._lines = RateLimitedLog(log, interval_s)

    def is_offline(self, directory: str) -> bool:
        return directory in self._offline

    def offline_dirs(self) -> set[str]:
        with self._lock:
            return set(self._offline)

    def failure(self, directory: str, action: str, exc: OSError) -> KafkaStorageException:
        """Take ``directory`` offline (once) for ``exc`` met while ``action``; the
        exception the caller raises to its client."""
        with self._lock:
            first = directory not in self._offline
            self._offline.add(directory)
        reason = describe(exc)
        if first:
            log.error("Error while %s in dir %s: %s. The log dir is now offline: its "
                      "partitions answer KAFKA_STORAGE_ERROR until the broker is restarted "
                      "with the disk fixed", action, directory, reason)
            if self.on_offline is not None:
                self.on_offline(directory)
        else:
            self.rejected(directory, action, reason)
        return KafkaStorageException(f"Error while {action} in dir {directory}: {reason}")

    def offline_error(self, directory: str, action: str) -> KafkaStorageException:
        """A request on a partition whose dir is offline already."""
        self.rejected(directory, action, "the log dir is offline")
        return KafkaStorageException(f"Log dir {directory} is offline")

    def rejected(self, directory: str, action: str, reason: str) -> None:
        self._lines.log(logging.WARNING, (directory, action, reason),
                        "KAFKA_STORAGE_ERROR while %s in dir %s: %s", action, directory, reason)
