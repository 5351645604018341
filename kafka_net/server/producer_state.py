"""Idempotent producers: sequence checks and duplicate detection per partition.

An idempotent producer (KIP-98) stamps each batch with its producer id,
epoch and the sequence number of its first record; sequences count records
per (producer, partition) from 0.  A producer that retries a batch (its
response was lost) sends the same sequences again.  The broker therefore:

* acknowledges a **duplicate** of one of the last five batches of that
  producer with the batch's original offsets, writing nothing (Kafka keeps
  five because a producer has at most five requests in flight per connection);
* accepts a batch whose first sequence follows the last one stored
  (``last + 1``, wrapping from Int.MaxValue to 0);
* refuses anything else with OUT_OF_ORDER_SEQUENCE_NUMBER, so the producer
  never silently loses or reorders records;
* refuses an epoch older than the current one with INVALID_PRODUCER_EPOCH
  (a fenced "zombie" producer), and requires a new epoch to start at 0.

Callers hold the partition's lock, so the check and the append are one step.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafka_net.protocol.error_codes import ErrorCode

NUM_BATCHES_TO_RETAIN = 5
_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class BatchMetadata:
    """One batch a producer wrote: its sequence numbers and offsets (to spot a retry)."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerEntry:
    """A producer id's state in one partition: its epoch and its last batches."""

    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1   # the max timestamp of its last batch (DescribeProducers)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


class SequenceError(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def next_sequence(seq: int, count: int) -> int:
    """The sequence after ``count`` records starting at ``seq`` (wraps at Int.MaxValue)."""
    return (seq + count) % (_INT_MAX + 1)


class ProducerStateManager:
    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, first_seq: int,
              count: int) -> BatchMetadata | None:
        """Validate a batch; return the original metadata if it is a duplicate.

        Raises :class:`SequenceError` for a batch that must be refused.
        """
        entry = self._producers.get(producer_id)
        last_seq = next_sequence(first_seq, count - 1)
        if entry is None:
            if first_seq != 0:
                raise SequenceError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {producer_id} has no state here and sent sequence "
                    f"{first_seq}, not 0")
            return None
        if epoch < entry.epoch:
            raise SequenceError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {producer_id} epoch {epoch} is older than {entry.epoch}")
        if epoch > entry.epoch:
            if first_seq != 0:
                raise SequenceError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {producer_id} new epoch {epoch} must start at sequence 0, "
                    f"not {first_seq}")
            return None
        for batch in entry.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        expected = next_sequence(entry.last_seq, 1)
        if first_seq != expected:
            raise SequenceError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {producer_id} sent sequence {first_seq}, expected {expected}")
        return None

    def record_marker(self, producer_id: int, epoch: int) -> None:
        """A transaction marker written by the coordinator (Kafka's
        ``appendEndTxnMarker``): a newer epoch (a fenced producer's transaction
        aborted) becomes current, so the old epoch's batches are refused from now on."""
        entry = self._producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            self._producers[producer_id] = ProducerEntry(epoch)

    def record(self, producer_id: int, epoch: int, first_seq: int, count: int,
               first_offset: int, last_offset: int, max_timestamp: int = -1) -> None:
        entry = self._producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self._producers[producer_id] = ProducerEntry(epoch)
        entry.batches.append(BatchMetadata(
            first_seq, next_sequence(first_seq, count - 1), first_offset, last_offset))
        entry.last_timestamp = max_timestamp

    def load(self, entries: dict[int, ProducerEntry]) -> None:
        """Start from a snapshot's entries (kafka_net.server.storage.producer_snapshot)."""
        self._producers = dict(entries)

    def active_producers(self) -> list[tuple[int, ProducerEntry]]:
        """(producer id, entry) of every producer with state here, by id."""
        return sorted(self._producers.items())
