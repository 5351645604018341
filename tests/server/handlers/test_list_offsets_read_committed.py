"""ListOffsets LATEST with isolation_level=1 answers the last stable offset."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.records import build_batch
from tests.server.conftest import produce, versions
from tests.server.txn_support import begin, end_txn, produce_txn

LATEST = -1


def latest(broker, version, isolation_level):
    body = broker.call(ApiKey.LIST_OFFSETS, version, isolation_level=isolation_level,
                       topics=[{"name": "t", "partitions": [
                           {"partition_index": 0, "timestamp": LATEST}]}])
    return body["topics"][0]["partitions"][0]["offset"]


@pytest.mark.parametrize("version", [v for v in versions(ApiKey.LIST_OFFSETS) if v >= 2])
def test_latest_read_committed_is_the_lso(broker, version):
    broker.create_topic("t")
    produce(broker)
    pid, epoch = begin(broker)
    produce_txn(broker, pid, epoch, 0, b"a", b"b")
    assert (latest(broker, version, 0), latest(broker, version, 1)) == (3, 1)
    end_txn(broker, "tx", pid, epoch, False)
    assert (latest(broker, version, 0), latest(broker, version, 1)) == (4, 4)


@pytest.mark.parametrize("version", [v for v in versions(ApiKey.LIST_OFFSETS) if v >= 7])
def test_timestamp_lookups_past_the_lso_find_nothing_for_read_committed(broker, version):
    """Kafka's ReplicaManager.fetchOffset: a record at or past the last fetchable
    offset is answered offset -1, timestamp -1."""
    broker.create_topic("t")
    produce(broker, records=build_batch([(None, b"old", (), 1000)]))         # offset 0
    pid, epoch = begin(broker)
    produce(broker, records=build_batch([(None, b"open", (), 2000)], producer_id=pid,
                                        producer_epoch=epoch, base_sequence=0,
                                        transactional=True))                 # offset 1

    def lookup(timestamp, isolation_level):
        body = broker.call(ApiKey.LIST_OFFSETS, version, isolation_level=isolation_level,
                           topics=[{"name": "t", "partitions": [
                               {"partition_index": 0, "timestamp": timestamp}]}])
        p = body["topics"][0]["partitions"][0]
        return p["offset"], p["timestamp"]

    assert lookup(1000, 1)[0] == 0            # before the LSO: found
    assert lookup(1001, 0)[0] == 1            # the open transaction's record
    assert lookup(1001, 1) == (-1, -1)        # at the LSO: not for read_committed
    assert lookup(-3, 0)[0] == 1              # MAX_TIMESTAMP
    assert lookup(-3, 1) == (-1, -1)
    end_txn(broker, "tx", pid, epoch, True)
    assert lookup(1001, 1)[0] == 1
