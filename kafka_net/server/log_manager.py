"""LogManager: the broker's logs, their directories and their background tasks.

Kafka's ``LogManager``, for one node.  With ``log.store=memory`` (the test
fixture, ``kafka-net serve --dev``) every partition is an
:class:`~kafka_net.server.storage.InMemoryLog` and nothing survives a
restart.  With ``log.store=disk`` (the daemon's default) it owns
``log.dirs``:

* **startup** locks each folder (``.lock``), checks or writes
  ``meta.properties``, reads ``recovery-point-offset-checkpoint`` and
  ``log-start-offset-checkpoint``, and opens every ``<topic>-<partition>``
  folder as a :class:`~kafka_net.server.storage.unified_log.UnifiedLog`:
  without scanning after a clean shutdown (``.kafka_cleanshutdown`` present),
  recovering the segments past the recovery point after a crash;
* **get_or_create_log** (Kafka's ``getOrCreateLog``) is the ReplicaManager's
  log factory: a loaded log, or a new folder in the least-used log dir;
* **tasks**: ``kafka-log-retention`` (every ``log.retention.check.interval.ms``,
  first after ``log.initial.task.delay.ms``), ``kafka-log-flusher`` (every
  ``log.flush.scheduler.interval.ms``: logs whose ``flush.ms`` passed), and
  the recovery-point / log-start-offset checkpoints (every
  ``log.flush.offset.checkpoint.interval.ms`` /
  ``log.flush.start.offset.checkpoint.interval.ms``);
* **shutdown** (clean): every log flushed, its producer state snapshotted and
  closed, both checkpoints written, then the clean-shutdown marker.

As in Kafka, a failing task run is logged and the next one runs on schedule.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from kafka_net.server.log_cleaner import CLEANER_OFFSET_CHECKPOINT
from kafka_net.server.metadata_log import METADATA_TOPIC
from kafka_net.server.scheduler import BackgroundTask
from kafka_net.server.storage import InMemoryLog, PartitionLog
from kafka_net.server.storage.checkpoint import (
    CLEAN_SHUTDOWN_FILE, LOCK_FILE, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
    OffsetCheckpointFile, StorageError, ensure_meta_properties, fsync_dir, new_cluster_id,
    read_partition_metadata, stored_cluster_id, write_clean_shutdown_file,
    write_partition_metadata)
from kafka_net.server.storage.base import KafkaStorageException
from kafka_net.server.storage.local_log import parse_topic_partition_name
from kafka_net.server.storage.log_dir_failure import LogDirFailureChannel
from kafka_net.server.storage.scheduler import LogScheduler
from kafka_net.server.storage.segment import SegmentConfig
from kafka_net.server.storage.unified_log import UnifiedLog

log = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class LogDirsConfig:
    """The broker keys of the durable store (Kafka's defaults)."""

    log_dirs: tuple[str, ...] = ()                       # empty: in memory
    node_id: int = 1
    cluster_id: str = ""            # empty: the folders' own, or a new random one
    flush_scheduler_interval_ms: int = LONG_MAX          # log.flush.scheduler.interval.ms
    flush_offset_checkpoint_interval_ms: int = 60000     # log.flush.offset.checkpoint.interval.ms
    flush_start_offset_checkpoint_interval_ms: int = 60000


class _CreateFailed(Exception):
    def __init__(self, directory: str, error: OSError) -> None:
        super().__init__(directory)
        self.directory, self.error = directory, error


def _read_checkpoint(directory: str, name: str, reset: str) -> dict[tuple[str, int], int]:
    """A checkpoint file's entries; a garbled one is warned about and read as empty
    (Kafka's LogManager.loadLogs): recovery then starts at offset 0 after a
    crash, and each log starts at its first segment."""
    try:
        return OffsetCheckpointFile(os.path.join(directory, name)).read()
    except (StorageError, UnicodeDecodeError) as exc:
        log.warning("Error occurred while reading %s file of directory %s, %s: %s",
                    name, directory, reset, exc)
        return {}


# The most leader-epoch checkpoints end_replay writes at once (see there).
EPOCH_WRITERS = 16


def _is_partition_dir(name: str) -> bool:
    """A partition's folder; not __cluster_metadata-0, the MetadataLog's (Kafka's
    LogManager skips it too), nor one being deleted."""
    tp = parse_topic_partition_name(name)
    return tp is not None and tp[0] != METADATA_TOPIC and not name.endswith("-delete")


def _drop_unfinished_move(path: str) -> None:
    """A ``-future`` folder is a move to this log dir cut short by a crash (the
    partition's own folder, elsewhere, is whole).  Kafka resumes the copy; kafka-net
    copies at once, so it drops the folder: the move can be asked for again."""
    log.warning("Deleting %s: a move of its partition to this log dir (AlterReplicaLogDirs) "
                "did not finish; the partition stays where it was", path)
    shutil.rmtree(path, ignore_errors=True)


class LogManager:
    def __init__(self, replica_manager, retention_check_ms: int, initial_task_delay_ms: int,
                 dirs: LogDirsConfig | None = None,
                 segment_config: Callable[[str], SegmentConfig] | None = None) -> None:
        self.replica_manager = replica_manager
        self.retention_check_ms = retention_check_ms
        self.initial_task_delay_ms = initial_task_delay_ms
        self.dirs = dirs or LogDirsConfig()
        self.segment_config = segment_config or (lambda topic: SegmentConfig())
        self._task = BackgroundTask("kafka-log-retention", "kn-retention", self._run)
        self._flusher = BackgroundTask("kafka-log-flusher", "kn-log-flusher", self._run_flusher)
        self._logs: dict[tuple[str, int], UnifiedLog] = {}
        self._log_dir_of: dict[tuple[str, int], str] = {}
        self._lock = threading.Lock()
        self._loaded = False
        self._locks: list[int] = []
        self.scheduler = LogScheduler()
        self.had_clean_shutdown: dict[str, bool] = {}
        self.unclean_dirs: list[str] = []
        self.failure_channel = LogDirFailureChannel(self._handle_log_dir_failure)
        # Called once no log dir is left online (the daemon stops the broker).
        self.on_all_log_dirs_failed: Callable[[str], None] | None = None
        # (partition, old log dir, new log dir) after move_log: the cleaner's
        # checkpoint follows the log (Kafka's LogCleaner.alterCheckpointDir).
        self.on_log_moved: Callable[[tuple[str, int], str, str], None] | None = None
        self._metadata_failed = False
        # Set while the broker replays its metadata log (see end_replay).
        self.defer_epoch_writes = False
        self._epoch_writers = None    # end_replay's pool while its writes run
        # The cluster these folders belong to: cluster.id if configured, else the
        # one a folder's meta.properties holds, else a new random one, written
        # when they are formatted (as kafka-storage format does).  A fixed default
        # would let two brokers' folders pass for one cluster's.
        self.cluster_id = self.dirs.cluster_id or next(
            (c for d in self.dirs.log_dirs if (c := stored_cluster_id(d)) is not None),
            None) or new_cluster_id()

    @property
    def durable(self) -> bool:
        return bool(self.dirs.log_dirs)

    # -- loading (Kafka's LogManager.loadLogs) -----------------------------------------------

    def load_logs(self) -> None:
        """Open every partition folder of every log dir (once)."""
        with self._lock:
            if self._loaded or not self.durable:
                self._loaded = True
                return
            began = time.monotonic()
            dirs = [os.path.abspath(d) for d in self.dirs.log_dirs]
            log.info("Loading logs from log dirs %s", dirs)
            for directory in dirs:
                self._load_dir(directory)
            self._loaded = True
            log.info("Loaded %d logs in %dms%s", len(self._logs),
                     (time.monotonic() - began) * 1000,
                     f" (unclean log dirs = {self.unclean_dirs})" if self.unclean_dirs else "")

    def _load_dir(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self._lock_dir(directory)
        formatted = os.path.exists(os.path.join(directory, "meta.properties"))
        ensure_meta_properties(directory, self.dirs.node_id, self.cluster_id)
        marker = os.path.join(directory, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker) or not formatted   # a new folder has nothing to recover
        self.had_clean_shutdown[directory] = clean
        names = [n for n in sorted(os.listdir(directory))
                 if os.path.isdir(os.path.join(directory, n))]
        count = sum(1 for n in names if _is_partition_dir(n))
        if not formatted:
            log.info("Formatted log dir %s (meta.properties written)", directory)
        elif clean:
            log.info("Skipping recovery of %d logs from %s since clean shutdown file was found",
                     count, directory)
        else:
            log.info("Recovering %d logs from %s since no clean shutdown file was found",
                     count, directory)
            self.unclean_dirs.append(directory)
        recovery_points = _read_checkpoint(
            directory, RECOVERY_POINT_CHECKPOINT, "resetting the recovery checkpoint to 0")
        log_starts = _read_checkpoint(
            directory, LOG_START_OFFSET_CHECKPOINT,
            "resetting to the base offset of the first segment")
        # Where cleaning got to: below it, a gap between segments is the cleaner's
        # (the log names any other gap as segments gone missing).
        cleaned_to = _read_checkpoint(directory, CLEANER_OFFSET_CHECKPOINT,
                                      "cleaning each compacted log from its start")
        for name in names:
            path = os.path.join(directory, name)
            if name.endswith("-delete"):
                shutil.rmtree(path, ignore_errors=True)   # a deletion cut short
                continue
            if name.endswith("-future"):
                _drop_unfinished_move(path)
                continue
            if not _is_partition_dir(name):
                continue
            tp = parse_topic_partition_name(name)
            self._refuse_duplicate(tp, path)
            self._logs[tp] = self._open_log(
                path, tp, recovery_points.get(tp, 0), log_starts.get(tp), clean,
                read_partition_metadata(path), cleaned_to.get(tp, 0))
            self._log_dir_of[tp] = directory
        if os.path.exists(marker):
            os.unlink(marker)   # a crash from now on must be seen as one

    def _refuse_duplicate(self, tp: tuple[str, int], path: str) -> None:
        """A partition in two log dirs: a crash between the two renames of a move
        (move_log).  Kafka refuses to start; so does kafka-net, with its message."""
        previous = self._log_dir_of.get(tp)
        if previous is not None:
            raise StorageError(
                f"Duplicate log directories for {tp[0]}-{tp[1]} are found in both {path} and "
                f"{os.path.join(previous, os.path.basename(path))}. It is likely because log "
                f"directory failure happened while broker was replacing current replica with "
                f"future replica. Recover broker from this failure by manually deleting one of "
                f"the two directories for this partition. It is recommended to delete the "
                f"partition in the log directory that is known to have failed recently.")

    def _open_log(self, path: str, tp: tuple[str, int], recovery_point: int,
                  log_start: int | None, clean: bool, topic_id,
                  cleaned_to: int) -> UnifiedLog:
        topic = tp[0]
        opened = UnifiedLog(path, lambda: self.segment_config(topic), self.scheduler,
                            recovery_point=recovery_point, log_start_offset=log_start,
                            had_clean_shutdown=clean, topic_id=topic_id,
                            cleaner_checkpoint=cleaned_to,
                            defer_epoch_writes=self.defer_epoch_writes)
        opened.on_deleted = lambda: self.forget(*tp)
        opened.failure_channel = self.failure_channel
        if not clean:
            opened.flush_recovered_in_background()
        return opened

    def _lock_dir(self, directory: str) -> None:
        fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StorageError(
                f"Failed to acquire lock on file .lock in {directory}. A Kafka instance in "
                f"another process or thread is using this directory.") from None
        self._locks.append(fd)

    def lock_metadata_dir(self, directory: str) -> None:
        """Lock ``metadata.log.dir`` too when it is none of ``log.dirs`` (the log
        dirs themselves are locked by :meth:`load_logs`), so that no second
        broker appends to the same metadata log."""
        directory = os.path.abspath(directory)
        if directory not in {os.path.abspath(d) for d in self.dirs.log_dirs}:
            os.makedirs(directory, exist_ok=True)
            self._lock_dir(directory)

    def release_locks(self) -> None:
        """Unlock every folder (a broker that failed to start lets the next one in)."""
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()

    # -- the ReplicaManager's log factory ------------------------------------------------------

    def get_or_create_log(self, topic: str, partition: int,
                          topic_id: uuid.UUID | None = None) -> PartitionLog:
        """The partition's log: loaded from a log dir, or created (Kafka's
        ``LogManager.getOrCreateLog``); an InMemoryLog with ``log.store=memory``."""
        if not self.durable:
            return InMemoryLog()
        self.load_logs()
        tp = (topic, partition)
        try:
            return self._get_or_create(tp, topic_id)
        except _CreateFailed as failed:
            # Off the lock: taking the dir offline reads the logs of the dir.
            raise self.failure_channel.failure(
                failed.directory, f"creating the log of {topic}-{partition}",
                failed.error) from None

    def _get_or_create(self, tp: tuple[str, int], topic_id) -> UnifiedLog:
        topic, partition = tp
        with self._lock:
            existing = self._logs.get(tp)
            if existing is not None:
                self._check_topic_id(existing, tp, topic_id)
                return existing
            directory = self._next_log_dir()
            path = os.path.join(directory, f"{topic}-{partition}")
            try:
                created = UnifiedLog(path, lambda: self.segment_config(topic), self.scheduler,
                                     topic_id=topic_id,
                                     defer_epoch_writes=self.defer_epoch_writes)
                if topic_id is not None:
                    write_partition_metadata(path, topic_id)
            except OSError as exc:
                raise _CreateFailed(directory, exc) from None
            created.on_deleted = lambda: self.forget(*tp)
            created.failure_channel = self.failure_channel
            self._logs[tp] = created
            self._log_dir_of[tp] = directory
            log.info("Created log for partition %s-%d in %s", topic, partition, path)
            return created

    @staticmethod
    def _check_topic_id(existing: UnifiedLog, tp, topic_id) -> None:
        if topic_id is None or existing.topic_id == topic_id:
            return
        if existing.topic_id is not None:
            # The metadata log gives a replayed topic its id back, so this is a log
            # dir from a build that kept no metadata: its log is adopted.
            log.warning("Partition %s-%d has topic id %s on disk but %s in metadata; "
                        "keeping its log under the new id", tp[0], tp[1],
                        existing.topic_id, topic_id)
        existing.topic_id = topic_id
        write_partition_metadata(existing.directory, topic_id)

    def _next_log_dir(self) -> str:
        """The online log dir holding the fewest partitions (Kafka's ``nextLogDirs``)."""
        offline = self.failure_channel.offline_dirs()
        dirs = [d for d in (os.path.abspath(d) for d in self.dirs.log_dirs) if d not in offline]
        if not dirs:
            raise KafkaStorageException("No log dir is online to create a log in")
        counts = {d: 0 for d in dirs}
        for directory in self._log_dir_of.values():
            counts[directory] = counts.get(directory, 0) + 1
        return min(dirs, key=lambda d: counts.get(d, 0))

    def _handle_log_dir_failure(self, directory: str) -> None:
        """Kafka's ``ReplicaManager.handleLogDirFailure``: the dir's partitions are
        offline (their logs refuse I/O through the channel); with no log dir left,
        the broker stops."""
        with self._lock:
            count = sum(1 for d in self._log_dir_of.values() if d == directory)
        log.error("Partitions of %d log(s) in dir %s are offline due to the failure of the "
                  "log dir", count, directory)
        online = [d for d in (os.path.abspath(d) for d in self.dirs.log_dirs)
                  if not self.failure_channel.is_offline(d)]
        if not online:
            log.error("Shutdown broker because all log dirs in %s have failed",
                      ", ".join(os.path.abspath(d) for d in self.dirs.log_dirs))
            if self.on_all_log_dirs_failed is not None:
                self.on_all_log_dirs_failed(directory)

    def metadata_dir_failure(self, directory: str, action: str,
                             exc: OSError) -> KafkaStorageException:
        """The metadata log's dir failed: KRaft stops the broker (no metadata can be
        committed), whatever the other log dirs."""
        error = self.failure_channel.failure(directory, action, exc)
        if not self._metadata_failed:
            self._metadata_failed = True
            log.error("Shutdown broker because the metadata log dir %s has failed", directory)
            if self.on_all_log_dirs_failed is not None:
                self.on_all_log_dirs_failed(directory)
        return error

    # -- moving a log to another log dir (AlterReplicaLogDirs) ---------------------------------

    def move_log(self, tp: tuple[str, int], destination: str) -> UnifiedLog:
        """The partition's log copied into the log dir ``destination`` and opened
        there; the old folder renamed ``<topic>-<partition>.<id>-delete`` and
        removed after ``file.delete.delay.ms`` (reads already under way finish on
        its open files).  The caller holds the partition's lock and swaps in the
        log returned, so nothing is appended to the old one meanwhile.

        Kafka's future replica and ``replaceCurrentWithFutureLog``, done at once:
        the copy goes to ``<topic>-<partition>.<id>-future`` first, then is renamed
        to the partition's folder, then the old one is renamed.  A crash during the
        copy leaves the ``-future`` folder, dropped at the next start; a crash
        between the two renames leaves the partition in both dirs, which the next
        start refuses with Kafka's message."""
        with self._lock:
            old, source = self._logs[tp], self._log_dir_of[tp]   # KeyError: deleted
        if source == destination:
            return old   # a move asked twice at once: the first one made it
        path = self._copy_into(old, f"{tp[0]}-{tp[1]}", source, destination)
        moved = self._open_moved(old, tp, path, source, destination)
        with self._lock:
            self._logs[tp], self._log_dir_of[tp] = moved, destination
        if self.on_log_moved is not None:
            self.on_log_moved(tp, source, destination)
        self._retire(old, source)
        log.info("Moved the log of partition %s from %s to %s", old.name, source, destination)
        self.checkpoint_recovery_offsets()
        self.checkpoint_log_start_offsets()
        return moved

    def _copy_into(self, old: UnifiedLog, name: str, source: str, destination: str) -> str:
        """The old log's files in ``destination/<name>``, through a ``-future`` folder."""
        future = os.path.join(destination, f"{name}.{uuid.uuid4().hex}-future")
        try:
            old.copy_to(future)
            os.replace(future, os.path.join(destination, name))
            fsync_dir(destination)
        except OSError as exc:
            shutil.rmtree(future, ignore_errors=True)
            # A file of the old log names the source dir; anything else (no space
            # left, a write error) is the destination's.
            failed = source if (exc.filename or "").startswith(source + os.sep) else destination
            raise self.failure_channel.failure(
                failed, f"moving the log of {name} from {source} to {destination}", exc) from None
        return os.path.join(destination, name)

    def _open_moved(self, old: UnifiedLog, tp: tuple[str, int], path: str, source: str,
                    destination: str) -> UnifiedLog:
        """The copy opened as a cleanly shut down log; if that fails, the copy is
        removed (the partition stays in ``source``) and ``destination`` goes offline."""
        # The cleaner's gaps are not missing segments: its checkpoint goes along.
        cleaned_to = _read_checkpoint(source, CLEANER_OFFSET_CHECKPOINT,
                                      "cleaning the moved log from its start").get(tp, 0)
        try:
            return self._open_log(path, tp, old.log_end_offset, old.log_start_offset, True,
                                  old.topic_id, cleaned_to)
        except OSError as exc:
            shutil.rmtree(path, ignore_errors=True)
            raise self.failure_channel.failure(
                destination, f"opening the moved log of {old.name}", exc) from None

    def _retire(self, old: UnifiedLog, source: str) -> None:
        """The moved log's old folder, renamed for deletion.  If its dir fails now,
        the dir goes offline and the next start finds the partition twice (Kafka's
        case too)."""
        old.on_deleted = None   # the partition lives on in the moved log
        try:
            old.delete()
        except OSError as exc:
            self.failure_channel.failure(source, f"renaming {old.name} for deletion", exc)

    def forget(self, topic: str, partition: int) -> None:
        """The partition's log was deleted (DeleteTopics)."""
        with self._lock:
            self._logs.pop((topic, partition), None)
            self._log_dir_of.pop((topic, partition), None)

    def highest_producer_id(self) -> int:
        """The largest producer id with state in any loaded log (-1 if none)."""
        return max((pid for lg in self.logs().values()
                    for pid, _ in lg.producer_state.active_producers()), default=-1)

    def end_replay(self) -> None:
        """The metadata log is replayed: each partition's leader-epoch-checkpoint is
        written once now.  A replay passes every leader epoch a partition ever had
        (each restart adds one), and an empty partition's cache is emptied at each
        load (no epoch starts before its log end), so writing at each step cost an
        fsync per partition per past restart.  A crash before the writes end
        replays the same records again.

        Each write is two fsyncs (the file, then its folder), and a restart writes
        one per partition: one after another, 100 partitions waited on 200 journal
        commits (80 ms idle, 0.6 s with other I/O on the disk).  Waiting fsyncs
        share the filesystem's next journal commit, so the writes go to a pool of
        threads that wait on the disk while the start goes on;
        :meth:`await_epoch_writes` waits for them before anything is served."""
        self.defer_epoch_writes = False
        pending = []
        for tp, lg in self.logs().items():
            if lg.epochs_pending:
                pending.append((tp, lg))
            else:
                lg.write_deferred_epochs()   # nothing to write: it only stops deferring
        if len(pending) < 2:
            for item in pending:
                self._write_deferred_epochs(item)
            return
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(min(EPOCH_WRITERS, len(pending)),
                                  thread_name_prefix="kn-epoch-writer")
        self._epoch_writers = (pool, [pool.submit(self._write_deferred_epochs, item)
                                      for item in pending])

    def await_epoch_writes(self) -> None:
        """The leader-epoch checkpoints :meth:`end_replay` started are on disk (or
        their log dir is offline): called before the broker serves, and before
        a shutdown closes the logs."""
        writers, self._epoch_writers = self._epoch_writers, None
        if writers is not None:
            pool, futures = writers
            pool.shutdown(wait=True)
            for future in futures:
                future.result()   # an OSError took its dir offline; anything else raises

    def _write_deferred_epochs(self, item: tuple[tuple[str, int], UnifiedLog]) -> None:
        tp, lg = item
        try:
            lg.write_deferred_epochs()
        except OSError as exc:
            self.failure_channel.failure(self._log_dir_of[tp],
                                         f"writing the leader epochs of {tp[0]}-{tp[1]}", exc)

    def logs(self) -> dict[tuple[str, int], UnifiedLog]:
        with self._lock:
            return dict(self._logs)

    # -- checkpoints and flushing --------------------------------------------------------------

    def checkpoint_recovery_offsets(self) -> None:
        self._checkpoint(RECOVERY_POINT_CHECKPOINT, lambda lg: lg.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        self._checkpoint(LOG_START_OFFSET_CHECKPOINT, lambda lg: lg.log_start_offset)

    def _checkpoint(self, name: str, offset_of) -> None:
        if not self.durable:
            return
        logs = self.logs()
        for directory in self._online_dirs():
            entries = {tp: offset_of(lg) for tp, lg in logs.items()
                       if self._log_dir_of.get(tp) == directory}
            try:
                OffsetCheckpointFile(os.path.join(directory, name)).write(entries)
            except OSError as exc:
                self.failure_channel.failure(directory, f"writing {name}", exc)

    def _online_dirs(self) -> list[str]:
        return sorted(d for d in {os.path.abspath(d) for d in self.dirs.log_dirs}
                      if not self.failure_channel.is_offline(d))

    def flush_dirty_logs(self, now_ms: int | None = None) -> None:
        """Flush the logs whose ``flush.ms`` passed since their last flush."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        for lg in self.logs().values():
            lg.maybe_flush_by_time(now_ms)

    # -- start and stop -------------------------------------------------------------------------

    def startup(self) -> None:
        if self.durable:
            self.load_logs()
            log.info("Starting log flusher with a default period of %d ms.",
                     self.dirs.flush_scheduler_interval_ms)
            self._flusher.startup()
        else:
            log.info("Logs are kept in memory (log.store=memory): nothing survives a restart")
        log.info("Starting log cleanup with a period of %d ms.", self.retention_check_ms)
        self._task.startup()

    def shutdown(self) -> None:
        self._task.shutdown()
        if not self.durable:
            return
        self.await_epoch_writes()
        self._flusher.shutdown()
        log.info("Shutting down.")
        self._close_logs()
        self.checkpoint_recovery_offsets()
        self.checkpoint_log_start_offsets()
        self.scheduler.shutdown()
        if self._loaded:
            # An offline dir gets no marker: its next start recovers what was written.
            for directory in self._online_dirs():
                log.info("Writing clean shutdown marker at %s", directory)
                try:
                    write_clean_shutdown_file(directory)
                except OSError as exc:
                    self.failure_channel.failure(directory, "writing the clean shutdown "
                                                 "marker", exc)
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()
        log.info("Shutdown complete.")

    def _close_logs(self) -> None:
        """Flush and close each log; a log dir that fails now goes offline, and its
        logs only release their files (Kafka skips the offline dirs)."""
        for tp, lg in self.logs().items():
            directory = self._log_dir_of.get(tp)
            if directory is not None and not self.failure_channel.is_offline(directory):
                try:
                    lg.close()
                    continue
                except OSError as exc:
                    self.failure_channel.failure(directory, f"closing {tp[0]}-{tp[1]}", exc)
            lg.release()

    def cleanup_logs(self) -> int:
        """One run of the retention task: segments (or, in memory, batches) deleted."""
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

    def _run_flusher(self, stop: threading.Event) -> None:
        """kafka-log-flusher and the two checkpoint tasks, on one thread."""
        jobs = [
            ("kafka-log-flusher", self.dirs.flush_scheduler_interval_ms, self.flush_dirty_logs),
            ("kafka-recovery-point-checkpoint", self.dirs.flush_offset_checkpoint_interval_ms,
             self.checkpoint_recovery_offsets),
            ("kafka-log-start-offset-checkpoint",
             self.dirs.flush_start_offset_checkpoint_interval_ms,
             self.checkpoint_log_start_offsets),
        ]
        due = {name: time.monotonic() + interval / 1000 for name, interval, _ in jobs}
        while True:
            wait = max(0.0, min(due.values()) - time.monotonic())
            if stop.wait(min(wait, 3600)):
                return
            for name, interval, job in jobs:
                if time.monotonic() >= due[name]:
                    try:
                        job()
                    except Exception:   # noqa: BLE001
                        log.exception("Uncaught exception in scheduled task '%s'", name)
                    due[name] = time.monotonic() + interval / 1000
