"""EndTxn (API key 26) through KafkaApis: markers, the LSO, retries and errors."""

from __future__ import annotations

import struct

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import decode_records, iter_batches, read_header
from tests.server.conftest import versions
from tests.server.txn_support import begin, end_txn, fetch_partition, init, produce_txn

# The classic protocol (transaction version 0/1); v5 is in test_end_txn_v2.py.
VERSIONS = [v for v in versions(ApiKey.END_TXN) if v < 5]


@pytest.fixture
def open_txn(broker):
    broker.create_topic("t")
    pid, epoch = begin(broker)
    assert produce_txn(broker, pid, epoch, 0, b"a", b"b")["error_code"] == 0
    return broker, pid, epoch


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("commit", [True, False])
def test_end_writes_a_control_batch_and_moves_the_lso(open_txn, version, commit):
    broker, pid, epoch = open_txn
    assert fetch_partition(broker)["last_stable_offset"] == 0
    assert end_txn(broker, "tx", pid, epoch, commit, version) == ErrorCode.NONE
    p = fetch_partition(broker)
    assert (p["high_watermark"], p["last_stable_offset"]) == (3, 3)
    marker = list(iter_batches(p["records"]))[-1]
    header = read_header(marker)
    assert (header.base_offset, header.is_control, header.is_transactional) == (2, True, True)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (pid, epoch, -1)
    [record] = decode_records(marker)
    assert struct.unpack(">hh", record.key) == (0, 1 if commit else 0)   # version, type
    assert struct.unpack(">hi", record.value) == (0, 0)                  # version, coord epoch
    md = broker.transaction_coordinator.describe("tx")
    assert md.state.value == ("CompleteCommit" if commit else "CompleteAbort")
    assert md.topic_partitions == set()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_retry_is_answered_and_the_other_outcome_refused(open_txn, version):
    broker, pid, epoch = open_txn
    assert end_txn(broker, "tx", pid, epoch, True, version) == ErrorCode.NONE
    assert end_txn(broker, "tx", pid, epoch, True, version) == ErrorCode.NONE
    assert end_txn(broker, "tx", pid, epoch, False, version) == ErrorCode.INVALID_TXN_STATE
    assert fetch_partition(broker)["high_watermark"] == 3   # one marker only


@pytest.mark.parametrize("version", VERSIONS)
def test_no_transaction_is_invalid_txn_state(broker, version):
    pid, epoch = init(broker)
    assert end_txn(broker, "tx", pid, epoch, True, version) == ErrorCode.INVALID_TXN_STATE


@pytest.mark.parametrize("version", VERSIONS)
def test_producer_errors(open_txn, version):
    broker, pid, epoch = open_txn
    assert end_txn(broker, "ghost", pid, epoch, True, version) == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert end_txn(broker, "tx", pid + 7, epoch, True, version) == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert end_txn(broker, "tx", pid, epoch + 1, True, version) == (
        ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH)


@pytest.mark.parametrize("version", VERSIONS)
def test_concurrent_end_is_concurrent_transactions(open_txn, version):
    broker, pid, epoch = open_txn
    md = broker.transaction_coordinator.state.get("tx")
    md.state = md.state.PREPARE_COMMIT   # another EndTxn is writing its markers
    assert end_txn(broker, "tx", pid, epoch, True, version) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert end_txn(broker, "tx", pid, epoch, False, version) == ErrorCode.INVALID_TXN_STATE
