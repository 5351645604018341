"""LogCleaner: the threads that compact ``cleanup.policy=compact`` topics
(Kafka's ``LogCleaner``, ``CleanerThread`` and ``LogCleanerManager``).

``log.cleaner.threads`` threads named ``kafka-log-cleaner-thread-N`` each
loop: pick the *filthiest* compacted partition, the one with the largest
dirty ratio (cleanable bytes over the bytes of its non-active segments)
among those above their ``min.cleanable.dirty.ratio``, or any with a dirty
record older than ``max.compaction.lag.ms``; clean it
(:class:`~kafka_net.server.storage.cleaner.Cleaner`); log Kafka's summary;
and sleep ``log.cleaner.backoff.ms`` when there was nothing to clean.  A
partition is cleaned by one thread at a time.  ``compact,delete`` topics
also get retention here after each pass, as Kafka's cleaner deletes their
old segments (``deletableLogs``).

Where each partition's cleaning ended (the *cleaner checkpoint*) is kept
per partition and topic id, so a topic deleted and created again starts
over.  For a durable log it is also written, after each cleaning, to the
``cleaner-offset-checkpoint`` file of its log directory (Kafka's format:
version, count, ``topic partition offset`` lines), read again after a
restart; without it a log is cleaned from its start, as Kafka does.

A thread never dies of an error: a failure while cleaning a partition is
logged and the partition is marked uncleanable (Kafka's
``markPartitionUncleanable``) until it is deleted; the others carry on.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from kafka_net.server.scheduler import BackgroundTask
from kafka_net.server.storage.base import CleaningAborted
from kafka_net.server.storage.checkpoint import OffsetCheckpointFile
from kafka_net.server.storage.cleaner import (
    Cleaner, LogToClean, cleanable_bytes, cleanable_offsets, format_stats,
    max_compaction_delay, overlapping)

log = logging.getLogger("kafka_net.server.storage.log_cleaner")

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"


def log_dir_of(partition) -> str | None:
    """The log directory holding a durable partition's folder; None in memory."""
    folder = getattr(partition.log, "directory", None)
    return os.path.dirname(folder) if folder else None


class LogCleanerManager:
    """Which partition to clean next, which are being cleaned, where each got to."""

    def __init__(self, replica_manager) -> None:
        self.replica_manager = replica_manager
        self._lock = threading.Lock()
        self._checkpoints: dict[tuple, int] = {}   # (topic, index, topic id) -> offset
        self._dir_of: dict[tuple, str] = {}        # the durable ones' log dirs
        self._from_files: dict[str, dict] = {}     # log dir -> its file's unused entries
        self._in_progress: set[tuple] = set()
        self._uncleanable: set[tuple] = set()

    @staticmethod
    def key(partition) -> tuple:
        return (partition.topic, partition.index, partition.topic_id)

    def all_cleaner_checkpoints(self) -> dict[tuple, int]:
        with self._lock:
            return dict(self._checkpoints)

    def grab_filthiest_compacted_log(self, now: int) -> LogToClean | None:
        """Kafka's ``grabFilthiestCompactedLog``: the dirtiest cleanable partition,
        marked in progress."""
        with self._lock:
            candidates = []
            for partition in self.replica_manager.all_partitions():
                key = self.key(partition)
                if key in self._in_progress or key in self._uncleanable \
                        or not hasattr(partition.log, "segment_infos"):
                    continue
                config = self.replica_manager.config_repository.log_config(partition.topic)
                if not config.compact:
                    continue
                ltc = self._log_to_clean(partition, config, now)
                if ltc.total_bytes > 0:
                    candidates.append(ltc)
            cleanable = [ltc for ltc in candidates
                         if (ltc.need_compaction_now and ltc.cleanable_bytes > 0)
                         or ltc.cleanable_ratio > ltc.config.min_cleanable_ratio]
            if not cleanable:
                return None
            filthiest = max(cleanable, key=lambda ltc: ltc.cleanable_ratio)
            self._in_progress.add(self.key(filthiest.partition))
            return filthiest

    def _log_to_clean(self, partition, config, now: int) -> LogToClean:
        segments = partition.log.segment_infos()
        key = self.key(partition)
        lso = self.replica_manager.last_stable_offset_of(partition)
        first_dirty, uncleanable, reset = cleanable_offsets(
            segments, partition.log.log_start_offset, partition.log.log_end_offset, lso,
            self._checkpoint_of(partition, key), config.min_compaction_lag_ms, now)
        if reset and key in self._checkpoints:
            if not config.delete:
                log.warning("Resetting first dirty offset of %s-%d to log start offset %d "
                            "since the checkpointed offset %d is invalid.", partition.topic,
                            partition.index, first_dirty, self._checkpoints[key])
            self._checkpoints[key] = first_dirty
        first_uncleanable, dirty_bytes = cleanable_bytes(segments, first_dirty, uncleanable)
        clean = sum(s.size for s in overlapping(segments, -1, first_dirty))
        delay = max_compaction_delay(segments, first_dirty, config.max_compaction_lag_ms, now)
        return LogToClean(partition, config, first_dirty, first_uncleanable, clean,
                          dirty_bytes, delay > 0)

    def _checkpoint_of(self, partition, key: tuple) -> int | None:
        """The partition's checkpoint; after a restart, from its log dir's file."""
        if key in self._checkpoints:
            return self._checkpoints[key]
        log_dir = log_dir_of(partition)
        if log_dir is None:
            return None
        offset = self._file_entries(log_dir).pop((partition.topic, partition.index), None)
        if offset is not None:
            self._checkpoints[key] = offset
            self._dir_of[key] = log_dir
        return offset

    def done_cleaning(self, partition, end_offset: int) -> None:
        key = self.key(partition)
        with self._lock:
            self._checkpoints[key] = end_offset
            self._in_progress.discard(key)
            log_dir = log_dir_of(partition)
            if log_dir is not None:
                self._dir_of[key] = log_dir
                self._write_checkpoint(log_dir)

    def _write_checkpoint(self, log_dir: str) -> None:
        """Kafka's ``updateCheckpoints``: every cleaner checkpoint of ``log_dir``."""
        entries = dict(self._from_files.get(log_dir, {}))
        entries.update({(k[0], k[1]): offset for k, offset in self._checkpoints.items()
                        if self._dir_of.get(k) == log_dir})
        OffsetCheckpointFile(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT)).write(entries)

    def alter_checkpoint_dir(self, tp: tuple[str, int], source: str, destination: str) -> None:
        """Kafka's ``alterCheckpointDir``: a log moved to another log dir takes its
        cleaner checkpoint along, so the next start reads it there (below it, gaps
        between segments are the cleaner's, not missing segments)."""
        partition = self.replica_manager.partition(*tp)
        if partition is None:
            return
        key = self.key(partition)
        with self._lock:
            if key not in self._checkpoints:
                offset = self._file_entries(source).pop(tp, None)
                if offset is None:
                    return   # never cleaned: nothing to carry
                self._checkpoints[key] = offset
            self._dir_of[key] = destination
            self._file_entries(destination)   # read before it is rewritten
            self._write_checkpoint(source)
            self._write_checkpoint(destination)

    def _file_entries(self, log_dir: str) -> dict:
        """The checkpoints read from ``log_dir``'s file and not yet taken up."""
        if log_dir not in self._from_files:
            self._from_files[log_dir] = OffsetCheckpointFile(
                os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT)).read()
        return self._from_files[log_dir]

    def abort(self, partition) -> None:
        with self._lock:
            self._in_progress.discard(self.key(partition))

    def mark_partition_uncleanable(self, partition) -> None:
        with self._lock:
            self._uncleanable.add(self.key(partition))
            self._in_progress.discard(self.key(partition))

    def is_uncleanable(self, partition) -> bool:
        with self._lock:
            return self.key(partition) in self._uncleanable

    def maintain_uncleanable_partitions(self) -> None:
        """Forget deleted partitions (uncleanable marks and checkpoints)."""
        live = {self.key(p) for p in self.replica_manager.all_partitions()}
        with self._lock:
            self._uncleanable &= live
            for key in [k for k in self._checkpoints if k not in live]:
                del self._checkpoints[key]
                self._dir_of.pop(key, None)


class LogCleaner:
    def __init__(self, replica_manager, *, enable: bool = True, threads: int = 1,
                 backoff_ms: int = 15000, dedupe_buffer_size: int = 134217728) -> None:
        self.replica_manager = replica_manager
        self.enable = enable
        self.backoff_ms = backoff_ms
        self.manager = LogCleanerManager(replica_manager)
        memory = dedupe_buffer_size // max(threads, 1)
        self.cleaners = [Cleaner(n, memory, lambda: replica_manager.clock_ms())
                         for n in range(threads)]
        self._tasks = [BackgroundTask(f"kafka-log-cleaner-thread-{n}", f"kn-cleaner-{n}",
                                      self._thread_body(cleaner))
                       for n, cleaner in enumerate(self.cleaners)]
        self.cleanings = 0        # completed cleanings (tests wait on it)

    def startup(self) -> None:
        if not self.enable:
            return
        log.info("Starting the log cleaner")
        for task in self._tasks:
            task.startup()

    def shutdown(self) -> None:
        if not self.enable:
            return
        log.info("Shutting down the log cleaner.")
        for task in self._tasks:
            task.shutdown()

    def _thread_body(self, cleaner: Cleaner):
        def run(stop: threading.Event) -> None:
            while not stop.is_set():
                try:
                    cleaned = self.try_clean_filthiest_log(cleaner)
                    self.manager.maintain_uncleanable_partitions()
                except Exception:   # noqa: BLE001 -- the thread must not die
                    log.exception("[kafka-log-cleaner-thread-%d]: Error due to", cleaner.id)
                    cleaned = False
                if not cleaned and self._pause(stop):
                    return
        return run

    def _pause(self, stop: threading.Event) -> bool:
        """Sleep ``backoff_ms`` (True if stopped meanwhile).  Read again each second:
        ``log.cleaner.backoff.ms`` changed at run time (AlterConfigs) takes effect
        within a second, not after the old backoff (Kafka restarts its cleaner
        threads on a change for the same reason)."""
        began = time.monotonic()
        while True:
            remaining = began + self.backoff_ms / 1000 - time.monotonic()
            if remaining <= 0:
                return False
            if stop.wait(min(remaining, 1.0)):
                return True

    def reconfigure(self, values: dict) -> None:
        """The dynamic broker configs in effect (DynamicBrokerConfig)."""
        self.backoff_ms = values.get("log.cleaner.backoff.ms", self.backoff_ms)

    def try_clean_filthiest_log(self, cleaner: Cleaner | None = None) -> bool:
        """One pass of a cleaner thread (Kafka's ``tryCleanFilthiestLog``): clean
        the filthiest log, if any, then apply retention to compact,delete topics."""
        cleaner = cleaner or self.cleaners[0]
        ltc = self.manager.grab_filthiest_compacted_log(cleaner.clock_ms())
        cleaned = False
        if ltc is not None:
            cleaned = self._clean_log(cleaner, ltc)
        self._delete_old_segments()
        return cleaned

    def _clean_log(self, cleaner: Cleaner, ltc: LogToClean) -> bool:
        start = ltc.first_dirty_offset
        try:
            end, stats = cleaner.clean(ltc)
        except CleaningAborted as exc:   # Kafka: "task can be aborted, let it go"
            log.info("[kafka-log-cleaner-thread-%d]: Cleaning of log %s aborted: %s",
                     cleaner.id, ltc.name, exc)
            self.manager.abort(ltc.partition)
            return False
        except Exception:   # noqa: BLE001 -- Kafka's LogCleaningException handling
            log.warning("Unexpected exception thrown when cleaning log %s. Marking its "
                        "partition (%s) as uncleanable", ltc.name, ltc.name, exc_info=True)
            self.manager.mark_partition_uncleanable(ltc.partition)
            return False
        self.manager.done_cleaning(ltc.partition, end)
        self.cleanings += 1
        log.info("[kafka-log-cleaner-thread-%d]: %s", cleaner.id,
                 format_stats(cleaner.id, ltc.name, start, end, stats))
        if stats.invalid_messages_read:
            log.warning("[kafka-log-cleaner-thread-%d]: \tFound %d invalid messages during "
                        "compaction.", cleaner.id, stats.invalid_messages_read)
        return True

    def _delete_old_segments(self) -> None:
        repository = self.replica_manager.config_repository
        topics = {p.topic for p in self.replica_manager.all_partitions()}
        for topic in sorted(topics):
            config = repository.log_config(topic)
            if config.compact and config.delete:
                self.replica_manager.apply_retention(topic)
