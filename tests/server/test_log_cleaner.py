"""The LogCleaner: compaction, tombstones, transactions, lag and ratio, on both stores.

Every test drives the broker's own ReplicaManager (appends validated as a
producer's) with a clock of its own, and runs the cleaner's passes by hand
(``LogCleaner.try_clean_filthiest_log``): no thread, no sleep.  Each runs on
the in-memory log and on the durable one (UnifiedLog in a temporary
folder, cleaned segments swapped in through .cleaned/.swap files).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    Compression, build_batch, decode_records, read_header, split_batches)
from kafka_net.protocol.records.compaction import has_delete_horizon
from kafka_net.server.log_cleaner import LogCleaner
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.storage.unified_log import UnifiedLog
from kafka_net.server.transaction.markers import build_marker_batch
from tests.server.storage_support import as_bytes

TOPIC = "changelog"
T0 = 1_700_000_000_000
DELETE_RETENTION = 60_000
SEGMENT_MS = 1_000


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Store:
    """The store the tests of this module run on, and the durable logs it opened."""

    kind = "memory"
    opened: list = []
    folders: list = []

    @classmethod
    def close_all(cls) -> None:
        for partition_log in cls.opened:
            partition_log.close()
        for folder in cls.folders:
            shutil.rmtree(folder, ignore_errors=True)
        cls.opened, cls.folders = [], []


@pytest.fixture(autouse=True, params=["memory", "disk"])
def store(request):
    Store.kind = request.param
    yield request.param
    Store.close_all()


def compacted(configs: dict | None = None, **kw):
    """A ReplicaManager with one compacted partition, its clock, and a LogCleaner."""
    Store.close_all()     # the previous Hypothesis example's logs
    rm = ReplicaManager()
    rm.clock_ms = Clock()
    overrides = {"cleanup.policy": ["compact"], "internal.segment.bytes": 400,
                 "segment.ms": SEGMENT_MS, "delete.retention.ms": DELETE_RETENTION,
                 "min.cleanable.dirty.ratio": 0.0, "file.delete.delay.ms": 0}
    overrides.update(configs or {})
    rm.config_repository.set_topic_config(TOPIC, overrides)
    if Store.kind == "disk":
        folder = tempfile.mkdtemp(prefix="kn-cleaner-")
        Store.folders.append(folder)

        def durable(topic, index, topic_id):
            opened = UnifiedLog(f"{folder}/{topic}-{index}",
                                lambda: rm.config_repository.log_config(topic).segment,
                                topic_id=topic_id, clock_ms=rm.clock_ms)
            Store.opened.append(opened)
            return opened
        rm.log_factory = durable
    rm.ensure_partitions(TOPIC, uuid.uuid4(), 1)
    return rm, LogCleaner(rm, **kw)


def write(rm, records, timestamp=T0, **kw):
    """Append one batch of (key, value) records; return their offsets."""
    batch = build_batch([(k, v, (), timestamp) for k, v in records], **kw)
    result = rm.append_records(TOPIC, 0, batch, 9)
    assert result.error_code == ErrorCode.NONE, result
    return list(range(result.base_offset, result.base_offset + len(records)))


def roll(rm, timestamp):
    """A batch far enough in time to start a new segment: what was active is cleanable."""
    return write(rm, [(b"~roll", str(timestamp).encode())], timestamp=timestamp)


def read_all(rm, isolation_level=0):
    """Every batch from the log start, fetch after fetch as a consumer reads (the
    durable log answers one segment per fetch)."""
    position = rm.partition(TOPIC, 0).log.log_start_offset
    batches = []
    for _ in range(10_000):
        error, result = rm.read(TOPIC, 0, position, 1 << 30, True, isolation_level)
        assert error == ErrorCode.NONE
        got = split_batches(as_bytes(result.records))
        if not got:
            break
        batches += got
        position = read_header(got[-1]).next_offset
    return batches, [r for b in batches for r in decode_records(b)]


def visible(records):
    return [(r.offset, r.key, r.value) for r in records if r.key != b"~roll"]


# -- the property: any keyed writes and tombstones -----------------------------------

writes = st.lists(st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", b"e"]),
                                     st.one_of(st.none(), st.binary(min_size=1, max_size=30))),
                           min_size=1, max_size=4), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(batches=writes, codec=st.sampled_from([Compression.NONE, Compression.GZIP,
                                              Compression.ZSTD]))
def test_cleaning_keeps_the_latest_value_of_every_live_key(batches, codec):
    rm, cleaner = compacted()
    history = []                                   # (offset, key, value) of every write
    for records in batches:
        history += zip(write(rm, records, compression=codec), *zip(*records))
    log_end = rm.partition(TOPIC, 0).log.log_end_offset
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()

    latest = {key: (offset, key, value) for offset, key, value in history}
    _, records = read_all(rm)
    # Each key once, its last write, at its original offset; tombstones kept for now.
    assert visible(records) == sorted(latest.values())
    assert [r.offset for r in records] == sorted({r.offset for r in records})
    assert rm.partition(TOPIC, 0).log.log_end_offset == log_end + 1

    # Past the delete horizon, the next cleaning (new dirty data) drops the tombstones.
    rm.clock_ms.now = T0 + DELETE_RETENTION
    roll(rm, T0 + 20 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    _, records = read_all(rm)
    assert visible(records) == sorted(v for v in latest.values() if v[2] is not None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(batches=writes)
def test_a_small_offset_map_cleans_in_several_rounds_to_the_same_result(batches):
    # log.cleaner.dedupe.buffer.size for 4 keys (3 at the 90% load factor): each
    # round ends where its map filled, and the next goes on from there
    rm, cleaner = compacted(dedupe_buffer_size=4 * 24)
    history = []
    for records in batches:
        history += zip(write(rm, records), *zip(*records))
    roll(rm, T0 + 10 * SEGMENT_MS)
    rounds = 0
    while cleaner.try_clean_filthiest_log():
        rounds += 1
        assert rounds <= 2 * len(history)
    latest = {key: (offset, key, value) for offset, key, value in history}
    assert visible(read_all(rm)[1]) == sorted(latest.values())


def test_appends_retention_and_cleaning_at_once():
    rm, cleaner = compacted({"cleanup.policy": ["compact", "delete"],
                             "retention.bytes": 20_000, "internal.segment.bytes": 1000})
    last: dict[bytes, tuple] = {}
    done = threading.Event()

    def produce():
        try:
            for n in range(1500):
                key = b"k%d" % (n % 37)
                (offset,) = write(rm, [(key, b"%d" % n)], timestamp=T0 + n)
                last[key] = (offset, key, b"%d" % n)
        finally:
            done.set()
    writer = threading.Thread(target=produce)
    writer.start()
    passes = 0
    while not done.is_set() and passes < 100_000:
        cleaner.try_clean_filthiest_log()
        passes += 1
    writer.join(10)
    roll(rm, T0 + 10_000 * SEGMENT_MS)
    while cleaner.try_clean_filthiest_log():
        pass
    _, records = read_all(rm)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    assert offsets[0] >= rm.partition(TOPIC, 0).log.log_start_offset
    # every key still in the log appears once, with its last value; none is lost
    # unless retention took it
    seen = visible(records)
    assert len({key for _, key, _ in seen}) == len(seen)
    start = rm.partition(TOPIC, 0).log.log_start_offset
    assert seen == sorted(v for v in last.values() if v[0] >= start)


def test_cleaned_batches_keep_offsets_producer_fields_and_codec():
    rm, cleaner = compacted()
    batch = build_batch([(b"k", b"1", (), T0), (b"x", b"only", (), T0 + 5), (b"k", b"2", (), T0)],
                        compression=Compression.GZIP, producer_id=7, producer_epoch=0,
                        base_sequence=0)
    assert rm.append_records(TOPIC, 0, batch, 9).error_code == 0
    write(rm, [(b"k", b"3")], producer_id=7, producer_epoch=0, base_sequence=3)
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    batches, records = read_all(rm)
    first = read_header(batches[0])
    assert (first.base_offset, first.last_offset_delta, first.records_count) == (0, 2, 1)
    assert (first.producer_id, first.producer_epoch, first.base_sequence) == (7, 0, 0)
    assert first.compression == Compression.GZIP
    assert visible(records) == [(1, b"x", b"only"), (3, b"k", b"3")]
    assert records[0].timestamp == T0 + 5


def test_a_tombstone_gets_a_delete_horizon_and_goes_after_it():
    rm, cleaner = compacted()
    write(rm, [(b"k", b"v")])
    write(rm, [(b"k", None)])
    roll(rm, T0 + 10 * SEGMENT_MS)
    rm.clock_ms.now = T0 + 5
    assert cleaner.try_clean_filthiest_log()
    batches, records = read_all(rm)
    assert visible(records) == [(1, b"k", None)]
    tombstone = read_header(batches[0])
    assert has_delete_horizon(tombstone)
    assert tombstone.base_timestamp == T0 + 5 + DELETE_RETENTION
    assert records[0].timestamp == T0            # the record's own timestamp kept

    rm.clock_ms.now = T0 + 5 + DELETE_RETENTION - 1   # one ms short: kept
    roll(rm, T0 + 20 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    assert visible(read_all(rm)[1]) == [(1, b"k", None)]
    rm.clock_ms.now += 1
    roll(rm, T0 + 30 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    assert visible(read_all(rm)[1]) == []


def test_the_active_segment_is_never_cleaned():
    rm, cleaner = compacted({"internal.segment.bytes": 1 << 20})
    for n in range(5):
        write(rm, [(b"k", str(n).encode())])
    assert not cleaner.try_clean_filthiest_log()          # one segment: the active one
    assert len(visible(read_all(rm)[1])) == 5
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    assert visible(read_all(rm)[1]) == [(4, b"k", b"4")]


def test_segments_roll_by_bytes_and_by_time():
    rm, _ = compacted({"internal.segment.bytes": 200})
    log = rm.partition(TOPIC, 0).log
    write(rm, [(b"k", b"x" * 100)])
    write(rm, [(b"k", b"x" * 100)])                       # would pass 200 bytes: a new one
    assert [s.base_offset for s in log.segment_infos()] == [0, 1]
    rm, _ = compacted({"internal.segment.bytes": 1 << 20})
    log = rm.partition(TOPIC, 0).log
    write(rm, [(b"k", b"x")], timestamp=T0)
    write(rm, [(b"k", b"y")], timestamp=T0 + SEGMENT_MS)  # not past segment.ms yet
    write(rm, [(b"k", b"z")], timestamp=T0 + SEGMENT_MS + 1)
    assert [s.base_offset for s in log.segment_infos()] == [0, 2]


def test_a_compacted_log_rolls_by_max_compaction_lag_too():
    rm, _ = compacted({"segment.ms": 100 * SEGMENT_MS, "max.compaction.lag.ms": SEGMENT_MS})
    write(rm, [(b"k", b"x")], timestamp=T0)
    write(rm, [(b"k", b"y")], timestamp=T0 + SEGMENT_MS + 1)
    assert [s.base_offset for s in rm.partition(TOPIC, 0).log.segment_infos()] == [0, 1]


def test_min_cleanable_dirty_ratio():
    rm, cleaner = compacted({"min.cleanable.dirty.ratio": 0.5, "internal.segment.bytes": 1 << 20})
    for n in range(6):
        write(rm, [(b"k%d" % n, b"v")])
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()              # all dirty: ratio 1.0
    before = visible(read_all(rm)[1])
    write(rm, [(b"k0", b"new")], timestamp=T0 + 10 * SEGMENT_MS)
    roll(rm, T0 + 20 * SEGMENT_MS)
    # clean: 6 batches; dirty: the first roll batch and k0's (2 batches): 0.25
    assert not cleaner.try_clean_filthiest_log()
    assert visible(read_all(rm)[1]) == before + [(7, b"k0", b"new")]
    for n in range(6):
        write(rm, [(b"k1", b"%d" % n)], timestamp=T0 + 20 * SEGMENT_MS)
    roll(rm, T0 + 30 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()              # 9 dirty batches of 15: 0.6
    assert visible(read_all(rm)[1]) == [
        (2, b"k2", b"v"), (3, b"k3", b"v"), (4, b"k4", b"v"), (5, b"k5", b"v"),
        (7, b"k0", b"new"), (14, b"k1", b"5")]


def test_min_compaction_lag_keeps_young_segments_dirty():
    rm, cleaner = compacted({"min.compaction.lag.ms": 10 * SEGMENT_MS})
    write(rm, [(b"k", b"old")], timestamp=T0)
    roll(rm, T0 + 5 * SEGMENT_MS)
    write(rm, [(b"k", b"young")], timestamp=T0 + 20 * SEGMENT_MS)
    roll(rm, T0 + 40 * SEGMENT_MS)
    rm.clock_ms.now = T0 + 25 * SEGMENT_MS      # segment 2 (T0+20s..) is within the lag
    assert cleaner.try_clean_filthiest_log()
    # only [0, young's segment) was cleaned: the young record and the old one it
    # would replace are both still there
    assert visible(read_all(rm)[1]) == [(0, b"k", b"old"), (2, b"k", b"young")]
    rm.clock_ms.now = T0 + 60 * SEGMENT_MS
    roll(rm, T0 + 60 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    assert visible(read_all(rm)[1]) == [(2, b"k", b"young")]


def test_max_compaction_lag_cleans_below_the_ratio():
    rm, cleaner = compacted({"min.cleanable.dirty.ratio": 0.99,
                             "max.compaction.lag.ms": 100 * SEGMENT_MS,
                             "internal.segment.bytes": 1 << 20})
    for n in range(3):
        write(rm, [(b"k", str(n).encode())])
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()            # the first cleaning: ratio 1.0
    write(rm, [(b"k", b"late")], timestamp=T0 + 10 * SEGMENT_MS)
    roll(rm, T0 + 20 * SEGMENT_MS)
    rm.clock_ms.now = T0 + 50 * SEGMENT_MS
    assert not cleaner.try_clean_filthiest_log()        # ratio 0.5 < 0.99, lag not reached
    rm.clock_ms.now = T0 + 200 * SEGMENT_MS             # the dirty batch is past the lag
    assert cleaner.try_clean_filthiest_log()
    assert visible(read_all(rm)[1]) == [(4, b"k", b"late")]


def test_non_compacted_topics_are_left_alone():
    rm, cleaner = compacted({"cleanup.policy": ["delete"]})
    write(rm, [(b"k", b"1")])
    write(rm, [(b"k", b"2")])
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert not cleaner.try_clean_filthiest_log()
    assert len(visible(read_all(rm)[1])) == 2


# -- transactions ----------------------------------------------------------------------

def _txn_write(rm, pid, seq, records, timestamp=T0):
    return write(rm, records, timestamp=timestamp, producer_id=pid, producer_epoch=0,
                 base_sequence=seq, transactional=True)


def _end_txn(rm, pid, commit):
    assert rm.append_txn_marker(TOPIC, 0, build_marker_batch(pid, 0, commit, T0),
                                pid, 0, commit) == ErrorCode.NONE


def _markers(rm):
    return [(h.producer_id, h.base_offset) for h in map(read_header, read_all(rm)[0])
            if h.is_control]


def test_aborted_records_go_and_their_marker_after_the_horizon():
    rm, cleaner = compacted()
    write(rm, [(b"k", b"committed-before")])                       # 0
    _txn_write(rm, 5, 0, [(b"k", b"aborted"), (b"j", b"aborted")])  # 1-2
    _end_txn(rm, 5, commit=False)                                  # 3
    _txn_write(rm, 6, 0, [(b"m", b"committed")])                   # 4
    _end_txn(rm, 6, commit=True)                                   # 5
    _txn_write(rm, 5, 2, [(b"n", b"committed")])                   # 6
    _end_txn(rm, 5, commit=True)                                   # 7
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    # the aborted records are gone, and were never the latest value of k
    data = [(r.offset, r.key, r.value) for r in read_all(rm)[1]
            if r.key in (b"k", b"j", b"m", b"n")]
    assert data == [(0, b"k", b"committed-before"), (4, b"m", b"committed"),
                    (6, b"n", b"committed")]
    # the abort marker stays while this round still saw its transaction's batch
    assert _markers(rm) == [(5, 3), (6, 5), (5, 7)]
    assert rm.read(TOPIC, 0, 0, 1 << 20, True, 1)[1].aborted_transactions == [(5, 1)]
    rm.clock_ms.now = T0 + 1
    roll(rm, T0 + 20 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    # now empty of records, the abort's marker gets a delete horizon ...
    abort = next(h for h in map(read_header, read_all(rm)[0]) if h.base_offset == 3)
    assert has_delete_horizon(abort) and abort.base_timestamp == T0 + 1 + DELETE_RETENTION
    rm.clock_ms.now = T0 + 1 + DELETE_RETENTION
    roll(rm, T0 + 30 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    # ... and goes past it; the commit markers stay with their records
    assert _markers(rm) == [(6, 5), (5, 7)]
    committed = read_all(rm, isolation_level=1)[1]
    assert (b"m", b"committed") in [(r.key, r.value) for r in committed]
    # a read_committed fetch is no longer told of the aborted transaction: without
    # its marker, a consumer would skip producer 5's later, committed records
    error, result = rm.read(TOPIC, 0, 0, 1 << 20, True, 1)
    assert result.aborted_transactions == []


def test_an_open_transaction_stops_the_cleaning_at_the_last_stable_offset():
    rm, cleaner = compacted({"internal.segment.bytes": 100})     # a segment per batch
    write(rm, [(b"k", b"1")])
    write(rm, [(b"k", b"2")])
    _txn_write(rm, 9, 0, [(b"k", b"open")])          # holds the LSO at offset 2
    write(rm, [(b"k", b"3")])
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    assert visible(read_all(rm)[1]) == [
        (1, b"k", b"2"), (2, b"k", b"open"), (3, b"k", b"3")]


def test_the_last_batch_of_an_idempotent_producer_stays_even_empty():
    rm, cleaner = compacted()
    write(rm, [(b"k", b"1")], producer_id=3, producer_epoch=0, base_sequence=0)
    write(rm, [(b"k", b"2")])
    roll(rm, T0 + 10 * SEGMENT_MS)
    assert cleaner.try_clean_filthiest_log()
    batches, records = read_all(rm)
    first = read_header(batches[0])
    assert (first.producer_id, first.base_sequence, first.records_count) == (3, 0, 0)
    assert visible(records) == [(1, b"k", b"2")]
    # and the producer's next sequence is still accepted
    write(rm, [(b"k", b"3")], producer_id=3, producer_epoch=0, base_sequence=1)


# -- the thread's manners --------------------------------------------------------------

def test_an_error_marks_the_partition_uncleanable_and_the_thread_goes_on(caplog, monkeypatch):
    rm, cleaner = compacted()
    write(rm, [(b"k", b"1")])
    write(rm, [(b"k", b"2")])
    roll(rm, T0 + 10 * SEGMENT_MS)

    def broken(*args, **kw):
        raise RuntimeError("disk on fire")
    monkeypatch.setattr(cleaner.cleaners[0], "build_offset_map", broken)
    assert not cleaner.try_clean_filthiest_log()
    assert "Marking its partition (changelog-0) as uncleanable" in caplog.text
    assert cleaner.manager.is_uncleanable(rm.partition(TOPIC, 0))
    assert not cleaner.try_clean_filthiest_log()       # not picked again


def test_cleaning_logs_kafkas_lines(caplog):
    rm, cleaner = compacted()
    write(rm, [(b"k", b"1")])
    write(rm, [(b"k", b"2")])
    roll(rm, T0 + 10 * SEGMENT_MS)
    with caplog.at_level("INFO", logger="kafka_net.server.storage.log_cleaner"):
        assert cleaner.try_clean_filthiest_log()
    assert "Cleaner 0: Beginning cleaning of log changelog-0" in caplog.text
    assert "Log cleaner thread 0 cleaned log changelog-0 (dirty section = [0, 2])" \
        in caplog.text
    assert "50.0% size reduction (50.0% fewer messages)" in caplog.text


def test_the_cleaner_thread_survives_an_error_and_cleans_on(caplog):
    rm, cleaner = compacted(backoff_ms=1)
    write(rm, [(b"k", b"1")])
    write(rm, [(b"k", b"2")])
    roll(rm, T0 + 10 * SEGMENT_MS)
    original = cleaner.manager.grab_filthiest_compacted_log
    calls = []

    def flaky(now):
        calls.append(now)
        if len(calls) == 1:
            raise RuntimeError("checkpoint unreadable")
        return original(now)
    cleaner.manager.grab_filthiest_compacted_log = flaky
    cleaner.startup()
    try:
        deadline = time.monotonic() + 10
        while cleaner.cleanings < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        cleaner.shutdown()
    assert "[kafka-log-cleaner-thread-0]: Error due to" in caplog.text
    assert cleaner.cleanings == 1
    assert visible(read_all(rm)[1]) == [(1, b"k", b"2")]
