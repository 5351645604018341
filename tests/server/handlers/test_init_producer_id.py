"""InitProducerId (API key 22) through KafkaApis with real encoding."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import versions


@pytest.mark.parametrize("version", versions(ApiKey.INIT_PRODUCER_ID))
def test_init_producer_id_gives_a_new_id_each_time(broker, version):
    first = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=None)
    second = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=None,
                         producer_id=first["producer_id"], producer_epoch=0)
    for body in (first, second):
        assert body["error_code"] == ErrorCode.NONE and body["producer_epoch"] == 0
        assert body["producer_id"] >= 0
    assert second["producer_id"] != first["producer_id"]


@pytest.mark.parametrize("version", versions(ApiKey.INIT_PRODUCER_ID))
def test_init_producer_id_with_a_transactional_id(broker, version):
    body = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id="tx-1")
    assert body["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (body["producer_id"], body["producer_epoch"]) == (-1, -1)
