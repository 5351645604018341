"""PartitionLog, in memory and on disk: per-record timestamp lookups, DeleteRecords and
retention moving the log start."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from kafka_net.protocol.records import build_batch
from tests.server.storage_support import (
    SEGMENT_PER_BATCH_STORES, STORES, LogFactory)


def append(log, *timestamps: int) -> None:
    data = bytearray(build_batch([(None, b"x", (), ts) for ts in timestamps]))
    log.append(data, len(timestamps), max(timestamps))


def brute_force(batches: list[list[int]], target: int, start: int = 0):
    flat = [ts for batch in batches for ts in batch]
    for offset, ts in enumerate(flat):
        if offset >= start and ts >= target:
            return offset, ts
    return None


batches_strategy = st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=5),
                            min_size=1, max_size=6)


@pytest.mark.parametrize("store", STORES)
@given(batches=batches_strategy, target=st.integers(-1, 52), start=st.integers(0, 30))
def test_offset_for_timestamp_is_the_first_record_reaching_it(store, batches, target, start):
    with LogFactory(store) as new:
        log = new()
        for timestamps in batches:
            append(log, *timestamps)
        start = min(start, log.log_end_offset)
        log.delete_records_before(start)
        assert log.offset_for_timestamp(target) == brute_force(batches, target, start)


@pytest.mark.parametrize("store", STORES)
@given(batches=batches_strategy)
def test_max_timestamp_offset_is_the_first_record_with_the_largest(store, batches):
    with LogFactory(store) as new:
        log = new()
        for timestamps in batches:
            append(log, *timestamps)
        flat = [ts for batch in batches for ts in batch]
        assert log.max_timestamp_offset() == (flat.index(max(flat)), max(flat))


@pytest.fixture(params=SEGMENT_PER_BATCH_STORES)
def new_segment_per_batch_log(request):
    with LogFactory(request.param) as factory:
        yield factory


def test_delete_records_before_drops_whole_batches_below_it(new_segment_per_batch_log):
    log = new_segment_per_batch_log()
    append(log, 1, 2, 3)      # 0-2
    append(log, 4, 5)         # 3-4
    assert log.delete_records_before(4) == 4
    assert log.read(4, 1 << 20, True).log_start_offset == 4
    assert log.retained_bytes < log.size_bytes   # batch 0-2 is gone
    assert log.delete_records_before(1) == 4     # never backwards


def test_retention_by_time_and_size(new_segment_per_batch_log):
    log = new_segment_per_batch_log()
    append(log, 1000)
    append(log, 2000)
    append(log, 3000)
    assert log.delete_retained(now_ms=3500, retention_ms=1000, retention_bytes=-1) == 2
    assert log.log_start_offset == 2
    append(log, 4000)
    append(log, 5000)
    one = log.retained_bytes // 3
    assert log.delete_retained(now_ms=5000, retention_ms=-1, retention_bytes=one) == 2
    assert (log.log_start_offset, log.retained_bytes) == (4, one)
    assert log.delete_retained(now_ms=10**9, retention_ms=10, retention_bytes=-1) == 1
    assert (log.log_start_offset, log.log_end_offset, log.retained_bytes) == (5, 5, 0)
