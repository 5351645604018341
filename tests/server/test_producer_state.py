"""Idempotent producer sequence rules (KIP-98), per producer id and partition."""

from __future__ import annotations

import pytest

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.producer_state import (
    NUM_BATCHES_TO_RETAIN, BatchMetadata, ProducerEntry, ProducerStateManager, SequenceError,
    next_sequence)

INT_MAX = 2**31 - 1
PID = 4242


class Log:
    """Drives a ProducerStateManager the way ReplicaManager does: check, then
    append (assigning dense offsets) and record unless it was a duplicate."""

    def __init__(self) -> None:
        self.state = ProducerStateManager()
        self.next_offset = 0

    def produce(self, first_seq: int, count: int = 1, epoch: int = 0, pid: int = PID) -> int:
        """Base offset of the batch (the original one for a duplicate)."""
        duplicate = self.state.check(pid, epoch, first_seq, count)
        if duplicate is not None:
            return duplicate.first_offset
        base = self.next_offset
        self.next_offset += count
        self.state.record(pid, epoch, first_seq, count, base, base + count - 1)
        return base

    def refused(self, first_seq: int, count: int = 1, epoch: int = 0, pid: int = PID) -> int:
        with pytest.raises(SequenceError) as info:
            self.produce(first_seq, count, epoch, pid)
        return info.value.error_code


def test_next_sequence_wraps_at_int_max():
    assert next_sequence(0, 1) == 1
    assert next_sequence(10, 5) == 15
    assert next_sequence(INT_MAX, 1) == 0
    assert next_sequence(INT_MAX - 1, 3) == 1


def test_first_batch_must_start_at_zero():
    log = Log()
    assert log.refused(1) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.refused(5, count=3) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.produce(0) == 0


def test_in_order_batches_are_accepted():
    log = Log()
    assert log.produce(0, count=3) == 0
    assert log.produce(3, count=2) == 3
    assert log.produce(5, count=1) == 5
    assert log.produce(6, count=10) == 6
    assert log.next_offset == 16


def test_new_producer_check_returns_none_without_recording():
    state = ProducerStateManager()
    assert state.check(PID, 0, 0, 5) is None
    # check alone changes nothing: the same first batch is still the first one.
    assert state.check(PID, 0, 0, 5) is None
    with pytest.raises(SequenceError):
        state.check(PID, 0, 5, 1)


@pytest.mark.parametrize("age", range(1, NUM_BATCHES_TO_RETAIN + 1))
def test_duplicates_of_each_of_the_last_five_batches_return_original_offsets(age):
    log = Log()
    offsets = []
    seq = 0
    batches = []
    for i in range(8):
        count = i + 1  # batches of different sizes: offsets and sequences differ
        offsets.append(log.produce(seq, count))
        batches.append((seq, count))
        seq += count
    end = log.next_offset
    first_seq, count = batches[-age]
    assert log.produce(first_seq, count) == offsets[-age]
    assert log.next_offset == end  # nothing appended
    # The producer carries on where it was.
    assert log.produce(seq, 1) == end


def test_sixth_oldest_batch_is_not_deduplicated():
    log = Log()
    for seq in range(NUM_BATCHES_TO_RETAIN + 1):
        log.produce(seq)
    # Batch 0 has fallen out of the five retained: it is out of order, not a duplicate.
    assert log.refused(0) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # Batch 1 is the oldest still retained.
    assert log.produce(1) == 1


def test_partial_overlap_with_a_stored_batch_is_out_of_order():
    log = Log()
    log.produce(0, count=5)
    assert log.refused(2, count=3) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.refused(0, count=4) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.produce(5) == 5


@pytest.mark.parametrize("gap", [1, 2, 100])
def test_gap_is_out_of_order(gap):
    log = Log()
    log.produce(0, count=3)
    assert log.refused(3 + gap) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.produce(3) == 3


def test_refused_batch_changes_nothing():
    log = Log()
    log.produce(0)
    log.refused(7)
    log.refused(0, count=2)
    assert log.produce(1) == 1
    assert log.produce(0) == 0  # still a duplicate


def test_older_epoch_is_invalid_producer_epoch():
    log = Log()
    log.produce(0, epoch=3)
    assert log.refused(1, epoch=2) == ErrorCode.INVALID_PRODUCER_EPOCH
    # Even a "duplicate" of an old-epoch batch from an older epoch is fenced.
    assert log.refused(0, epoch=0) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_new_epoch_must_start_at_zero():
    log = Log()
    log.produce(0, count=4, epoch=0)
    assert log.refused(4, epoch=1) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.produce(0, epoch=1) == 4
    assert log.produce(1, epoch=1) == 5
    # The old epoch is now fenced, and its batches are no longer duplicates.
    assert log.refused(0, count=4, epoch=0) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_new_epoch_forgets_the_old_epochs_batches():
    log = Log()
    log.produce(0, count=2, epoch=0)
    log.produce(0, count=2, epoch=1)
    # seq 0-1 in epoch 1 is a duplicate of epoch 1's batch, not epoch 0's.
    assert log.produce(0, count=2, epoch=1) == 2
    entry = log.state._producers[PID]
    assert entry.epoch == 1
    assert list(entry.batches) == [BatchMetadata(0, 1, 2, 3)]


def _near_the_wrap(last_seq: int, next_offset: int) -> Log:
    """A producer whose stored state ends at ``last_seq`` (as a long-lived producer's would)."""
    log = Log()
    log.state._producers[PID] = ProducerEntry(0)
    log.state._producers[PID].batches.append(
        BatchMetadata(last_seq - 9, last_seq, next_offset - 10, next_offset - 1))
    log.next_offset = next_offset
    return log


def test_sequence_wraps_from_int_max_to_zero():
    log = _near_the_wrap(INT_MAX - 2, 1000)
    assert log.produce(INT_MAX - 1, count=2) == 1000   # seqs MAX-1, MAX
    assert log.produce(0) == 1002                      # wraps to 0
    assert log.produce(1) == 1003
    assert log.refused(INT_MAX) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_after_int_max_only_zero_follows():
    log = _near_the_wrap(INT_MAX, 50)
    assert log.refused(INT_MAX + 1) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.refused(1) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.produce(0) == 50


def test_batch_spanning_the_wrap_point():
    log = _near_the_wrap(INT_MAX - 3, 100)
    base = log.produce(INT_MAX - 2, count=5)  # MAX-2, MAX-1, MAX, 0, 1
    assert base == 100
    assert log.state._producers[PID].last_seq == 1
    assert log.produce(INT_MAX - 2, count=5) == base  # its duplicate is recognised
    assert log.refused(3) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.produce(2) == base + 5


def test_producers_are_independent():
    log = Log()
    assert log.produce(0, pid=1) == 0
    assert log.produce(0, pid=2) == 1
    assert log.produce(1, pid=1) == 2
    assert log.refused(5, pid=2) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.produce(1, pid=2) == 3
    assert log.produce(0, pid=1) == 0  # pid 1's duplicate


def test_only_five_batches_are_retained():
    log = Log()
    for seq in range(20):
        log.produce(seq)
    entry = log.state._producers[PID]
    assert len(entry.batches) == NUM_BATCHES_TO_RETAIN
    assert [b.first_seq for b in entry.batches] == list(range(15, 20))
