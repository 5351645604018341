"""ReplicaManager: validated appends, idempotent producers, reads, delayed-fetch wake-ups."""

from __future__ import annotations

import threading
import uuid

import pytest

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    CRC_OFFSET, decode_records, read_header, set_base_offset, split_batches)
from kafka_net.server.purgatory import DelayedOperation
from kafka_net.server.replica_manager import ReplicaManager
from tests.server.conftest import batch, wait_until

TOPIC = "orders"
PRODUCE_VERSION = 9


@pytest.fixture
def rm():
    manager = ReplicaManager()
    manager.ensure_partitions(TOPIC, uuid.uuid4(), 3)
    manager.fetch_purgatory.start()
    try:
        yield manager
    finally:
        manager.fetch_purgatory.shutdown()


def produce(rm, data, partition=0, version=PRODUCE_VERSION, topic=TOPIC):
    return rm.append_records(topic, partition, data, version)


def test_ensure_partitions_is_idempotent_and_grows(rm):
    p0 = rm.partition(TOPIC, 0)
    produce(rm, batch())
    rm.ensure_partitions(TOPIC, p0.topic_id, 5)
    assert rm.partition(TOPIC, 0) is p0  # existing partitions keep their data
    assert p0.log.log_end_offset == 1
    assert rm.partition(TOPIC, 4) is not None
    assert rm.partition(TOPIC, 5) is None
    assert (p0.topic, p0.index) == (TOPIC, 0)


def test_append_assigns_dense_offsets_per_partition(rm):
    r = [produce(rm, batch([b"a", b"b"])), produce(rm, batch([b"c"])),
         produce(rm, batch([b"d"]), partition=1)]
    assert [(x.error_code, x.base_offset) for x in r] == [(0, 0), (0, 2), (0, 0)]
    assert all(x.log_start_offset == 0 for x in r)
    error, result = rm.read(TOPIC, 0, 0, 1 << 20, True)
    assert error == ErrorCode.NONE
    values = [rec.value for b in split_batches(result.records) for rec in decode_records(b)]
    assert values == [b"a", b"b", b"c"]
    assert result.high_watermark == 3


def test_unknown_partition(rm):
    assert produce(rm, batch(), partition=3).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(rm, batch(), topic="nope").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert rm.read("nope", 0, 0, 100, True) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    assert rm.bytes_available("nope", 0, 0) == 1


def test_corrupt_batch_is_refused_with_corrupt_message(rm):
    data = bytearray(batch([b"hello"]))
    data[-1] ^= 0xFF  # breaks the CRC
    result = produce(rm, bytes(data))
    assert result.error_code == ErrorCode.CORRUPT_MESSAGE
    assert result.base_offset == -1 and result.error_message
    assert rm.partition(TOPIC, 0).log.log_end_offset == 0


def test_bad_crc_field_is_corrupt_message(rm):
    data = bytearray(batch([b"hello"]))
    data[CRC_OFFSET] ^= 0x01
    assert produce(rm, bytes(data)).error_code == ErrorCode.CORRUPT_MESSAGE


def test_truncated_batch_is_corrupt_message(rm):
    data = batch([b"hello"])
    assert produce(rm, data[:-3]).error_code in (ErrorCode.CORRUPT_MESSAGE,
                                                 ErrorCode.INVALID_RECORD)
    assert rm.partition(TOPIC, 0).log.log_end_offset == 0


def test_invalid_record_cases(rm):
    nonzero_base = bytearray(batch())
    set_base_offset(nonzero_base, 7)
    assert produce(rm, bytes(nonzero_base)).error_code == ErrorCode.INVALID_RECORD
    assert produce(rm, None).error_code == ErrorCode.INVALID_RECORD
    assert produce(rm, b"").error_code == ErrorCode.INVALID_RECORD
    two = batch([b"a"]) + batch([b"b"])
    assert produce(rm, two).error_code == ErrorCode.INVALID_RECORD
    assert rm.partition(TOPIC, 0).log.log_end_offset == 0


def test_batch_larger_than_max_message_bytes(rm):
    small = ReplicaManager(max_message_bytes=200)
    small.ensure_partitions(TOPIC, uuid.uuid4(), 1)
    assert small.append_records(TOPIC, 0, batch([b"x" * 300]), 9).error_code == \
        ErrorCode.MESSAGE_TOO_LARGE
    assert small.append_records(TOPIC, 0, batch([b"x"]), 9).error_code == ErrorCode.NONE


def test_stored_batch_keeps_its_compression_and_gets_its_offset(rm):
    produce(rm, batch([b"a"]))
    gz = batch([b"b", b"c"], compression=1)
    assert produce(rm, gz).base_offset == 1
    _, result = rm.read(TOPIC, 0, 1, 1 << 20, True)
    stored = bytes(split_batches(result.records)[0])
    assert read_header(stored).compression == 1
    # only the base offset and the partition leader epoch (0, stamped) differ
    assert stored[8:12] == gz[8:12] and stored[16:] == gz[16:]
    assert stored[12:16] == bytes(4) and gz[12:16] == b"\xff" * 4
    assert [r.offset for r in decode_records(stored)] == [1, 2]


def test_idempotent_duplicate_returns_the_original_offset(rm):
    def idem(seq, values):
        return batch(values, producer_id=77, producer_epoch=0, base_sequence=seq)

    assert produce(rm, idem(0, [b"a", b"b"])).base_offset == 0
    assert produce(rm, idem(2, [b"c"])).base_offset == 2
    dup = produce(rm, idem(0, [b"a", b"b"]))
    assert (dup.error_code, dup.base_offset) == (ErrorCode.NONE, 0)
    assert rm.partition(TOPIC, 0).log.log_end_offset == 3  # nothing written twice
    gap = produce(rm, idem(9, [b"z"]))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and gap.error_message
    assert produce(rm, idem(3, [b"d"])).base_offset == 3
    # Sequence state is per partition: partition 1 starts at 0 again.
    assert produce(rm, idem(0, [b"x"]), partition=1).base_offset == 0


def test_idempotent_old_epoch_is_fenced(rm):
    produce(rm, batch(producer_id=5, producer_epoch=2, base_sequence=0))
    r = produce(rm, batch(producer_id=5, producer_epoch=1, base_sequence=1))
    assert r.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_concurrent_appends_from_many_threads(rm):
    threads, per_thread = 12, 40
    acked = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def worker(tid):
        barrier.wait()
        for i in range(per_thread):
            r = produce(rm, batch([f"{tid}-{i}".encode()]))
            assert r.error_code == ErrorCode.NONE
            with lock:
                acked.append((r.base_offset, f"{tid}-{i}".encode()))

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    offsets = sorted(o for o, _ in acked)
    assert offsets == list(range(threads * per_thread))
    _, result = rm.read(TOPIC, 0, 0, 1 << 30, False)
    stored = {rec.offset: rec.value for b in split_batches(result.records)
              for rec in decode_records(b)}
    assert stored == dict(acked)


def test_concurrent_idempotent_producers(rm):
    """Several idempotent producers, each retrying every batch once: every batch
    is written once and every retry acknowledges the original offset."""
    producers, batches = 6, 30
    errors = []

    def worker(pid):
        for seq in range(batches):
            data = batch([b"v"], producer_id=pid, producer_epoch=0, base_sequence=seq)
            first = produce(rm, data)
            again = produce(rm, data)
            if first.error_code or again.error_code or first.base_offset != again.base_offset:
                errors.append((pid, seq, first, again))

    ts = [threading.Thread(target=worker, args=(1000 + p,)) for p in range(producers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert errors == []
    assert rm.partition(TOPIC, 0).log.log_end_offset == producers * batches


def test_read_out_of_range_and_max_bytes(rm):
    for _ in range(3):
        produce(rm, batch([b"x" * 100]))
    assert rm.read(TOPIC, 0, 4, 100, True) == (ErrorCode.OFFSET_OUT_OF_RANGE, None)
    error, result = rm.read(TOPIC, 0, 1, 1, True)
    assert error == ErrorCode.NONE
    assert [read_header(b).base_offset for b in split_batches(result.records)] == [1]
    _, none = rm.read(TOPIC, 0, 1, 1, False)
    assert none.records == b""
    assert rm.bytes_available(TOPIC, 0, 3) == 0
    assert rm.bytes_available(TOPIC, 0, 0) == rm.partition(TOPIC, 0).log.size_bytes


class WaitForBytes(DelayedOperation):
    """A minimal delayed fetch: complete once ``min_bytes`` are readable."""

    def __init__(self, rm, tp, offset, min_bytes=1, delay_ms=60_000):
        super().__init__(delay_ms)
        self.rm, self.tp, self.offset, self.min_bytes = rm, tp, offset, min_bytes
        self.answered = threading.Event()
        self.answers = 0

    def try_complete(self):
        if self.rm.bytes_available(*self.tp, self.offset) >= self.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self):
        self.answers += 1
        self.answered.set()


def test_waiting_fetch_is_completed_by_an_append(rm):
    op = WaitForBytes(rm, (TOPIC, 0), 0)
    assert rm.fetch_purgatory.try_complete_else_watch(op, [(TOPIC, 0)]) is False
    produce(rm, batch(), partition=1)  # another partition: no wake-up
    assert not op.is_completed
    produce(rm, batch(), partition=0)
    assert op.answered.is_set() and op.answers == 1


def test_failed_append_does_not_wake_a_waiting_fetch_into_an_answer(rm):
    op = WaitForBytes(rm, (TOPIC, 0), 0)
    rm.fetch_purgatory.try_complete_else_watch(op, [(TOPIC, 0)])
    bad = bytearray(batch())
    bad[-1] ^= 1
    produce(rm, bytes(bad))
    assert not op.is_completed


def test_waiting_fetch_with_min_bytes_needs_enough_data(rm):
    op = WaitForBytes(rm, (TOPIC, 0), 0, min_bytes=300)
    rm.fetch_purgatory.try_complete_else_watch(op, [(TOPIC, 0)])
    produce(rm, batch([b"x" * 10]))
    assert not op.is_completed
    produce(rm, batch([b"x" * 400]))
    assert op.is_completed


def test_waiting_fetch_times_out_without_data(rm):
    op = WaitForBytes(rm, (TOPIC, 0), 0, delay_ms=20)
    rm.fetch_purgatory.try_complete_else_watch(op, [(TOPIC, 0)])
    assert op.answered.wait(5)
    assert op.answers == 1


def test_delete_topic_wakes_waiting_fetches(rm):
    op = WaitForBytes(rm, (TOPIC, 2), 0)
    rm.fetch_purgatory.try_complete_else_watch(op, [(TOPIC, 2)])
    rm.delete_topic(TOPIC)
    assert op.is_completed  # bytes_available is 1 for a missing partition
    assert rm.partition(TOPIC, 0) is None
    assert wait_until(lambda: rm.fetch_purgatory.watched() == 0)
