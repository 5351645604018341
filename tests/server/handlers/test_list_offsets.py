"""ListOffsets (API key 2) through KafkaApis with real encoding: earliest,
latest, max-timestamp and by-timestamp lookups."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from tests.server.conftest import produce, versions


def list_offsets(broker, version, *specs):
    body = broker.call(ApiKey.LIST_OFFSETS, version, topics=[{"name": "t", "partitions": [
        {"partition_index": p, "timestamp": ts} for p, ts in specs]}])
    return [(p["error_code"], p["offset"], p["timestamp"])
            for p in body["topics"][0]["partitions"]]


@pytest.mark.parametrize("version", versions(ApiKey.LIST_OFFSETS))
def test_list_offsets_earliest_latest_and_by_timestamp(broker, version):
    broker.create_topic("t")
    produce(broker, records=build_batch([(None, b"a", (), 1000), (None, b"b", (), 1000)]))
    produce(broker, records=build_batch([(None, b"c", (), 3000)]))         # 2
    produce(broker, records=build_batch([(None, b"d", (), 2000)]))         # 3
    got = list_offsets(broker, version, (0, -1), (0, -2), (0, 1500), (0, 1000), (0, 9999),
                       (5, -1))
    assert got == [(0, 4, -1), (0, 0, -1), (0, 2, 3000), (0, 0, 1000), (0, -1, -1),
                   (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]
    if version >= 7:
        assert list_offsets(broker, version, (0, -3)) == [(0, 2, 3000)]


def test_list_offsets_on_an_empty_partition(broker):
    broker.create_topic("t")
    assert list_offsets(broker, 9, (0, -1), (0, -2), (0, -3), (0, -4), (0, -5), (0, 0)) == [
        (0, 0, -1), (0, 0, -1), (0, -1, -1), (0, 0, -1), (0, -1, -1), (0, -1, -1)]
