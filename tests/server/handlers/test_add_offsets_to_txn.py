"""AddOffsetsToTxn (API key 25) through KafkaApis with real encoding."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import versions
from tests.server.txn_support import add_offsets, init

VERSIONS = versions(ApiKey.ADD_OFFSETS_TO_TXN)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_group_joins_the_transaction(broker, version):
    pid, epoch = init(broker)
    assert add_offsets(broker, "tx", pid, epoch, "g", version) == ErrorCode.NONE
    md = broker.transaction_coordinator.describe("tx")
    assert md.state.value == "Ongoing" and md.groups == {"g"}


@pytest.mark.parametrize("version", VERSIONS)
def test_errors(broker, version):
    pid, epoch = init(broker)
    assert add_offsets(broker, "tx", pid, epoch, "", version) == ErrorCode.INVALID_GROUP_ID
    assert add_offsets(broker, "ghost", pid, epoch, "g", version) == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    init(broker)
    assert add_offsets(broker, "tx", pid, epoch, "g", version) == (
        ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH)
