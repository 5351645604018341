"""UnifiedLog on disk: segment files, indexes, rolling, recovery, retention, producer state."""

from __future__ import annotations

import logging
import os
import struct

import pytest

from kafka_net.protocol.records import build_batch, read_header, split_batches
from kafka_net.server.producer_state import SequenceError
from kafka_net.server.storage.index import PENDING_ENTRIES
from kafka_net.server.storage.segment import LogSegment, SegmentConfig
from kafka_net.server.storage.unified_log import UnifiedLog
from tests.server.storage_support import as_bytes, read_all

SMALL = SegmentConfig(segment_bytes=1000, index_interval_bytes=100, file_delete_delay_ms=0)


def batch_of(i: int, count: int = 2, size: int = 40, timestamp: int | None = None,
             **kw) -> bytearray:
    ts = 1000 + i if timestamp is None else timestamp
    return bytearray(build_batch([(None, bytes([i % 256]) * size, (), ts)] * count, **kw))


def fill(log: UnifiedLog, batches: int, start: int = 0) -> None:
    for i in range(start, start + batches):
        log.append(batch_of(i), 2, 1000 + i)


def open_log(path, config=SMALL, **kw) -> UnifiedLog:
    return UnifiedLog(str(path / "orders-0"), config, **kw)


def names(log: UnifiedLog, suffix: str) -> list[str]:
    return sorted(n for n in os.listdir(log.directory) if n.endswith(suffix))


def base_offsets(data: bytes) -> list[int]:
    return [read_header(b).base_offset for b in split_batches(data)]


# -- files, indexes, rolling ------------------------------------------------------------------

def test_segments_are_named_by_base_offset_and_roll_on_segment_bytes(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)            # 30 batches of ~160 bytes: 6 per 1000-byte segment
    logs = names(log, ".log")
    assert logs[0] == "00000000000000000000.log"
    assert all(len(n) == len("00000000000000000000.log") for n in logs)
    assert len(logs) == len(log.segments()) > 4
    for segment in log.segments():
        assert segment.size <= SMALL.segment_bytes
        assert os.path.exists(segment.offset_index.path)
        assert os.path.exists(segment.time_index.path)
    # a segment's base offset is the offset after the previous one's last batch
    bases = [s.base_offset for s in log.segments()]
    assert bases == sorted(bases) and all(b % 2 == 0 for b in bases)
    assert read_all(log) and base_offsets(read_all(log)) == list(range(0, 60, 2))
    log.close()


def test_index_entries_use_kafkas_formats_and_interval(tmp_path):
    log = open_log(tmp_path, SegmentConfig(index_interval_bytes=100))
    fill(log, 10)
    segment = log.segments()[0]
    log.close()
    with open(segment.offset_index.path, "rb") as fh:
        raw = fh.read()
    assert len(raw) % 8 == 0 and len(raw) > 0
    entries = list(struct.iter_unpack(">ii", raw))
    positions = [p for _, p in entries]
    assert positions == sorted(positions)
    # relative offsets are batch last offsets; positions are those batches' starts
    sizes = len(batch_of(0))
    for relative, position in entries:
        assert position % sizes == 0 and relative == position // sizes * 2 + 1
    with open(segment.time_index.path, "rb") as fh:
        times = list(struct.iter_unpack(">qi", fh.read()))
    assert times and [t for t, _ in times] == sorted({t for t, _ in times})
    assert times[-1] == (1009, 18)   # written at close: the max timestamp and its batch


def test_index_entries_reach_the_file_in_chunks_at_the_latest_by_a_flush(tmp_path):
    log = open_log(tmp_path, SegmentConfig(index_interval_bytes=0))   # an entry a batch
    fill(log, PENDING_ENTRIES + 10)
    index = log.segments()[0].offset_index
    entries = PENDING_ENTRIES + 9            # none for the first batch
    assert index.entries == entries
    assert index.lookup(2 * 40 + 1) == (81, 40 * len(batch_of(0)))   # in memory at once
    # One chunk written, the rest pending: the file is a whole number of entries.
    assert os.path.getsize(index.path) == PENDING_ENTRIES * 8
    log.flush()
    with open(index.path, "rb") as fh:
        on_disk = list(struct.iter_unpack(">ii", fh.read()))
    assert len(on_disk) == entries
    assert on_disk[-1] == (2 * entries + 1, entries * len(batch_of(0)))
    log.close()


def test_index_entries_pending_at_a_crash_are_rebuilt_by_recovery(tmp_path):
    log = open_log(tmp_path, SegmentConfig(index_interval_bytes=0))
    fill(log, 20)
    log.flush()
    fill(log, 20, start=20)
    before, recovery_point = read_all(log), log.recovery_point
    expected = list(zip(*[log.segments()[0].offset_index.lookup(o) for o in range(80)]))
    log.scheduler.shutdown()
    for segment in log.segments():
        segment.release()    # a crash: descriptors gone, pending entries never written
    assert os.path.getsize(log.segments()[0].offset_index.path) == 19 * 8
    again = open_log(tmp_path, SegmentConfig(index_interval_bytes=0),
                     recovery_point=recovery_point, had_clean_shutdown=False)
    assert read_all(again) == before
    index = again.segments()[0].offset_index
    assert index.entries == 39
    assert list(zip(*[index.lookup(o) for o in range(80)])) == expected
    again.close()


def test_reads_answer_a_region_of_one_segment_file(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)
    result = log.read(13, 1 << 20, False)
    region = result.records
    segment = next(s for s in log.segments() if s.base_offset <= 13 < s.read_next_offset())
    assert os.readlink(f"/proc/self/fd/{region.fd}") == segment.log.path
    assert base_offsets(as_bytes(region))[0] == 12
    assert base_offsets(as_bytes(region))[-1] == segment.read_next_offset() - 2
    log.close()


def test_roll_on_segment_ms_uses_batch_timestamps(tmp_path):
    log = open_log(tmp_path, SegmentConfig(segment_ms=100))
    log.append(batch_of(0, timestamp=1000), 2, 1000)
    log.append(batch_of(1, timestamp=1050), 2, 1050)
    assert len(log.segments()) == 1
    log.append(batch_of(2, timestamp=1101), 2, 1101)
    assert [s.base_offset for s in log.segments()] == [0, 4]
    log.close()


def test_roll_on_a_full_index(tmp_path):
    log = open_log(tmp_path, SegmentConfig(index_interval_bytes=0, segment_index_bytes=24))
    fill(log, 10)   # an entry per batch after the first; 3 entries fill the index
    assert len(log.segments()) >= 3
    assert all(s.offset_index.entries <= 3 for s in log.segments())
    assert base_offsets(read_all(log)) == list(range(0, 20, 2))
    log.close()


def test_a_roll_writes_a_producer_snapshot_and_moves_the_recovery_point(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)
    second = log.segments()[1].base_offset
    log.scheduler.shutdown()   # runs the roll's background flush now
    assert log.recovery_point >= log.segments()[-1].base_offset
    assert f"{second:020d}.snapshot" in names(log, ".snapshot")
    log.close()


# -- reopening ------------------------------------------------------------------------------

def test_reopen_after_close_finds_everything_without_scanning(tmp_path, monkeypatch):
    log = open_log(tmp_path)
    fill(log, 30)
    before = read_all(log)
    end, ts = log.log_end_offset, log.offset_for_timestamp(1012)
    log.close()

    def no_scan(*args, **kwargs):
        raise AssertionError("a clean reopen must not recover (scan) a segment")

    monkeypatch.setattr(LogSegment, "recover", no_scan)
    again = open_log(tmp_path, recovery_point=end)
    assert again.log_end_offset == end
    assert read_all(again) == before
    assert again.offset_for_timestamp(1012) == ts
    assert again.max_timestamp_offset() == (58, 1029)
    r = again.append(batch_of(99), 2, 2000)
    assert r.base_offset == end
    again.close()


def test_crash_recovery_scans_only_segments_from_the_recovery_point(tmp_path, monkeypatch):
    log = open_log(tmp_path)
    fill(log, 30)
    end = log.log_end_offset
    log.scheduler.shutdown()
    recovery_point = log.recovery_point
    log.local.close()   # a crash: no snapshot at the end, no flush
    recovered = []
    real = LogSegment.recover

    def spy(self, *args, **kwargs):
        recovered.append(self.base_offset)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LogSegment, "recover", spy)
    again = open_log(tmp_path, recovery_point=recovery_point, had_clean_shutdown=False)
    assert again.log_end_offset == end
    assert recovered and min(recovered) <= recovery_point
    assert all(b >= max(s.base_offset for s in again.segments() if s.base_offset <= recovery_point)
               for b in recovered)
    again.close()


def test_after_a_crash_the_recovery_point_moves_only_with_a_background_flush(
        tmp_path, monkeypatch):
    """Kafka's LogLoader: recovered segments are checked, not flushed, and the
    recovery point stays; flush_recovered_in_background (the LogManager calls it
    for a log opened after a crash) fsyncs them off the start and moves it."""
    import threading

    from tests.server.conftest import wait_until

    log = open_log(tmp_path)
    fill(log, 30)
    end = log.log_end_offset
    log.scheduler.shutdown()
    recovery_point = log.recovery_point
    log.local.close()   # a crash
    flushed = []
    real = LogSegment.flush

    def spy(self, *args, **kwargs):
        flushed.append(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LogSegment, "flush", spy)
    again = open_log(tmp_path, recovery_point=recovery_point, had_clean_shutdown=False)
    assert (again.log_end_offset, again.recovery_point) == (end, recovery_point)
    assert recovery_point < end and flushed == []
    again.flush_recovered_in_background()
    assert wait_until(lambda: again.recovery_point == end)
    assert flushed and threading.current_thread().name not in flushed
    again.close()


def crash_and_damage(tmp_path, damage) -> tuple[bytes, UnifiedLog]:
    log = open_log(tmp_path, SegmentConfig(index_interval_bytes=100))
    fill(log, 12)
    data = read_all(log)
    path = log.segments()[-1].log.path
    log.local.close()
    damage(path, data)
    return data, path


def test_a_torn_tail_is_truncated_to_the_last_whole_batch(tmp_path, caplog):
    size = len(batch_of(0))

    def tear(path, data):
        with open(path, "r+b") as fh:
            fh.truncate(len(data) - size // 2)

    data, path = crash_and_damage(tmp_path, tear)
    with caplog.at_level(logging.INFO):
        log = open_log(tmp_path, had_clean_shutdown=False)
    assert log.log_end_offset == 22
    assert read_all(log) == data[:-size]
    assert os.path.getsize(path) == len(data) - size
    assert "Found invalid messages in log segment" in caplog.text
    assert f"a torn batch of {size - size // 2} bytes" in caplog.text
    # appends carry on from the last whole batch
    assert log.append(batch_of(50), 2, 5000).base_offset == 22
    log.close()


def test_a_bad_crc_cuts_the_log_before_the_corrupt_batch(tmp_path, caplog):
    size = len(batch_of(0))

    def flip(path, data):
        with open(path, "r+b") as fh:
            fh.seek(5 * size + 70)          # inside the 6th batch's records
            byte = fh.read(1)
            fh.seek(5 * size + 70)
            fh.write(bytes([byte[0] ^ 0xFF]))

    data, _ = crash_and_damage(tmp_path, flip)
    with caplog.at_level(logging.WARNING):
        log = open_log(tmp_path, had_clean_shutdown=False)
    assert log.log_end_offset == 10
    assert read_all(log) == data[:5 * size]
    assert "Record is corrupt (stored crc" in caplog.text
    log.close()


def test_corruption_in_a_segment_deletes_the_segments_after_it(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)
    segments = log.segments()
    victim = segments[1]
    log.local.close()
    with open(victim.log.path, "r+b") as fh:
        fh.seek(100)
        fh.write(b"\xff\xff")
    again = open_log(tmp_path, had_clean_shutdown=False)
    assert [s.base_offset for s in again.segments()] == [0, victim.base_offset]
    assert again.log_end_offset == victim.base_offset   # its first batch was the damaged one
    assert names(again, ".log") == [f"{0:020d}.log", f"{victim.base_offset:020d}.log"]
    again.close()


@pytest.mark.parametrize("damage", ["missing", "odd-length", "decreasing"])
def test_a_missing_or_corrupt_index_is_rebuilt_from_the_log(tmp_path, caplog, damage):
    log = open_log(tmp_path)
    fill(log, 30)
    before = read_all(log)
    first = log.segments()[0]
    entries = first.offset_index.entries
    assert entries > 0
    log.close()
    if damage == "missing":
        os.unlink(first.offset_index.path)
    elif damage == "odd-length":
        with open(first.offset_index.path, "ab") as fh:
            fh.write(b"\x00\x01\x02")
    else:
        with open(first.offset_index.path, "r+b") as fh:
            fh.write(struct.pack(">ii", 10_000, 0))
    with caplog.at_level(logging.WARNING):
        again = open_log(tmp_path)
    assert "rebuilding index files" in caplog.text
    assert again.segments()[0].offset_index.entries == entries
    assert read_all(again) == before
    again.close()


def remove_every_file_of(log: UnifiedLog, base: int) -> None:
    prefix = f"{base:020d}."
    for name in os.listdir(log.directory):
        if name.startswith(prefix):
            os.unlink(os.path.join(log.directory, name))


def test_a_middle_segment_gone_with_every_file_is_named(tmp_path, caplog):
    log = open_log(tmp_path)
    fill(log, 30)
    bases = [s.base_offset for s in log.segments()]
    assert len(bases) >= 4
    log.close()
    remove_every_file_of(log, bases[1])
    with caplog.at_level(logging.ERROR):
        again = open_log(tmp_path)
    assert (f"No segment holds offsets {bases[1]} to {bases[2] - 1} of orders-0: the segment "
            f"files that held them are missing, and their records are lost. A Fetch there is "
            f"answered from offset {bases[2]}.") in caplog.text
    # Kafka's answer for a gap: the next batch there is.
    assert base_offsets(as_bytes(again.read(bases[1], 10_000, True).records))[0] == bases[2]
    again.close()


def test_the_first_and_the_last_segments_gone_are_named_after_a_clean_stop(tmp_path, caplog):
    log = open_log(tmp_path)
    fill(log, 30)
    bases = [s.base_offset for s in log.segments()]
    end = log.log_end_offset
    log.close()
    remove_every_file_of(log, bases[0])
    remove_every_file_of(log, bases[-1])
    with caplog.at_level(logging.ERROR):
        again = open_log(tmp_path, recovery_point=end, log_start_offset=0)
    assert f"No segment holds offsets 0 to {bases[1] - 1} of orders-0" in caplog.text
    assert f"No segment holds offsets {bases[-1]} to {end - 1} of orders-0" in caplog.text
    assert (again.log_start_offset, again.log_end_offset) == (bases[1], bases[-1])
    again.close()


def test_a_gap_below_the_cleaner_checkpoint_is_the_cleaners(tmp_path, caplog):
    log = open_log(tmp_path)
    fill(log, 30)
    bases = [s.base_offset for s in log.segments()]
    log.close()
    remove_every_file_of(log, bases[1])
    with caplog.at_level(logging.ERROR):
        again = open_log(tmp_path, cleaner_checkpoint=bases[2])
    assert "No segment holds" not in caplog.text
    again.close()


# -- retention and DeleteRecords ---------------------------------------------------------------

def test_retention_deletes_whole_segments_and_moves_the_log_start(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)
    first_two = [s.base_offset for s in log.segments()[:2]]
    third = log.segments()[2].base_offset
    newest_in_second = log.segments()[2].base_offset // 2 - 1 + 1000
    deleted = log.delete_retained(now_ms=newest_in_second + 101, retention_ms=100,
                                  retention_bytes=-1)
    assert deleted == 2
    assert log.log_start_offset == third
    assert all(f"{b:020d}.log" not in names(log, ".log") for b in first_two)
    assert log.read(third, 1 << 20, True).log_start_offset == third
    log.close()


def test_retention_by_size_keeps_the_newest_segments(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)
    sizes = [s.size for s in log.segments()]
    keep = sum(sizes[-2:])
    log.delete_retained(now_ms=0, retention_ms=-1, retention_bytes=keep)
    assert [s.size for s in log.segments()] == sizes[-2:]
    log.close()


def test_delete_records_may_put_the_log_start_inside_a_segment(tmp_path):
    log = open_log(tmp_path)
    fill(log, 30)
    third = log.segments()[2]
    inside = third.base_offset + 3
    assert log.delete_records_before(inside) == inside
    assert log.segments()[0] is third
    assert base_offsets(as_bytes(log.read(inside, 1 << 20, True).records))[0] == inside - 1
    with pytest.raises(Exception):
        log.read(inside - 1, 100, True)
    log.close()
    again = open_log(tmp_path, log_start_offset=inside)   # the checkpointed log start
    assert again.log_start_offset == inside
    again.close()


def test_deleted_segments_stay_readable_until_file_delete_delay(tmp_path):
    log = open_log(tmp_path, SegmentConfig(segment_bytes=1000, file_delete_delay_ms=60_000))
    fill(log, 30)
    region = log.read(0, 1 << 20, True).records
    expected = as_bytes(region)
    log.delete_records_before(log.segments()[2].base_offset)
    assert names(log, ".log.deleted")          # renamed, not removed
    assert region.read_bytes() == expected     # an in-flight send still reads it
    log.close()                                # shutdown runs the pending deletion
    assert not names(log, ".deleted")


# -- producer state ----------------------------------------------------------------------------

def idempotent(pid: int, seq: int, count: int = 2, epoch: int = 0) -> bytearray:
    return bytearray(build_batch([(None, b"v", (), 1000)] * count, producer_id=pid,
                                 producer_epoch=epoch, base_sequence=seq))


def produce(log: UnifiedLog, pid: int, seq: int, count: int = 2):
    """What the ReplicaManager does under the partition lock: check, append, record."""
    duplicate = log.producer_state.check(pid, 0, seq, count)
    if duplicate is not None:
        return duplicate.first_offset
    r = log.append(idempotent(pid, seq, count), count, 1000)
    log.producer_state.record(pid, 0, seq, count, r.base_offset, r.last_offset, 1000)
    return r.base_offset


@pytest.mark.parametrize("clean", [True, False])
def test_producer_state_survives_a_restart(tmp_path, clean):
    log = open_log(tmp_path)
    for seq in range(0, 40, 2):
        produce(log, 7, seq)
    produce(log, 8, 0)
    end = log.log_end_offset
    if clean:
        log.close()
    else:
        log.local.close()   # a crash: state rebuilt from the roll snapshots and the log
    again = open_log(tmp_path, recovery_point=end if clean else 0, had_clean_shutdown=clean)
    assert again.log_end_offset == end
    assert produce(again, 7, 38) == end - 4          # the last batch: a duplicate
    assert produce(again, 7, 40) == end              # the next sequence is accepted
    with pytest.raises(SequenceError):
        produce(again, 8, 5)                         # a gap is still refused
    again.close()


def test_a_corrupt_snapshot_is_ignored_and_state_rebuilt_from_the_log(tmp_path, caplog):
    log = open_log(tmp_path)
    for seq in range(0, 40, 2):
        produce(log, 7, seq)
    end = log.log_end_offset
    log.close()
    last = sorted(n for n in os.listdir(log.directory) if n.endswith(".snapshot"))[-1]
    with open(os.path.join(log.directory, last), "r+b") as fh:
        fh.seek(10)
        fh.write(b"\xff")
    with caplog.at_level(logging.WARNING):
        again = open_log(tmp_path, recovery_point=end)
    assert "Failed to load producer snapshot" in caplog.text
    assert produce(again, 7, 40) == end
    again.close()


def test_snapshot_format_is_kafkas_version_1_with_crc(tmp_path):
    log = open_log(tmp_path)
    produce(log, 7, 0)
    log.close()
    path = os.path.join(log.directory, f"{2:020d}.snapshot")
    with open(path, "rb") as fh:
        raw = fh.read()
    version, crc, count = struct.unpack_from(">hIi", raw)
    assert (version, count, len(raw)) == (1, 1, 2 + 4 + 4 + 46)
    from kafka_net.protocol.records.framing import _crc32c
    assert crc == _crc32c(memoryview(raw)[6:])
    pid, epoch, last_seq, last_offset, delta, ts, coordinator_epoch, txn_first = \
        struct.unpack_from(">qhiqiqiq", raw, 10)
    assert (pid, epoch, last_seq, last_offset, delta, ts, txn_first) == (7, 0, 1, 1, 1, 1000, -1)


def test_a_batch_whose_offsets_go_backwards_is_cut(tmp_path, caplog):
    size = len(batch_of(0))

    def rewind(path, data):
        with open(path, "r+b") as fh:
            fh.seek(4 * size)              # the 5th batch claims offset 2 again
            fh.write(struct.pack(">q", 2))

    data, _ = crash_and_damage(tmp_path, rewind)
    with caplog.at_level(logging.WARNING):
        log = open_log(tmp_path, had_clean_shutdown=False)
    assert log.log_end_offset == 8 and read_all(log) == data[:4 * size]
    assert "out of order offsets" in caplog.text
    log.close()


def test_replace_segments_is_completed_or_undone_by_the_next_load(tmp_path):
    """The cleaner's swap (LocalLog.replace_segments): a crash after the .swap
    rename is completed at load; leftover .cleaned and .deleted files are removed."""
    log = open_log(tmp_path)
    fill(log, 30)
    old = log.segments()[:2]
    cleaned = log.new_cleaned_segment(old[0].base_offset)
    assert cleaned.log.path.endswith(".log.cleaned")
    for segment in old:
        for batch in segment.batches():
            data = segment.read_batch(batch)
            if batch.base_offset % 4 == 0:      # the cleaner keeps every other batch
                cleaned.append(batch.last_offset, batch.max_timestamp, batch.base_offset, data)
    expected = [b for s in old for b in base_offsets(b"".join(
        s.read_batch(x) for x in s.batches())) if b % 4 == 0]
    log.replace_segments([cleaned], old)
    assert [s.base_offset for s in log.segments()][0] == old[0].base_offset
    assert base_offsets(read_all(log))[:len(expected)] == expected
    log.close()
    # a crash in the middle of another swap: a .swap and a .cleaned file left behind
    again = open_log(tmp_path)
    first = again.segments()[0]
    swap = first.log.path + ".swap"
    with open(swap, "wb") as fh:
        fh.write(first.log.read(0, first.size))
    with open(first.log.path[:-4] + ".index.cleaned", "wb") as fh:
        fh.write(b"junk")
    again.close()
    third = open_log(tmp_path)
    assert not [n for n in os.listdir(third.directory)
                if n.endswith((".swap", ".cleaned", ".deleted"))]
    assert base_offsets(read_all(third))[:len(expected)] == expected
    third.close()


def test_a_segment_rolls_before_offsets_outgrow_the_int32_index_entries(tmp_path):
    log = open_log(tmp_path, SegmentConfig(index_interval_bytes=0))
    log.append(batch_of(0), 2**31 - 10, 1000)      # offsets [0, 2**31 - 11]
    log.append(batch_of(1), 2, 1001)               # still fits: last relative 2**31 - 9
    log.append(batch_of(2), 2**4, 1002)            # would pass Int.MaxValue: rolls
    assert [s.base_offset for s in log.segments()] == [0, 2**31 - 8]
    log.close()


def test_a_partial_batch_found_after_a_clean_stop_is_cut_before_appending(tmp_path, caplog):
    log = open_log(tmp_path, SegmentConfig())
    fill(log, 5)
    data = read_all(log)
    log.close()
    with open(log.segments()[-1].log.path, "ab") as fh:
        fh.write(b"\x00" * 30)                      # junk written after the clean stop
    with caplog.at_level(logging.WARNING):
        again = open_log(tmp_path, SegmentConfig(), recovery_point=10)
    assert "ends with 30 bytes that are not a whole batch" in caplog.text
    again.append(batch_of(9), 2, 2000)
    assert read_all(again)[:len(data)] == data and again.log_end_offset == 12
    assert base_offsets(read_all(again)) == [0, 2, 4, 6, 8, 10]
    again.close()


def test_segment_jitter_makes_a_segment_roll_up_to_that_much_earlier(tmp_path):
    config = SegmentConfig(segment_ms=1000, segment_jitter_ms=500)
    log = open_log(tmp_path, config)
    log.append(batch_of(0, timestamp=10_000), 2, 10_000)
    jitter = log.segments()[0].roll_jitter_ms
    assert 0 <= jitter < 500
    log.append(batch_of(1, timestamp=10_000 + 1000 - jitter), 2, 10_000 + 1000 - jitter)
    assert len(log.segments()) == 1                       # not past segment.ms - jitter
    log.append(batch_of(2, timestamp=10_001 + 1000 - jitter), 2, 10_001 + 1000 - jitter)
    assert len(log.segments()) == 2
    log.close()
