"""ListOffsets LATEST with isolation_level=1 answers the last stable offset."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
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
