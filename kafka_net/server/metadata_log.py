"""MetadataLog: the broker's metadata as an ordered log of records (KRaft's ``__cluster_metadata``).

A KRaft Kafka keeps everything that is not partition data -- topics, their
partitions and configs, SCRAM credentials, client quotas, ACLs, feature
levels, the next producer id block -- as records in one metadata log, and
rebuilds its in-memory state (``MetadataImage``) by replaying that log at
startup.  kafka-net does the same on one node, with Kafka's record type
names and field names:

==============================  ==================================================
record type                     fields
==============================  ==================================================
TopicRecord                     name, topicId
PartitionRecord                 partitionId, topicId  (one per partition)
PartitionChangeRecord           partitionId, topicId, leader, leaderEpoch
RemoveTopicRecord               topicId
ConfigRecord                    resourceType, resourceName, name, value (None: deleted)
UserScramCredentialRecord       name, mechanism, salt, storedKey, serverKey, iterations
RemoveUserScramCredentialRecord name, mechanism
ClientQuotaRecord               entity, key, value, remove
AccessControlEntryRecord        id, resourceType, resourceName, patternType,
                                principal, host, operation, permissionType
RemoveAccessControlEntryRecord  id
FeatureLevelRecord              name, featureLevel
ProducerIdsRecord               brokerId, nextProducerId
DelegationTokenRecord           owner, requester, renewers, issueTimestamp,
                                maxTimestamp, expirationTimestamp, tokenId
RemoveDelegationTokenRecord     tokenId
==============================  ==================================================

Each record is one Kafka record in a magic-2 batch: the key is the record
type's name (UTF-8), the value the fields as a JSON object (bytes fields as
base64 strings).  Kafka encodes them with its generated message classes
(``ApiMessageAndVersion``); JSON keeps this log readable with
``kafka-net dump-log --cluster-metadata-decoder`` and any JSON tool, and the
record and field names are
Kafka's.  Records appended together go in one batch, so a change made of
several records (a topic and its partitions) is replayed whole or not at all.

The log underneath is a :class:`~kafka_net.server.storage.PartitionLog`: in
memory for ``--dev`` and the test fixture, a durable log under
``metadata.log.dir`` otherwise.  Every append is flushed before it returns,
as KRaft commits a metadata record only once it is on disk: a client that
saw CreateTopics succeed finds the topic after a crash.

Owners of metadata register a replay handler per record type
(:meth:`MetadataLog.register`); :meth:`MetadataLog.replay` hands each stored
record to its handler in log order.  A record type nobody registered is
logged and skipped (a newer kafka-net wrote it).

Changes are made the way KRaft's controller makes them: a writer takes
:attr:`MetadataLog.lock` (the controller's single thread: one change at a
time), checks the current state, and :meth:`MetadataLog.commit` s the
records, which appends them durably and only then applies them through the
same replay handlers a restart runs.  So the state in memory is always the
state the log replays to, and nothing is visible before it is on disk.  A
handler that fails is logged and the next record applied, at commit and at
replay alike.

Snapshots.  The log grows with every change; KRaft bounds it with snapshots
(``metadata.log.max.record.bytes.between.snapshots``, 20 MiB, or
``metadata.log.max.snapshot.interval.ms``, an hour, since the last one while
records are appended).  A restart that replayed over 100 records, more than
twice the state, snapshots at once too, so that the records each restart
appends (a leader change per partition) never pile up.  Here, once a
snapshot is due, the current state is
appended as records -- each owner's :meth:`register_snapshot` source writes
its part -- and the log start offset is moved to the first of them, so the
records before go (a durable log first rolls a new segment for the snapshot,
so every segment before it is deleted).  Kafka writes its
snapshot to a separate ``.checkpoint`` file; one log keeps one reader here.
Every snapshot record is idempotent (it sets a value, or removes one a
config file provides), so replaying a snapshot cut short by a crash on top
of the full log before it changes nothing: the log start is moved only once
the whole snapshot is flushed.  A snapshot is
only taken when every registered record type is covered by a snapshot
source: an owner that replays records but cannot write its state would
otherwise lose it.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from typing import Callable, Iterable, Iterator

from kafka_net.log_safety import RateLimitedLog
from kafka_net.protocol.records import (
    Record, RecordError, build_batch, decode_records, iter_batches, read_header)
from kafka_net.protocol.records.framing import complete_batch_size, next_whole_batch
from kafka_net.server.storage import InMemoryLog, PartitionLog
from kafka_net.server.storage.base import KafkaStorageException

log = logging.getLogger(__name__)

METADATA_TOPIC = "__cluster_metadata"
ReplayHandler = Callable[[dict], None]
SnapshotSource = Callable[[], "list[tuple[str, dict]]"]
# Kafka's default metadata.log.max.record.bytes.between.snapshots.
DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS = 20 * 1024 * 1024
# Kafka's default metadata.log.max.snapshot.interval.ms: a snapshot at least hourly
# while anything changes.
DEFAULT_MAX_SNAPSHOT_INTERVAL_MS = 3_600_000
# A restart replaying this many records, over twice what a snapshot of the state
# would hold, snapshots at once (what each restart appends never piles up).
REPLAY_SNAPSHOT_MIN_RECORDS = 100
SNAPSHOT_BATCH_RECORDS = 1000   # records per batch of a snapshot
_PARTITION_RECORDS = frozenset({"PartitionRecord", "PartitionChangeRecord"})


def _to_json(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _from_json(obj: dict):
    if obj.keys() == {"base64"}:
        return base64.b64decode(obj["base64"])
    return obj


def encode_record(record_type: str, fields: dict) -> Record:
    value = json.dumps(fields, default=_to_json, separators=(",", ":"), sort_keys=True)
    return Record(key=record_type.encode("utf-8"), value=value.encode("utf-8"),
                  timestamp=int(time.time() * 1000))


def describe_loss(chunks: Iterable[bytes]) -> str:
    """What a truncation would drop, from the bytes after the cut: records by
    type, and the bytes no whole batch can be read from."""
    kinds: dict[str, int] = {}
    unreadable = 0
    for data in chunks:
        view, position = memoryview(data), 0
        while position < len(view):
            try:
                size = complete_batch_size(view, position)
                records = decode_records(view[position:position + size]) if size else None
            except RecordError:
                size, records = 0, None
            if records is None:
                resume = next_whole_batch(view, position + 1)
                unreadable += (len(view) if resume is None else resume) - position
                if resume is None:
                    break
                position = resume
                continue
            for record in records:
                kind = (record.key or b"").decode("utf-8", "replace")
                kinds[kind] = kinds.get(kind, 0) + 1
            position += size
    listed = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    total = sum(kinds.values())
    text = f"{total} record(s)" + (f": {listed}" if listed else "")
    return text + (f", and {unreadable} byte(s) no batch can be read from" if unreadable else "")


def refuse_damaged_log(segment, valid_bytes: int, reason: str, later) -> None:
    """Refuse to cut the metadata log at damage (the broker does not start), saying
    what would be lost: KRaft truncates there, and every later topic, ACL, user
    and config would be gone with one warning (a lost ACL DENY opens access)."""
    from kafka_net.server.storage.checkpoint import StorageError
    size = segment.size
    chunks = [segment.log.read(valid_bytes, size - valid_bytes)]
    chunks += [s.log.read(0, s.size) for s in later]
    raise StorageError(
        f"The metadata log is damaged in {segment.log.path} at position {valid_bytes}: "
        f"{reason}. "
        f"Truncating it there would lose {describe_loss(chunks)}. Not starting: restore "
        f"the metadata log, or set metadata.log.truncate.on.corruption=true to truncate it "
        f"and start without them.")


def decode_record(record: Record) -> tuple[str, dict]:
    return (record.key or b"").decode("utf-8"), json.loads(record.value or b"{}",
                                                           object_hook=_from_json)


class MetadataLog:
    def __init__(self, partition_log: PartitionLog | None = None,
                 max_bytes_between_snapshots: int = DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS,
                 max_snapshot_interval_ms: int = DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
                 clock_ms: Callable[[], int] | None = None) -> None:
        self.log = InMemoryLog() if partition_log is None else partition_log
        self.max_bytes_between_snapshots = max_bytes_between_snapshots
        self.max_snapshot_interval_ms = max_snapshot_interval_ms   # 0: by size only
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = self.clock_ms()
        self._snapshot_sources: list[SnapshotSource] = []
        self._covered: set[str] = set()   # record types the snapshot sources stand for
        self._uncovered_warned = False
        # One writer at a time (KRaft's controller thread): a writer holds it from
        # its checks through commit, so no other change comes between.  Re-entrant:
        # commit takes it again, and a replay handler may read state guarded by it.
        self.lock = threading.RLock()
        self._handlers: dict[str, ReplayHandler] = {}
        # (action, OSError) -> the KafkaStorageException to raise: the metadata log
        # dir's failure (the broker wires it to its LogDirFailureChannel).
        self.on_storage_failure: Callable[[str, OSError], Exception] | None = None
        self._storage_errors = RateLimitedLog(log)

    # -- writing -------------------------------------------------------------------------

    def append(self, record_type: str, fields: dict) -> int:
        """Append one record, durably; returns its offset."""
        return self.append_all([(record_type, fields)])

    def append_all(self, records: list[tuple[str, dict]]) -> int:
        """Append records as one batch (replayed all or none); returns the first offset."""
        if not records:
            return -1
        batch = build_batch([encode_record(kind, fields) for kind, fields in records])
        with self.lock:
            try:
                appended = self.log.append(batch, len(records), int(time.time() * 1000))
                self.log.flush()
            except OSError as exc:
                if self.on_storage_failure is None:
                    raise
                raise self.on_storage_failure("appending to the metadata log", exc) from None
            self._bytes_since_snapshot += len(batch)
        return appended.base_offset

    def commit(self, records: list[tuple[str, dict]]) -> int:
        """Append ``records`` as one batch, durably, then apply them through their
        replay handlers; returns the first offset.  Call it holding :attr:`lock`
        across the checks that decided the records."""
        with self.lock:
            first = self.append_all(records)
            for record_type, fields in records:
                self.apply(record_type, fields)
            if self._snapshot_due():
                self.snapshot()
        return first

    def _snapshot_due(self) -> bool:
        """KRaft's SnapshotGenerator policy: by bytes appended since the last
        snapshot, or by time since it while anything was appended."""
        if self._bytes_since_snapshot >= self.max_bytes_between_snapshots:
            return True
        interval = self.max_snapshot_interval_ms
        return (interval > 0 and self._bytes_since_snapshot > 0
                and self.clock_ms() - self._last_snapshot_ms >= interval)

    # -- snapshots -----------------------------------------------------------------------

    def register_snapshot(self, source: SnapshotSource, record_types: Iterable[str]) -> None:
        """``source()`` returns its owner's current state as records; it stands for
        ``record_types`` (their removals included) in a snapshot."""
        self._snapshot_sources.append(source)
        self._covered.update(record_types)

    def snapshot(self, only_below: int | None = None) -> int | None:
        """Append the current state as records and start the log at them; returns
        the snapshot's first offset (None if a record type has no snapshot source,
        or if the state is ``only_below`` records or more)."""
        with self.lock:
            uncovered = sorted(set(self._handlers) - self._covered)
            if uncovered:
                if not self._uncovered_warned:
                    self._uncovered_warned = True
                    log.warning("Not snapshotting the metadata log: no snapshot source for "
                                "record type(s) %s", ", ".join(uncovered))
                self._bytes_since_snapshot = 0
                return None
            records = [record for source in self._snapshot_sources for record in source()]
            if only_below is not None and len(records) >= only_below:
                return None
            roll = getattr(self.log, "roll", None)
            if roll is not None:
                roll()   # a segmented log: the snapshot starts a segment, the older ones go
            start = self.log.log_end_offset
            for i in range(0, len(records), SNAPSHOT_BATCH_RECORDS):
                self.append_all(records[i:i + SNAPSHOT_BATCH_RECORDS])
            self.log.delete_records_before(start)
            self._bytes_since_snapshot = 0
            self._last_snapshot_ms = self.clock_ms()
        log.info("Wrote a metadata snapshot of %d record(s); the metadata log now starts at "
                 "offset %d", len(records), start)
        return start

    # -- reading -------------------------------------------------------------------------

    def register(self, record_type: str, handler: ReplayHandler) -> None:
        self._handlers[record_type] = handler

    def records(self) -> Iterator[tuple[str, dict]]:
        """Every stored record, (type, fields), in log order."""
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            result = self.log.read(offset, 1 << 20, True)
            data = result.records if isinstance(result.records, bytes) \
                else result.records.read_bytes()
            if not data:
                return
            for batch in iter_batches(data):
                for record in decode_records(batch):
                    yield decode_record(record)
                offset = read_header(batch).next_offset

    def replay(self) -> int:
        """Hand every stored record to its registered handler; returns how many."""
        count = 0
        with self.lock:
            records = list(self.records())
            # A topic deleted later in the log: its partitions are not opened (their
            # logs created) only to be deleted again a few records on -- Kafka
            # replays into an image and opens only the partitions of the final one.
            removed = {fields.get("topicId") for record_type, fields in records
                       if record_type == "RemoveTopicRecord"}
            skipped = 0
            for record_type, fields in records:
                if record_type in _PARTITION_RECORDS and fields.get("topicId") in removed:
                    skipped += 1
                    continue
                count += self.apply(record_type, fields)
            if skipped:
                log.info("Skipped %d partition record(s) of %d topic(s) deleted later in the "
                         "metadata log", skipped, len(removed))
            # Since the last snapshot, as far as can be told: the whole log (one more
            # snapshot than needed after a restart, at most), which starts at it.
            self._bytes_since_snapshot = self.log.bytes_from(self.log.log_start_offset)
            self._last_snapshot_ms = self._first_timestamp_ms()
            if len(records) >= REPLAY_SNAPSHOT_MIN_RECORDS:
                # A log mostly history (restarts' leader changes, topics deleted):
                # replace it by the state, so the next restart replays that alone.
                self.snapshot(only_below=len(records) // 2)
        return count

    def _first_timestamp_ms(self) -> int:
        """When the log's first batch was written (the last snapshot, if any); now
        for an empty log."""
        start = self.log.log_start_offset
        if start >= self.log.log_end_offset:
            return self.clock_ms()
        result = self.log.read(start, 1, True)
        data = result.records if isinstance(result.records, bytes) \
            else result.records.read_bytes()
        try:
            return read_header(data).max_timestamp
        except RecordError:
            return self.clock_ms()

    def apply(self, record_type: str, fields: dict) -> bool:
        """Hand one record to its handler; False if none is registered or it failed."""
        handler = self._handlers.get(record_type)
        if handler is None:
            log.warning("Skipping metadata record of unknown type %s", record_type)
            return False
        try:
            handler(fields)
        except KafkaStorageException as exc:
            # A partition whose log could not be created (its log dir is offline,
            # logged there): the record stays, the partition is not served.
            self._storage_errors.log(logging.ERROR, record_type,
                                     "Could not apply a metadata record of type %s: %s",
                                     record_type, exc)
            return False
        except Exception:   # noqa: BLE001 -- the same at commit and replay: memory == log
            # Not the fields: a credential record holds keys.
            log.exception("Error applying a metadata record of type %s", record_type)
            return False
        return True

    def close(self) -> None:
        self.log.close()

