"""Produce with transactional batches: only for partitions of the ongoing
transaction, only from the current epoch; the first batch holds the LSO back."""

from __future__ import annotations

import pytest

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.txn_support import (
    begin, end_txn, fetch_partition, init, produce_txn)


@pytest.fixture
def topic(broker):
    broker.create_topic("t", 2)
    return broker


def test_a_partition_in_the_transaction_accepts_transactional_batches(topic):
    pid, epoch = begin(topic)
    answer = produce_txn(topic, pid, epoch, 0, b"a", b"b")
    assert (answer["error_code"], answer["base_offset"]) == (ErrorCode.NONE, 0)
    assert produce_txn(topic, pid, epoch, 2, b"c")["base_offset"] == 2


def test_a_partition_not_added_is_invalid_txn_state(topic):
    pid, epoch = begin(topic)
    answer = produce_txn(topic, pid, epoch, 0, b"a", partition=1)
    assert answer["error_code"] == ErrorCode.INVALID_TXN_STATE
    assert answer["error_message"] == "Partition was not added to the transaction"
    assert fetch_partition(topic)["high_watermark"] == 0


def test_no_open_transaction_is_invalid_txn_state(topic):
    pid, epoch = init(topic)
    assert produce_txn(topic, pid, epoch, 0, b"a")["error_code"] == ErrorCode.INVALID_TXN_STATE
    # A producer id no transactional id owns.
    assert produce_txn(topic, 4242, 0, 0, b"a")["error_code"] == ErrorCode.INVALID_TXN_STATE


def test_a_fenced_epoch_is_refused(topic):
    pid, epoch = begin(topic)
    assert produce_txn(topic, pid, epoch, 0, b"a")["error_code"] == ErrorCode.NONE
    assert end_txn(topic, "tx", pid, epoch, True) == ErrorCode.NONE
    _, new_epoch = begin(topic)          # a new instance: epoch + 1, partition added
    answer = produce_txn(topic, pid, epoch, 1, b"zombie")
    assert answer["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert produce_txn(topic, pid, new_epoch, 0, b"new")["error_code"] == ErrorCode.NONE


def test_the_first_transactional_batch_holds_the_last_stable_offset(topic):
    from tests.server.conftest import produce
    produce(topic)                       # offset 0, not transactional
    pid, epoch = begin(topic)
    produce_txn(topic, pid, epoch, 0, b"a")          # offset 1
    produce(topic)                       # offset 2: after the open transaction's start
    p = fetch_partition(topic)
    assert (p["high_watermark"], p["last_stable_offset"]) == (3, 1)
    end_txn(topic, "tx", pid, epoch, True)           # marker at 3
    p = fetch_partition(topic)
    assert (p["high_watermark"], p["last_stable_offset"]) == (4, 4)
