"""Fetch with isolation_level=1 (read_committed): up to the LSO, with the
aborted transactions of the range; control batches returned as stored."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from tests.server.conftest import Deferred, fetch, produce, versions
from tests.server.txn_support import (
    add_partitions, batches, begin, end_txn, fetch_partition, produce_txn)

READ_COMMITTED = 1


@pytest.fixture
def log(broker):
    """Offsets: 0 plain; 1-2 aborted (pid A), 3 ABORT marker; 4 committed (A), 5 COMMIT;
    6 open (A)."""
    broker.create_topic("t")
    produce(broker)
    pid, epoch = begin(broker)
    produce_txn(broker, pid, epoch, 0, b"x1", b"x2")
    end_txn(broker, "tx", pid, epoch, False)
    add_partitions(broker, "tx", pid, epoch, [("t", 0)])
    produce_txn(broker, pid, epoch, 2, b"c")
    end_txn(broker, "tx", pid, epoch, True)
    add_partitions(broker, "tx", pid, epoch, [("t", 0)])
    produce_txn(broker, pid, epoch, 3, b"open")
    broker.pid = pid
    return broker


def test_read_committed_stops_at_the_lso_and_lists_aborted_transactions(log):
    p = fetch_partition(log, isolation_level=READ_COMMITTED)
    assert (p["high_watermark"], p["last_stable_offset"]) == (7, 6)
    assert batches(p["records"]) == [
        (0, False, [b"v"]), (1, False, [b"x1", b"x2"]), (3, True, ["ABORT"]),
        (4, False, [b"c"]), (5, True, ["COMMIT"])]
    assert [(a["producer_id"], a["first_offset"]) for a in p["aborted_transactions"]] == [
        (log.pid, 1)]


def test_aborted_transactions_before_the_fetch_offset_are_left_out(log):
    p = fetch_partition(log, offset=4, isolation_level=READ_COMMITTED)
    assert p["aborted_transactions"] == []
    assert [b[0] for b in batches(p["records"])] == [4, 5]


def test_read_uncommitted_reads_everything(log):
    p = fetch_partition(log)
    assert p["last_stable_offset"] == 6 and p["aborted_transactions"] == []
    assert [b[0] for b in batches(p["records"])] == [0, 1, 3, 4, 5, 6]


@pytest.mark.parametrize("version", [v for v in versions(ApiKey.FETCH) if v < 13])
def test_every_version_reports_the_lso(log, version):
    p = fetch_partition(log, isolation_level=READ_COMMITTED, version=version)
    assert p["last_stable_offset"] == 6 and len(p["aborted_transactions"]) == 1


def test_a_long_poll_waits_for_the_lso_and_the_commit_completes_it(log):
    parked = fetch(log, partitions=[("t", 0, 6)], isolation_level=READ_COMMITTED,
                   max_wait_ms=60_000)
    assert isinstance(parked, Deferred) and not parked.done
    assert end_txn(log, "tx", log.pid, 0, True) == 0
    p = parked.body()["responses"][0]["partitions"][0]
    assert p["last_stable_offset"] == 8
    assert batches(p["records"]) == [(6, False, [b"open"]), (7, True, ["COMMIT"])]


def test_delete_records_forgets_aborted_transactions_below_the_log_start(log):
    body = log.call(ApiKey.DELETE_RECORDS, 2, timeout_ms=1000, topics=[
        {"name": "t", "partitions": [{"partition_index": 0, "offset": 4}]}])
    assert body["topics"][0]["partitions"][0]["low_watermark"] == 4
    p = fetch_partition(log, offset=4, isolation_level=READ_COMMITTED)
    assert p["aborted_transactions"] == []
    assert log.replica_manager.partition("t", 0).txns.aborted_between(0, 100) == []
