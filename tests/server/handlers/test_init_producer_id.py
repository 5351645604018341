"""InitProducerId (API key 22) through KafkaApis with real encoding."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import Broker, versions

VERSIONS = versions(ApiKey.INIT_PRODUCER_ID)


def init(broker, version, txn_id="tx-1", timeout_ms=60_000, **kw):
    body = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=txn_id,
                       transaction_timeout_ms=timeout_ms, **kw)
    return body["error_code"], body["producer_id"], body["producer_epoch"]


@pytest.mark.parametrize("version", VERSIONS)
def test_init_producer_id_gives_a_new_id_each_time(broker, version):
    first = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=None)
    second = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=None,
                         producer_id=first["producer_id"], producer_epoch=0)
    for body in (first, second):
        assert body["error_code"] == ErrorCode.NONE and body["producer_epoch"] == 0
        assert body["producer_id"] >= 0
    assert second["producer_id"] != first["producer_id"]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_transactional_id_keeps_its_producer_id_and_bumps_the_epoch(broker, version):
    error, pid, epoch = init(broker, version)
    assert (error, epoch) == (ErrorCode.NONE, 0) and pid >= 0
    assert init(broker, version) == (ErrorCode.NONE, pid, 1)
    assert init(broker, version) == (ErrorCode.NONE, pid, 2)
    other = init(broker, version, txn_id="tx-2")
    assert other[0] == ErrorCode.NONE and other[1] != pid


@pytest.mark.parametrize("version", VERSIONS)
def test_reinit_fences_the_old_producer(broker, version):
    broker.create_topic("t")
    _, pid, epoch = init(broker, version)
    init(broker, version)   # a second instance: epoch + 1
    body = broker.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id="tx-1",
                       producer_id=pid, producer_epoch=epoch, group_id="g")
    assert body["error_code"] == ErrorCode.PRODUCER_FENCED


@pytest.mark.parametrize("version", VERSIONS)
def test_reinit_aborts_an_ongoing_transaction(broker, version):
    broker.create_topic("t")
    _, pid, epoch = init(broker, version)
    coordinator = broker.transaction_coordinator
    assert coordinator.handle_add_partitions_to_transaction("tx-1", pid, epoch, {("t", 0)}) == 0
    # The open transaction is aborted with a fencing epoch; the client must retry.
    assert init(broker, version) == (ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)
    assert coordinator.describe("tx-1").state.value == "CompleteAbort"
    assert init(broker, version) == (ErrorCode.NONE, pid, epoch + 2)


@pytest.mark.parametrize("version", VERSIONS)
def test_transaction_timeout_is_checked_against_the_maximum(version):
    broker = Broker(dataclasses.replace(ServerConfig(log_store="memory"),
                                transaction_max_timeout_ms=5000))
    assert init(broker, version, timeout_ms=5001)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(broker, version, timeout_ms=0)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(broker, version, timeout_ms=5000)[0] == ErrorCode.NONE


@pytest.mark.parametrize("version", VERSIONS)
def test_an_empty_transactional_id_is_an_invalid_request(broker, version):
    assert init(broker, version, txn_id="") == (ErrorCode.INVALID_REQUEST, -1, -1)


@pytest.mark.parametrize("version", [3, 4, 5])
def test_resuming_with_another_producer_is_fenced(broker, version):
    """v3+ (KIP-360): a client resuming with a producer id that is not the
    transactional id's gets PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4)."""
    _, pid, epoch = init(broker, version)
    init(broker, version, txn_id="tx-2")
    error = init(broker, version, producer_id=pid + 1, producer_epoch=0)[0]
    assert error == (ErrorCode.PRODUCER_FENCED if version >= 4
                     else ErrorCode.INVALID_PRODUCER_EPOCH)
    # Resuming with the current id and epoch bumps the epoch.
    assert init(broker, version, producer_id=pid, producer_epoch=epoch) == (
        ErrorCode.NONE, pid, epoch + 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_concurrent_transactions_while_markers_are_written(broker, version):
    broker.create_topic("t")
    _, pid, epoch = init(broker, version)
    md = broker.transaction_coordinator.state.get("tx-1")
    md.state = md.state.PREPARE_COMMIT   # as while EndTxn writes its markers
    assert init(broker, version)[0] == ErrorCode.CONCURRENT_TRANSACTIONS
