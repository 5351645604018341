"""SharePartition: one share group's view of one topic partition (KIP-932).

Kafka's ``SharePartition`` (core/src/main/java/kafka/server/share): where a
consumer group keeps one committed offset per partition, a share group keeps
the delivery state of every record between two offsets:

* the **share-partition start offset** (SPSO, ``start_offset``): every record
  before it is done with (acknowledged or archived);
* the **share-partition end offset** (SPEO, ``end_offset``): the next offset
  never yet fetched for the group; records at or past it are not in flight.

Between the two, each record is in one of Kafka's ``RecordState``\\ s:

* AVAILABLE: may be acquired by the next ShareFetch of any member;
* ACQUIRED: delivered to one member, locked for it until it acknowledges or its
  *acquisition lock* (``group.share.record.lock.duration.ms``) runs out;
* ACKNOWLEDGED: accepted by the member; never delivered again;
* ARCHIVED: rejected, or delivered ``group.share.delivery.count.limit`` times
  without being accepted, or a gap (an offset with no record); never again.

Moves (``AcknowledgeType``: 0 gap, 1 accept, 2 release, 3 reject, 4 renew)::

    AVAILABLE --acquire (delivery count + 1)--> ACQUIRED
    ACQUIRED --accept--> ACKNOWLEDGED      ACQUIRED --reject, gap--> ARCHIVED
    ACQUIRED --release, lock expiry, member gone--> AVAILABLE,
             or ARCHIVED once the delivery count reached the limit
    ACQUIRED --renew--> ACQUIRED with a fresh lock

Only the member holding a record may acknowledge it: anything else is
INVALID_RECORD_STATE, and a request's acknowledgements of one partition are
checked whole before any is applied.  The SPSO moves past leading
ACKNOWLEDGED/ARCHIVED records.  At most
``group.share.partition.max.record.locks`` records are in flight
(SPEO - SPSO): past that, new records wait until the start moves.

Offsets in [SPSO, SPEO) without an entry in ``_records`` were never delivered
(a state read back from ``__share_group_state`` lists only what it must) and
count as AVAILABLE with delivery count 0.

Lock expiry is checked whenever the partition is touched (each fetch,
acknowledgement or describe runs :meth:`expire_locks` first, under the
partition's lock) and by the share coordinator's sweep, so a lapsed lock makes
its records available to the very next fetch.

Not thread-safe alone: the SharePartitionManager holds ``lock`` around every call.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from enum import IntEnum
from typing import Callable, Iterable, NamedTuple

from kafka_net.protocol.error_codes import ErrorCode


class RecordState(IntEnum):
    """Kafka's ``RecordState`` ids (the persisted ones: 0, 2, 4)."""
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass
class InFlightRecord:
    """A record of a share partition between fetch and acknowledgement: its state,
    deliveries and lock."""

    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock_deadline: float = 0.0   # monotonic seconds; meaningful while ACQUIRED


class AcquiredRecords(NamedTuple):
    first_offset: int
    last_offset: int
    delivery_count: int


class StateBatch(NamedTuple):
    """A run of records with one persisted state and delivery count (Kafka's
    ``PersisterStateBatch``)."""
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class AcknowledgementError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class SharePartitionConfig:
    """The group.share.* keys one share partition follows."""

    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    max_in_flight_records: int = 2000   # group.share.partition.max.record.locks
    # KIP-1191 (share.version 2, the group's errors.deadletterqueue.topic.name set):
    # keep the records a consumer rejects or that reach the delivery limit in
    # ``dead_letters`` for the manager to write to the group's dead-letter topic.
    dead_letters: bool = False


# Why a record is a dead letter (Kafka's __dlq.errors.message).
DELIVERY_LIMIT_REACHED = "Offset delivery count exceeded the threshold."
REJECTED = "Record rejected by the consumer."


class SharePartition:
    def __init__(self, group_id: str, topic: str, topic_id, partition: int,
                 config: SharePartitionConfig, start_offset: int,
                 clock: Callable[[], float] | None = None) -> None:
        self.group_id, self.topic, self.topic_id, self.partition = \
            group_id, topic, topic_id, partition
        self.config = config
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.state_epoch = 0
        self.leader_epoch = 0
        self._records: dict[int, InFlightRecord] = {}
        self._clock = clock or time.monotonic
        # (offset, delivery count, why) archived while config.dead_letters was on,
        # waiting for the manager's write to the dead-letter topic.
        self.dead_letters: list[tuple[int, int, str]] = []
        self.lock = threading.RLock()
        # Bumped by every change a persisted state would show (the manager writes
        # __share_group_state when it moved).
        self.version = 0

    # -- the persisted form ---------------------------------------------------------------

    def restore(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        """Take a state read back from ``__share_group_state`` (Kafka's
        ``maybeInitialize``): the start offset and each batch's records; the end
        offset follows the last batch.  Records persisted AVAILABLE come back
        AVAILABLE with their delivery count, so in-flight ones are redelivered."""
        self.start_offset = self.end_offset = start_offset
        self._records.clear()
        for b in batches:
            for offset in range(max(b.first_offset, start_offset), b.last_offset + 1):
                state = RecordState(b.delivery_state) if b.delivery_state in (0, 2, 4) \
                    else RecordState.AVAILABLE
                if state == RecordState.AVAILABLE \
                        and b.delivery_count >= self.config.delivery_count_limit:
                    state = RecordState.ARCHIVED   # its last delivery was in flight
                self._records[offset] = InFlightRecord(state, b.delivery_count)
                self.end_offset = max(self.end_offset, offset + 1)
        self._advance_start()

    def state_batches(self) -> list[StateBatch]:
        """The in-flight records as runs of (state, delivery count), an ACQUIRED one
        written AVAILABLE (after a restart no lock is held; its delivery counts)."""
        out: list[StateBatch] = []
        for offset in range(self.start_offset, self.end_offset):
            rec = self._records.get(offset)
            if rec is None:
                continue
            state = RecordState.AVAILABLE if rec.state == RecordState.ACQUIRED else rec.state
            if out and out[-1].last_offset == offset - 1 and out[-1].delivery_state == state \
                    and out[-1].delivery_count == rec.delivery_count:
                out[-1] = out[-1]._replace(last_offset=offset)
            else:
                out.append(StateBatch(offset, offset, int(state), rec.delivery_count))
        return out

    def reset_start(self, offset: int) -> None:
        """Move the SPSO to ``offset`` and forget every in-flight record
        (AlterShareGroupOffsets on an empty group, or the log start moving past
        the SPSO)."""
        self._records = {o: r for o, r in self._records.items() if o >= offset}
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)
        self._advance_start()
        self.version += 1

    # -- reading the state ----------------------------------------------------------------

    def record(self, offset: int) -> InFlightRecord | None:
        """The record's state: None before the SPSO, at/after the SPEO, or never delivered."""
        if self.start_offset <= offset < self.end_offset:
            return self._records.get(offset)
        return None

    def in_flight(self) -> dict[int, InFlightRecord]:
        return dict(self._records)

    def next_fetch_offset(self) -> int:
        """The first offset a fetch could acquire: the lowest available record in
        flight, else the SPEO."""
        for offset in range(self.start_offset, self.end_offset):
            rec = self._records.get(offset)
            if rec is None or rec.state == RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def can_acquire(self) -> bool:
        """Kafka's ``canAcquireRecords``: something in flight is available, or the
        window has room for new records."""
        return (self.next_fetch_offset() < self.end_offset
                or self.end_offset - self.start_offset < self.config.max_in_flight_records)

    def delivery_complete_count(self) -> int:
        """Offsets at or past the SPSO whose delivery is complete (KIP-1226)."""
        return sum(1 for r in self._records.values() if r.state in DONE)

    # -- acquiring --------------------------------------------------------------------------

    def acquire(self, member_id: str, batches: Iterable[tuple[int, int]],
                max_records: int, read_from: int | None = None) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` up to ``max_records`` records of the fetched
        batches ((base offset, last offset) in log order), read from offset
        ``read_from``: the available ones in flight and new ones past the SPEO
        while the window has room.  Offsets the log skipped (compaction), before
        the first batch or between batches, are archived as gaps."""
        self.expire_locks()
        deadline = self._clock() + self.config.record_lock_duration_ms / 1000
        taken: list[tuple[int, int]] = []
        end_before = self.end_offset
        for offset in self._acquirable(batches, max_records, read_from):
            rec = self._records.get(offset)
            if rec is None:
                rec = self._records[offset] = InFlightRecord(RecordState.AVAILABLE, 0)
            rec.state = RecordState.ACQUIRED
            rec.delivery_count += 1
            rec.member_id = member_id
            rec.lock_deadline = deadline
            taken.append((offset, rec.delivery_count))
        self._advance_start()
        if taken or self.end_offset != end_before:
            self.version += 1   # new delivery counts (and gaps) to persist
        return self._ranges(taken)

    def _acquirable(self, batches: Iterable[tuple[int, int]], max_records: int,
                    read_from: int | None):
        """The offsets to acquire, in order; extends the SPEO over new ones."""
        count = 0
        expected = read_from
        for base, last in batches:
            if expected is not None:
                self._archive_missing(expected, min(base, self.end_offset))
            expected = last + 1
            for offset in range(max(base, self.start_offset), last + 1):
                if count >= max_records:
                    return
                if offset >= self.end_offset:
                    if offset - self.start_offset >= self.config.max_in_flight_records:
                        return
                    for gap in range(self.end_offset, offset):
                        self._records[gap] = InFlightRecord(RecordState.ARCHIVED, 0)
                    self.end_offset = offset + 1
                else:
                    rec = self._records.get(offset)
                    if rec is not None and rec.state != RecordState.AVAILABLE:
                        continue
                count += 1
                yield offset

    def _archive_missing(self, first: int, end: int) -> None:
        """Offsets in flight the log no longer has (compacted away): gaps."""
        for offset in range(max(first, self.start_offset), end):
            rec = self._records.get(offset)
            if rec is None or rec.state == RecordState.AVAILABLE:
                self._records[offset] = InFlightRecord(
                    RecordState.ARCHIVED, 0 if rec is None else rec.delivery_count)

    def archive_unacquired(self, first: int, last: int) -> None:
        """Archive the records of [first, last] nobody holds or has completed (an
        aborted transaction's, under read_committed): never delivered.  Offsets
        between the SPEO and ``first`` stay in the window as never delivered."""
        for offset in range(max(first, self.start_offset), last + 1):
            rec = self._records.get(offset)
            if rec is None or rec.state == RecordState.AVAILABLE:
                self._records[offset] = InFlightRecord(
                    RecordState.ARCHIVED, 0 if rec is None else rec.delivery_count)
        self.end_offset = max(self.end_offset, last + 1)
        self._advance_start()
        self.version += 1

    @staticmethod
    def _ranges(taken: list[tuple[int, int]]) -> list[AcquiredRecords]:
        out: list[AcquiredRecords] = []
        for offset, count in taken:
            if out and out[-1].last_offset == offset - 1 and out[-1].delivery_count == count:
                out[-1] = out[-1]._replace(last_offset=offset)
            else:
                out.append(AcquiredRecords(offset, offset, count))
        return out

    # -- acknowledging ----------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: list[tuple[int, int, list[int]]],
                    renew_allowed: bool = False) -> None:
        """Apply a member's acknowledgements of this partition, all or none:
        raises AcknowledgementError (INVALID_REQUEST for a malformed batch,
        INVALID_RECORD_STATE for a record the member does not hold)."""
        self.expire_locks()
        moves: list[tuple[int, int]] = []
        for first, last, types in batches:
            if first > last or first < 0:
                raise AcknowledgementError(ErrorCode.INVALID_REQUEST,
                                           f"Invalid acknowledgement batch {first}-{last}.")
            if len(types) not in (1, last - first + 1):
                raise AcknowledgementError(
                    ErrorCode.INVALID_REQUEST,
                    f"Acknowledgement batch {first}-{last} has {len(types)} types.")
            for i, offset in enumerate(range(first, last + 1)):
                ack = types[0] if len(types) == 1 else types[i]
                if ack not in AcknowledgeType.__members__.values() or (
                        ack == AcknowledgeType.RENEW and not renew_allowed):
                    raise AcknowledgementError(ErrorCode.INVALID_REQUEST,
                                               f"Invalid acknowledge type {ack}.")
                rec = self.record(offset)
                if rec is None or rec.state != RecordState.ACQUIRED:
                    raise AcknowledgementError(
                        ErrorCode.INVALID_RECORD_STATE,
                        f"The record at offset {offset} is not acquired.")
                if rec.member_id != member_id:
                    raise AcknowledgementError(
                        ErrorCode.INVALID_RECORD_STATE,
                        f"Member is not the owner of the record at offset {offset}.")
                moves.append((offset, ack))
        for offset, ack in moves:
            self._apply(offset, self._records[offset], ack)
        self._advance_start()
        self.version += 1

    def _apply(self, offset: int, rec: InFlightRecord, ack: int) -> None:
        if ack == AcknowledgeType.ACCEPT:
            self._finish(rec, RecordState.ACKNOWLEDGED)
        elif ack == AcknowledgeType.REJECT:
            self._finish(rec, RecordState.ARCHIVED)
            self._dead_letter(offset, rec, REJECTED)
        elif ack == AcknowledgeType.GAP:   # no record there: nothing to dead-letter
            self._finish(rec, RecordState.ARCHIVED)
        elif ack == AcknowledgeType.RELEASE:
            self._release(offset, rec)
        else:   # RENEW: the member keeps it, with a fresh lock
            rec.lock_deadline = self._clock() + self.config.record_lock_duration_ms / 1000

    @staticmethod
    def _finish(rec: InFlightRecord, state: RecordState) -> None:
        rec.state, rec.member_id = state, None

    def _release(self, offset: int, rec: InFlightRecord) -> None:
        """Back to AVAILABLE, or ARCHIVED once delivered the limit's number of times."""
        if rec.delivery_count >= self.config.delivery_count_limit:
            self._finish(rec, RecordState.ARCHIVED)
            self._dead_letter(offset, rec, DELIVERY_LIMIT_REACHED)
        else:
            self._finish(rec, RecordState.AVAILABLE)

    def _dead_letter(self, offset: int, rec: InFlightRecord, why: str) -> None:
        if self.config.dead_letters:
            self.dead_letters.append((offset, rec.delivery_count, why))

    def release_member(self, member_id: str) -> int:
        """Release every record ``member_id`` holds (its share session closed, it
        left the group, it forgot the partition); how many.  These were fetched
        but never handed to the application, so, as Kafka's releaseAcquiredRecords
        (DeliveryCountOps.DECREASE), their acquisition does not count: the
        delivery count goes back down and the limit archives none of them.
        Otherwise every short-lived consumer closing with a full buffer would
        spend a delivery of each buffered record, and a busy group's records
        would reach the limit and be archived unprocessed."""
        released = 0
        for rec in self._records.values():
            if rec.state == RecordState.ACQUIRED and rec.member_id == member_id:
                rec.delivery_count = max(rec.delivery_count - 1, 0)
                self._finish(rec, RecordState.AVAILABLE)
                released += 1
        if released:
            self._advance_start()
            self.version += 1
        return released

    def expire_locks(self) -> int:
        """Release the records whose acquisition lock ran out (Kafka's
        AcquisitionLockTimerTask); how many."""
        now = self._clock()
        return self._release_acquired(lambda rec: rec.lock_deadline <= now)

    def _release_acquired(self, chosen) -> int:
        """Release the acquired records ``chosen(record)`` picks; how many."""
        released = 0
        for offset, rec in self._records.items():
            if rec.state == RecordState.ACQUIRED and chosen(rec):
                self._release(offset, rec)
                released += 1
        if released:
            self._advance_start()
            self.version += 1
        return released

    def _advance_start(self) -> None:
        """Move the SPSO past the leading records whose delivery is complete."""
        offset = self.start_offset
        while offset < self.end_offset:
            rec = self._records.get(offset)
            if rec is None or rec.state not in DONE:
                break
            del self._records[offset]
            offset += 1
        self.start_offset = offset
