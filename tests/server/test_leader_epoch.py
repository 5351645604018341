"""LeaderEpochCache: the cases of Kafka's LeaderEpochFileCacheTest that apply to one leader."""

from __future__ import annotations

import pytest

from kafka_net.server.storage import InMemoryLog
from kafka_net.server.storage.leader_epoch import LeaderEpochCache
from tests.server.conftest import batch


def test_latest_epoch_gets_the_log_end_offset():
    cache = LeaderEpochCache([(2, 6)])
    assert cache.end_offset_for(2, 11) == (2, 11)


def test_undefined_epoch_and_an_empty_cache_answer_undefined():
    assert LeaderEpochCache().end_offset_for(0, 5) == (-1, -1)
    assert LeaderEpochCache([(0, 0)]).end_offset_for(-1, 5) == (-1, -1)


def test_an_older_epoch_ends_where_the_next_one_starts():
    cache = LeaderEpochCache([(0, 0), (2, 6), (5, 10)])
    assert cache.end_offset_for(0, 20) == (0, 6)
    assert cache.end_offset_for(2, 20) == (2, 10)
    # an epoch that never appended: the largest epoch below it, and the next start
    assert cache.end_offset_for(3, 20) == (2, 10)
    assert cache.end_offset_for(5, 20) == (5, 20)


def test_an_epoch_above_every_entry_is_undefined():
    assert LeaderEpochCache([(0, 0), (2, 6)]).end_offset_for(3, 20) == (-1, -1)


def test_an_epoch_below_every_entry_ends_at_the_first_start():
    assert LeaderEpochCache([(3, 7), (5, 9)]).end_offset_for(1, 20) == (1, 7)


def test_assign_keeps_the_cache_monotonic():
    cache = LeaderEpochCache()
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)          # same epoch, later offset: nothing to record
    assert cache.assign(1, 5)
    assert cache.assign(3, 4)              # a lower start offset drops the later entry
    assert cache.entries() == [(0, 0), (3, 4)]
    assert cache.assign(2, 8)              # a lower epoch drops the higher ones
    assert cache.entries() == [(0, 0), (2, 8)]
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


def test_truncate_from_start_keeps_the_epoch_of_the_new_start():
    cache = LeaderEpochCache([(0, 0), (1, 5), (2, 10)])
    cache.truncate_from_start(7)
    assert cache.entries() == [(1, 7), (2, 10)]
    cache.truncate_from_start(10)
    assert cache.entries() == [(2, 10)]
    cache.truncate_from_start(3)           # before the first entry: nothing changes
    assert cache.entries() == [(2, 10)]


def test_truncate_from_end_and_epoch_for_offset():
    cache = LeaderEpochCache([(0, 0), (1, 5), (2, 10)])
    assert [cache.epoch_for_offset(o) for o in (0, 4, 5, 12)] == [0, 0, 1, 2]
    cache.truncate_from_end(5)
    assert cache.entries() == [(0, 0)] and cache.latest_epoch == 0


def test_entries_round_trip_as_a_checkpoint_would():
    cache = LeaderEpochCache([(0, 0), (4, 12)])
    assert LeaderEpochCache(cache.entries()).entries() == [(0, 0), (4, 12)]


def test_the_log_stamps_and_records_each_appended_epoch():
    log = InMemoryLog()
    one = batch([b"a", b"b"])
    log.append(one, 2, -1, leader_epoch=0)
    log.append(batch([b"c"]), 1, -1, leader_epoch=3)
    assert log.leader_epoch_cache.entries() == [(0, 0), (3, 2)]
    stored = log.read(0, 1 << 20, True).records
    assert stored[12:16] == bytes(4)                         # epoch 0 in the first batch
    assert stored[len(one) + 12:len(one) + 16] == (3).to_bytes(4, "big")
    assert log.size_in_bytes == len(stored)
    log.delete_records_before(2)
    assert log.leader_epoch_cache.entries() == [(3, 2)]
    assert log.size_in_bytes == len(stored) - len(one)


def test_make_leader_never_rewrites_a_newer_history():
    """A replayed PartitionRecord (epoch 0) over a durable log whose checkpoint
    already holds epochs 0 and 2 must leave that history alone."""
    import uuid
    from kafka_net.server.replica_manager import Partition
    log = InMemoryLog()
    log.append(batch([b"a"]), 1, -1, leader_epoch=0)
    log.append(batch([b"b"]), 1, -1, leader_epoch=2)
    partition = Partition("t", 0, uuid.uuid4(), log)
    partition.make_leader(0)
    partition.make_leader(2)
    assert log.leader_epoch_cache.entries() == [(0, 0), (2, 1)]
    partition.make_leader(4)
    assert log.leader_epoch_cache.entries() == [(0, 0), (2, 1), (4, 2)]
    assert partition.leader_epoch == 4


def test_the_checkpoint_format_is_kafkas():
    from kafka_net.server.storage.leader_epoch import checkpoint_text, parse_checkpoint
    text = checkpoint_text([(0, 0), (3, 17)])
    assert text == "0\n2\n0 0\n3 17\n"
    assert parse_checkpoint(text) == [(0, 0), (3, 17)]
    assert parse_checkpoint(checkpoint_text([])) == []
    for bad in ("1\n0\n", "0\n2\n0 0\n", ""):
        with pytest.raises(ValueError):
            parse_checkpoint(bad)
