"""One partition's transactions: the last stable offset and the aborted-transaction index.

Kafka keeps this in two places: ``ProducerStateManager`` tracks the first
offset of each producer's ongoing transaction (``ongoingTxns``), whose
smallest is the *first unstable offset*; the ``TransactionIndex`` of each log
segment lists the aborted transactions, ``(producer id, first offset, last
offset)``, that a read_committed Fetch returns so the consumer can drop their
records.

* A transactional batch from a producer with no ongoing transaction here
  starts one at the batch's base offset.
* A control batch (COMMIT or ABORT marker) ends it; an ABORT records the
  transaction's span in the aborted index.
* The last stable offset (LSO) is the first offset of the oldest ongoing
  transaction, else the high watermark: a read_committed consumer reads up
  to it and no further.

The caller holds the partition's lock, as for the log itself.
"""

from __future__ import annotations

import bisect
from typing import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class AbortedTxn:
    """One aborted transaction of a partition: its producer and offset range."""

    producer_id: int
    first_offset: int
    last_offset: int      # the offset of the ABORT marker


class TransactionIndex:
    def __init__(self) -> None:
        self._ongoing: dict[int, int] = {}        # producer id -> first offset
        self._aborted: list[AbortedTxn] = []      # in marker (last offset) order
        self._aborted_last: list[int] = []        # their last offsets, for bisect
        # The durable log keeps each aborted transaction in its segment's .txnindex too.
        self.on_aborted: "Callable[[AbortedTxn], None] | None" = None

    def on_transactional_append(self, producer_id: int, base_offset: int) -> None:
        self._ongoing.setdefault(producer_id, base_offset)

    def on_marker(self, producer_id: int, commit: bool, marker_offset: int) -> None:
        first = self._ongoing.pop(producer_id, None)
        if first is not None and not commit:
            aborted = AbortedTxn(producer_id, first, marker_offset)
            self._aborted.append(aborted)
            self._aborted_last.append(marker_offset)
            if self.on_aborted is not None:
                self.on_aborted(aborted)

    def restore(self, ongoing: dict[int, int], aborted: list[AbortedTxn]) -> None:
        """Start from a producer snapshot's open transactions and the aborted ones
        read from the segments' .txnindex files (a log being loaded)."""
        self._ongoing = dict(ongoing)
        self._aborted = sorted(aborted, key=lambda t: t.last_offset)
        self._aborted_last = [t.last_offset for t in self._aborted]

    @property
    def has_ongoing(self) -> bool:
        return bool(self._ongoing)

    def first_unstable_offset(self) -> int | None:
        return min(self._ongoing.values()) if self._ongoing else None

    def last_stable_offset(self, high_watermark: int) -> int:
        first = self.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    def ongoing(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction (DescribeProducers' view)."""
        return dict(self._ongoing)

    def aborted_between(self, start: int, upper: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start, upper): those ending at or
        after ``start`` that began before ``upper`` (Kafka's
        ``collectAbortedTransactions``)."""
        index = bisect.bisect_left(self._aborted_last, start)
        return [t for t in self._aborted[index:] if t.first_offset < upper]

    def remove_aborted(self, marker_offsets: set[int]) -> None:
        """Forget the aborted transactions whose ABORT marker the log cleaner removed
        (Kafka rebuilds a cleaned segment's index from the markers it keeps): a
        read_committed consumer told of an aborted transaction skips that producer's
        batches until it meets the marker, so an entry without one would hide the
        producer's later, committed records."""
        if not marker_offsets:
            return
        kept = [t for t in self._aborted if t.last_offset not in marker_offsets]
        self._aborted = kept
        self._aborted_last = [t.last_offset for t in kept]

    def truncate_before(self, log_start: int) -> None:
        """Forget aborted transactions wholly below the log start (deleted records)."""
        index = bisect.bisect_left(self._aborted_last, log_start)
        del self._aborted[:index], self._aborted_last[:index]
