"""PartitionLog, in memory and on disk: dense offsets, reads by offset and size,
timestamps, concurrency."""

from __future__ import annotations

import struct
import threading

import pytest

from kafka_net.protocol.records import build_batch, decode_records, read_header, split_batches
from kafka_net.server.storage import InMemoryLog, PartitionLog
from kafka_net.server.storage.base import OffsetOutOfRange
from tests.server.conftest import batch
from tests.server.storage_support import (  # noqa: F401 (fixtures)
    as_bytes, new_log, new_multi_batch_log, read_all)


def append(log: InMemoryLog, count: int = 1, timestamp: int = 1000, size_hint: int = 1):
    """One batch of ``count`` records, every record stamped ``timestamp``."""
    data = bytearray(build_batch([(None, b"x" * size_hint, (), timestamp)] * count))
    return log.append(data, count, timestamp)


def base_offsets(records) -> list[int]:
    return [read_header(b).base_offset for b in split_batches(as_bytes(records))]


def test_in_memory_log_satisfies_the_storage_protocol(new_log):
    log: PartitionLog = InMemoryLog()
    assert log.log_start_offset == 0 and log.log_end_offset == 0


def test_offsets_are_dense_and_written_into_the_batch(new_log):
    log = new_log()
    r1 = append(log, count=3)
    r2 = append(log, count=1)
    r3 = append(log, count=5)
    assert (r1.base_offset, r1.last_offset) == (0, 2)
    assert (r2.base_offset, r2.last_offset) == (3, 3)
    assert (r3.base_offset, r3.last_offset) == (4, 8)
    assert r1.log_append_time_ms == -1 and r1.log_start_offset == 0
    assert log.log_end_offset == 9
    records = read_all(log)
    assert base_offsets(records) == [0, 3, 4]
    offsets = [rec.offset for b in split_batches(records) for rec in decode_records(b)]
    assert offsets == list(range(9))


def test_append_keeps_the_batch_crc_valid(new_log):
    log = new_log()
    append(log)
    append(log, count=2)
    for b in split_batches(read_all(log)):
        decode_records(b, verify_crc=True)  # raises on a CRC mismatch


def test_append_does_not_keep_a_reference_to_the_callers_buffer(new_log):
    log = new_log()
    data = bytearray(batch([b"a"]))
    log.append(data, 1, 0)
    data[20:30] = b"\xff" * 10
    decode_records(as_bytes(log.read(0, 1 << 20, False).records))


def test_read_at_log_end_is_empty_with_the_watermarks(new_log):
    log = new_log()
    empty = log.read(0, 100, True)
    assert empty.records == b""
    assert (empty.high_watermark, empty.last_stable_offset, empty.log_start_offset) == (0, 0, 0)
    append(log, count=2)
    result = log.read(2, 100, True)
    assert result.records == b"" and result.high_watermark == 2
    assert result.last_stable_offset == 2


def test_read_from_the_middle_of_a_batch_returns_that_batch(new_log):
    log = new_log()
    append(log, count=3)     # 0-2
    append(log, count=4)     # 3-6
    append(log, count=2)     # 7-8
    for offset, first_base in [(0, 0), (1, 0), (2, 0), (3, 3), (5, 3), (6, 3), (8, 7)]:
        assert base_offsets(log.read(offset, 1 << 20, False).records)[0] == first_base, offset


@pytest.mark.parametrize("offset", [-1, 4, 100])
def test_read_out_of_range(new_log, offset):
    log = new_log()
    append(log, count=3)
    with pytest.raises(OffsetOutOfRange):
        log.read(offset, 100, True)


def test_max_bytes_returns_whole_batches_only(new_multi_batch_log):
    log = new_multi_batch_log()
    for _ in range(4):
        append(log, size_hint=50)
    one = len(log.read(0, 1 << 20, False).records) // 4
    assert len(log.read(0, one, False).records) == one
    assert len(log.read(0, one * 2 + one // 2, False).records) == one * 2
    assert len(log.read(0, one - 1, False).records) == 0
    assert len(log.read(0, 0, False).records) == 0


def test_min_one_batch_returns_an_oversized_first_batch(new_log):
    log = new_log()
    append(log, size_hint=500)
    append(log, size_hint=10)
    first = log.read(0, 1, True).records
    assert base_offsets(first) == [0]  # only the first, even though it exceeds max_bytes
    assert log.read(0, 1, False).records == b""
    # max_bytes 0 with min_one_batch: still one batch, so a consumer makes progress.
    assert base_offsets(log.read(1, 0, True).records) == [1]


def test_bytes_from(new_log):
    log = new_log()
    assert log.bytes_from(0) == 0
    append(log, count=2)
    append(log, count=3)
    total = log.size_bytes
    sizes = [len(b) for b in split_batches(read_all(log))]
    assert sum(sizes) == total
    assert log.bytes_from(0) == total
    assert log.bytes_from(1) == total  # mid-batch: the whole batch will be returned
    assert log.bytes_from(2) == sizes[1]
    assert log.bytes_from(4) == sizes[1]
    assert log.bytes_from(5) == 0      # log end
    # Out of range: an error is an answer, so report something to read.
    assert log.bytes_from(6) == 1
    assert log.bytes_from(-1) == 1


def test_offset_for_timestamp(new_log):
    log = new_log()
    assert log.offset_for_timestamp(0) is None
    append(log, count=2, timestamp=100)   # 0-1
    append(log, count=1, timestamp=300)   # 2
    append(log, count=3, timestamp=200)   # 3-5 (timestamps need not grow)
    assert log.offset_for_timestamp(0) == (0, 100)
    assert log.offset_for_timestamp(100) == (0, 100)
    assert log.offset_for_timestamp(101) == (2, 300)
    assert log.offset_for_timestamp(250) == (2, 300)
    assert log.offset_for_timestamp(300) == (2, 300)
    assert log.offset_for_timestamp(301) is None


def test_max_timestamp_offset(new_log):
    log = new_log()
    assert log.max_timestamp_offset() is None
    append(log, count=2, timestamp=100)
    append(log, count=1, timestamp=300)
    append(log, count=3, timestamp=200)
    append(log, count=1, timestamp=300)  # a tie: the first one wins
    assert log.max_timestamp_offset() == (2, 300)


def test_concurrent_appends_get_distinct_dense_offsets(new_log):
    log = new_log()
    threads, per_thread = 16, 50
    results: list = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def producer(tid: int):
        barrier.wait()
        mine = []
        for i in range(per_thread):
            count = 1 + (tid + i) % 3
            r = log.append(bytearray(batch([struct.pack(">ii", tid, i)] * count)), count, 0)
            mine.append((r.base_offset, r.last_offset, tid, i))
        with lock:
            results.extend(mine)

    workers = [threading.Thread(target=producer, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    assert len(results) == threads * per_thread
    results.sort()
    expected = 0
    for base, last, _, _ in results:
        assert base == expected, "offsets must be dense and never handed out twice"
        expected = last + 1
    assert log.log_end_offset == expected

    stored = split_batches(read_all(log))
    assert len(stored) == threads * per_thread
    seen = {}
    for b in stored:
        records = decode_records(b)
        tid, i = struct.unpack(">ii", records[0].value)
        seen[(tid, i)] = records[0].offset
    assert seen == {(tid, i): base for base, _, tid, i in results}


def test_reads_concurrent_with_appends_see_only_complete_batches(new_log):
    log = new_log()
    stop = threading.Event()
    problems = []

    def reader():
        while not stop.is_set():
            result = log.read(0, 1 << 30, False)
            try:
                bases = base_offsets(result.records)
            except Exception as exc:  # pragma: no cover - reported below
                problems.append(exc)
                return
            if bases and bases[-1] >= result.high_watermark:
                problems.append((bases, result.high_watermark))

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for r in readers:
        r.start()
    try:
        for _ in range(300):
            append(log, count=2)
    finally:
        stop.set()
        for r in readers:
            r.join(10)
    assert problems == []
    assert log.log_end_offset == 600


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_timestamp_lookups_look_inside_compressed_batches_of_every_codec(new_log, codec):
    log = new_log()
    data = bytearray(build_batch([(None, b"v", (), 1000 + 10 * i) for i in range(10)],
                                 compression=codec))
    log.append(data, 10, 1090)
    assert log.offset_for_timestamp(1050) == (5, 1050)
    assert log.offset_for_timestamp(1041) == (5, 1050)
    assert log.max_timestamp_offset() == (9, 1090)


def test_max_offset_stops_before_the_first_batch_starting_at_or_after_it(new_multi_batch_log):
    """read_committed reads up to the last stable offset: no batch starting at or after
    it, whole batches before it, wherever it falls (a batch's start or its middle)."""
    log = new_multi_batch_log()
    for _ in range(6):
        append(log, count=3, size_hint=20)           # batches at 0, 3, 6, 9, 12, 15
    for max_offset, expected in [(9, [0, 3, 6]), (10, [0, 3, 6, 9]), (1, [0]), (0, []),
                                 (18, [0, 3, 6, 9, 12, 15]), (100, [0, 3, 6, 9, 12, 15])]:
        records = log.read(0, 1 << 20, True, max_offset=max_offset).records
        assert base_offsets(records) == expected, max_offset
    assert base_offsets(log.read(7, 1 << 20, True, max_offset=12).records) == [6, 9]
    assert base_offsets(log.read(12, 1 << 20, True, max_offset=12).records) == []
