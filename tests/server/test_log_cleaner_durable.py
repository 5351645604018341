"""Cleaning the durable log: cleaned segments on disk, reopened, and crashes mid-swap.

The cleaner writes each group of segments to one ``.cleaned`` segment and
swaps it in (``.cleaned`` -> ``.swap``, the old ones ``.deleted``, ``.swap``
-> final name).  A broker that dies in between finds, on its next start,
either the old segments (a ``.cleaned`` left: removed) or the new one (a
``.swap`` left: completed, and the old segments it covers deleted, as
Kafka's LogLoader does).
"""

from __future__ import annotations

import os
import uuid

import pytest

from kafka_net.protocol.records import build_batch, decode_records, read_header, split_batches
from kafka_net.server.log_cleaner import LogCleaner
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.storage import segment as segment_module
from kafka_net.server.storage.unified_log import UnifiedLog
from kafka_net.server.transaction.markers import build_marker_batch
from tests.server.storage_support import as_bytes

TOPIC = "table"
T0 = 1_700_000_000_000


class Broker:
    """A ReplicaManager on UnifiedLogs in ``folder``, and its LogCleaner."""

    def __init__(self, folder, clean_shutdown: bool = True) -> None:
        self.folder = folder
        self.rm = ReplicaManager()
        self.rm.clock_ms = lambda: T0
        self.rm.config_repository.set_topic_config(TOPIC, {
            "cleanup.policy": ["compact"], "internal.segment.bytes": 300, "segment.ms": 1000,
            "min.cleanable.dirty.ratio": 0.0, "file.delete.delay.ms": 0})
        self.logs = []

        def durable(topic, index, topic_id):
            opened = UnifiedLog(
                os.path.join(folder, f"{topic}-{index}"),
                lambda: self.rm.config_repository.log_config(topic).segment,
                topic_id=topic_id, had_clean_shutdown=clean_shutdown,
                clock_ms=self.rm.clock_ms)
            self.logs.append(opened)
            return opened
        self.rm.log_factory = durable
        self.rm.ensure_partitions(TOPIC, uuid.uuid4(), 1)
        self.cleaner = LogCleaner(self.rm)

    @property
    def log(self) -> UnifiedLog:
        return self.rm.partition(TOPIC, 0).log

    def write(self, key: bytes, value, timestamp: int = T0, **kw) -> int:
        result = self.rm.append_records(
            TOPIC, 0, build_batch([(key, value, (), timestamp)], **kw), 9)
        assert result.error_code == 0, result
        return result.base_offset

    def records(self, isolation_level: int = 0) -> list[tuple]:
        position, out = self.log.log_start_offset, []
        for _ in range(10_000):
            error, result = self.rm.read(TOPIC, 0, position, 1 << 30, True, isolation_level)
            assert error == 0
            batches = split_batches(as_bytes(result.records))
            if not batches:
                return out
            out += [(r.offset, r.key, r.value) for b in batches for r in decode_records(b)]
            position = read_header(batches[-1]).next_offset
        return out

    def close(self) -> None:
        for opened in self.logs:
            opened.close()


def fill(broker: Broker) -> dict:
    """Ten rounds over five keys, a tombstone, then a batch far in time (a new
    active segment); the latest record of each key."""
    latest = {}
    for round_ in range(10):
        for n in range(5):
            key = b"k%d" % n
            latest[key] = (broker.write(key, b"v%d" % round_), key, b"v%d" % round_)
    latest[b"k0"] = (broker.write(b"k0", None), b"k0", None)
    broker.write(b"~roll", b"", timestamp=T0 + 10_000)
    return latest


def leftovers(folder, suffixes=(".cleaned", ".swap", ".deleted")) -> list[str]:
    """Temporary files in the partition's folder (``.deleted`` ones go in the
    background, file.delete.delay.ms after a swap)."""
    return [n for n in os.listdir(os.path.join(folder, f"{TOPIC}-0")) if n.endswith(suffixes)]


def test_cleaned_segments_are_on_disk_and_survive_a_restart(tmp_path):
    broker = Broker(str(tmp_path))
    latest = fill(broker)
    before = len(broker.log.segment_infos())
    assert broker.cleaner.try_clean_filthiest_log()
    expected = sorted(latest.values())
    assert [r for r in broker.records() if r[1] != b"~roll"] == expected
    assert leftovers(tmp_path, (".cleaned", ".swap")) == []
    # the next round groups the segments the first one emptied (by their new sizes)
    broker.write(b"~roll", b"", timestamp=T0 + 20_000)
    assert broker.cleaner.try_clean_filthiest_log()
    assert len(broker.log.segment_infos()) < before
    assert [r for r in broker.records() if r[1] != b"~roll"] == expected
    broker.close()
    again = Broker(str(tmp_path))
    assert [r for r in again.records() if r[1] != b"~roll"] == expected
    again.close()


def test_aborted_transactions_stay_in_the_cleaned_segments_txnindex(tmp_path):
    broker = Broker(str(tmp_path))
    broker.write(b"k", b"before")
    broker.write(b"k", b"aborted", producer_id=8, producer_epoch=0, base_sequence=0,
                 transactional=True)
    broker.rm.append_txn_marker(TOPIC, 0, build_marker_batch(8, 0, False, T0), 8, 0, False)
    broker.write(b"j", b"after")
    broker.write(b"~roll", b"", timestamp=T0 + 10_000)
    assert broker.cleaner.try_clean_filthiest_log()
    # the aborted batch is the producer's last: kept, empty; so its marker stays, and
    # with it the aborted transaction in the cleaned segment's .txnindex
    assert broker.rm.read(TOPIC, 0, 0, 1 << 20, True, 1)[1].aborted_transactions == [(8, 1)]
    broker.close()
    again = Broker(str(tmp_path))
    assert again.rm.read(TOPIC, 0, 0, 1 << 20, True, 1)[1].aborted_transactions == [(8, 1)]
    assert [(k, v) for _, k, v in again.records(1) if k in (b"k", b"j")] == [
        (b"k", b"before"), (b"j", b"after")]
    again.close()


def _crash_at(monkeypatch, suffix: str) -> None:
    """Make the swap stop at the first rename to ``suffix`` and leave every file as
    it is then, as a broker killed there would (no cleanup runs)."""
    original = segment_module.LogSegment.change_suffix

    def change_suffix(self, old, new):
        if new == suffix:
            raise SystemExit("killed")
        return original(self, old, new)
    monkeypatch.setattr(segment_module.LogSegment, "change_suffix", change_suffix)
    monkeypatch.setattr(segment_module.LogSegment, "delete_files", lambda self: None)


@pytest.mark.parametrize("cleaned_before", [False, True])
@pytest.mark.parametrize("killed_at, swapped", [(".swap", False), (".deleted", True)])
def test_a_crash_mid_swap_is_rolled_back_or_completed(tmp_path, monkeypatch, caplog, killed_at,
                                                      swapped, cleaned_before):
    caplog.set_level("INFO", logger="kafka_net.server.storage.log")
    broker = Broker(str(tmp_path))
    latest = fill(broker)
    if cleaned_before:
        # a first cleaning empties most segments: the next groups several into one,
        # so a completed swap must delete old segments other than its own base's
        assert broker.cleaner.try_clean_filthiest_log()
        broker.write(b"~roll", b"", timestamp=T0 + 20_000)
        groups = [s for s in broker.log.segment_infos()[:-1] if s.size < 150]
        assert len(groups) > 2
    original = broker.records()
    with monkeypatch.context() as patch:
        _crash_at(patch, killed_at)
        with pytest.raises(SystemExit):
            broker.cleaner.try_clean_filthiest_log()
    # the killed broker's background thread dies with it: a delete-file job of the
    # first cleaning still pending (or running, joined here) must not race the load
    for opened in broker.logs:
        opened.scheduler.shutdown(run_pending=False)
    names = leftovers(tmp_path)
    assert any(n.endswith(".swap" if swapped else ".cleaned") for n in names)
    # no clean shutdown: the next start loads what the files say
    again = Broker(str(tmp_path), clean_shutdown=False)
    assert leftovers(tmp_path) == []
    got = again.records()
    offsets = [offset for offset, _, _ in got]
    assert offsets == sorted(set(offsets))                  # no segment twice
    if swapped:   # the first group's cleaned segment is in, the old ones it covered gone
        assert set(got) <= set(original)
        if cleaned_before:
            assert "that is compacted but has not been deleted yet" in caplog.text
        else:
            assert got[0][0] > 0
    else:
        assert got == original
    # and the log cleans on from there to the same result
    assert again.cleaner.try_clean_filthiest_log()
    assert [r for r in again.records() if r[1] != b"~roll"] == sorted(latest.values())
    again.close()
    broker.close()


def test_segments_deleted_during_a_cleaning_abort_it_and_the_next_round_goes_on(
        tmp_path, monkeypatch, caplog):
    broker = Broker(str(tmp_path))
    latest = fill(broker)
    original = UnifiedLog._write_cleaned
    calls = []

    def deleting_first(segment, cleaned):
        calls.append(segment)
        if len(calls) == 1:     # DeleteRecords lands while the first group is written
            broker.log.delete_records_before(8)
        return original(segment, cleaned)
    monkeypatch.setattr(UnifiedLog, "_write_cleaned", staticmethod(deleting_first))
    caplog.set_level("INFO", logger="kafka_net.server.storage.log_cleaner")
    assert not broker.cleaner.try_clean_filthiest_log()
    assert "Cleaning of log table-0 aborted" in caplog.text
    assert not broker.cleaner.manager.is_uncleanable(broker.rm.partition(TOPIC, 0))
    assert leftovers(tmp_path, (".cleaned", ".swap")) == []
    assert broker.cleaner.try_clean_filthiest_log()
    assert [r for r in broker.records() if r[1] != b"~roll"] == sorted(
        v for v in latest.values() if v[0] >= 8)
    broker.close()


def test_the_cleaner_checkpoint_is_kept_in_its_log_dir_across_a_restart(tmp_path):
    broker = Broker(str(tmp_path))
    fill(broker)
    assert broker.cleaner.try_clean_filthiest_log()
    partition = broker.rm.partition(TOPIC, 0)
    end = broker.cleaner.manager.all_cleaner_checkpoints()[
        (TOPIC, 0, partition.topic_id)]
    with open(tmp_path / "cleaner-offset-checkpoint") as fh:
        assert fh.read().splitlines() == ["0", "1", f"{TOPIC} 0 {end}"]
    broker.close()
    again = Broker(str(tmp_path))
    config = again.rm.config_repository.log_config(TOPIC)
    ltc = again.cleaner.manager._log_to_clean(again.rm.partition(TOPIC, 0), config, T0)
    assert ltc.first_dirty_offset == end          # not the log start: the file was read
    assert not again.cleaner.try_clean_filthiest_log()     # nothing dirty since
    again.close()


def test_a_segments_repr_holds_when_its_file_is_closed_under_it(tmp_path):
    """The cleaner names a segment deleted while it read it; retention's thread may
    be between closing the file and forgetting its descriptor.  The repr (log
    lines, the abort's message) must not fail there: it once raised EBADF, and the
    cleaner marked the partition uncleanable for good."""
    broker = Broker(str(tmp_path))
    fill(broker)
    segment = broker.log.local.segments[0]
    assert f"baseOffset={segment.base_offset}" in repr(segment)
    os.close(segment.log.fd)            # closed, its number not yet dropped
    try:
        assert "lastModifiedTime=-1" in repr(segment)
    finally:
        segment.log.fd = -1
        broker.close()
