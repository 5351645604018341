"""Helpers for the transaction tests (API-layer and coordinator): open a
transaction through the wire, build transactional batches, read a partition's
log with its control batches."""

from __future__ import annotations

import struct

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch, decode_records, iter_batches, read_header
from tests.server.conftest import fetch, produce

TIMEOUT_MS = 60_000


def init(broker, txn_id: str = "tx", version: int = 4) -> tuple[int, int]:
    body = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=txn_id,
                       transaction_timeout_ms=TIMEOUT_MS)
    assert body["error_code"] == ErrorCode.NONE, body
    return body["producer_id"], body["producer_epoch"]


def add_partitions(broker, txn_id: str, pid: int, epoch: int, partitions, version: int = 3
                   ) -> dict[tuple[str, int], int]:
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    body = broker.call(ApiKey.ADD_PARTITIONS_TO_TXN, version,
                       v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
                       v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
                           {"name": t, "partitions": ps} for t, ps in topics.items()])
    return {(t["name"], p["partition_index"]): p["partition_error_code"]
            for t in body["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}


def add_offsets(broker, txn_id: str, pid: int, epoch: int, group_id: str,
                version: int = 3) -> int:
    return broker.call(ApiKey.ADD_OFFSETS_TO_TXN, version, transactional_id=txn_id,
                       producer_id=pid, producer_epoch=epoch, group_id=group_id)["error_code"]


def end_txn(broker, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return broker.call(ApiKey.END_TXN, version, transactional_id=txn_id, producer_id=pid,
                       producer_epoch=epoch, committed=commit)["error_code"]


def begin(broker, txn_id: str = "tx", partitions=(("t", 0),)) -> tuple[int, int]:
    """InitProducerId, then AddPartitionsToTxn: an Ongoing transaction."""
    pid, epoch = init(broker, txn_id)
    assert set(add_partitions(broker, txn_id, pid, epoch, partitions).values()) == {0}
    return pid, epoch


def txn_batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    return build_batch([(None, v) for v in values], producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, transactional=True)


def produce_txn(broker, pid: int, epoch: int, seq: int, *values: bytes, topic: str = "t",
                partition: int = 0) -> dict:
    body = produce(broker, topic=topic, partition=partition,
                   records=txn_batch(pid, epoch, seq, *values))
    return body["responses"][0]["partition_responses"][0]


def fetch_partition(broker, offset: int = 0, isolation_level: int = 0, topic: str = "t",
                    version: int = 12) -> dict:
    body = fetch(broker, version, partitions=[(topic, 0, offset)],
                 isolation_level=isolation_level)
    return body["responses"][0]["partitions"][0]


def batches(records: bytes) -> list[tuple]:
    """(base offset, is_control, [values]) per batch; a control batch's "values"
    are its marker types, "COMMIT" or "ABORT" (the control record key's type)."""
    return [(read_header(b).base_offset, read_header(b).is_control,
             [_marker(r.key) for r in decode_records(b)] if read_header(b).is_control
             else [r.value for r in decode_records(b)])
            for b in iter_batches(records)]


def _marker(key: bytes) -> str:
    version, kind = struct.unpack(">hh", key)
    assert version == 0
    return {0: "ABORT", 1: "COMMIT"}[kind]
