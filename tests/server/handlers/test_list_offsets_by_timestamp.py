"""ListOffsets (2) looks inside batches: per-record timestamps, MAX_TIMESTAMP, log start."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.records import Compression
from tests.server.handlers.conftest import (
    create_topic, incremental, list_offset, produce, records, versions)

T = [1_700_000_000_000 + 10 * i for i in range(10)]   # record i has timestamp T[i]


@pytest.fixture
def ten(broker):
    """Topic t: ten records, offsets 0-9, in ONE batch."""
    create_topic(broker)
    assert produce(broker, data=records(*T))["base_offset"] == 0
    return broker


@pytest.mark.parametrize("version", versions(ApiKey.LIST_OFFSETS))
def test_a_timestamp_inside_a_batch_finds_its_record(ten, version):
    assert list_offset(ten, T[5], version) == (0, 5, T[5])
    assert list_offset(ten, T[5] - 3, version) == (0, 5, T[5])
    assert list_offset(ten, T[0] - 1, version) == (0, 0, T[0])
    assert list_offset(ten, T[9], version) == (0, 9, T[9])
    assert list_offset(ten, T[9] + 1, version) == (0, -1, -1)


@pytest.mark.parametrize("version", versions(ApiKey.LIST_OFFSETS))
def test_special_timestamps(ten, version):
    assert list_offset(ten, -1, version) == (0, 10, -1)     # LATEST
    assert list_offset(ten, -2, version) == (0, 0, -1)      # EARLIEST
    assert list_offset(ten, -3, version) == (0, 9, T[9])    # MAX_TIMESTAMP (KIP-734)
    assert list_offset(ten, -4, version) == (0, 0, -1)      # EARLIEST_LOCAL
    assert list_offset(ten, -5, version) == (0, -1, -1)     # LATEST_TIERED: none


def test_max_timestamp_is_the_first_record_holding_it(broker):
    create_topic(broker)
    produce(broker, data=records(5, 9, 7))      # 0-2
    produce(broker, data=records(9, 1))         # 3-4: a tie with offset 1
    assert list_offset(broker, -3) == (0, 1, 9)


def test_timestamps_need_not_grow_across_batches(broker):
    create_topic(broker)
    produce(broker, data=records(100, 300))     # 0-1
    produce(broker, data=records(200, 250))     # 2-3
    # The first record in log order whose timestamp reaches the target.
    assert list_offset(broker, 150) == (0, 1, 300)
    assert list_offset(broker, 301) == (0, -1, -1)


def test_a_gzip_batch_is_looked_into(broker):
    create_topic(broker)
    produce(broker, data=records(*T, compression=Compression.GZIP))
    assert list_offset(broker, T[4] + 1) == (0, 5, T[5])
    assert list_offset(broker, -3) == (0, 9, T[9])


def test_log_append_time_batches_use_the_append_time(broker):
    create_topic(broker)
    assert incremental(broker, ("message.timestamp.type", 0, "LogAppendTime"))["error_code"] == 0
    broker.replica_manager.clock_ms = lambda: 5_000_000
    appended = produce(broker, data=records(1, 2, 3))
    assert appended["log_append_time_ms"] == 5_000_000
    assert list_offset(broker, 2) == (0, 0, 5_000_000)
    assert list_offset(broker, -3) == (0, 0, 5_000_000)
