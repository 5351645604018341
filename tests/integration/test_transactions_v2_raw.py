"""Transactions v2 (KIP-890 part 2) on a real server, over raw sockets.

What a Kafka 4.x Java producer sends once the broker finalizes
``transaction.version`` 2: InitProducerId, then per transaction Produce v12
(each partition joins the transaction implicitly, no AddPartitionsToTxn),
TxnOffsetCommit v5 (the group joins implicitly, no AddOffsetsToTxn) and EndTxn
v5, whose answer carries the bumped epoch the next transaction uses.  A
read_committed Fetch is the judge of what was committed.  A classic (v1)
client shares the broker and the partitions and keeps its own rules.
"""

from __future__ import annotations

import itertools

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch, decode_records, iter_batches, read_header
from tests.support import API_VERSIONS_V3_BODY, RawClient, server_fixture

server = server_fixture(scope="module")
TIMEOUT_MS = 60_000
_names = itertools.count()


@pytest.fixture
def client(server):
    with RawClient(server.bound_port()) as c:
        yield c


@pytest.fixture
def topic(client) -> str:
    """A fresh two-partition topic per test: its log holds only that test's batches."""
    name = f"tv2-{next(_names)}"
    body = client.call(ApiKey.CREATE_TOPICS, 7, {
        "topics": [{"name": name, "num_partitions": 2, "replication_factor": 1,
                    "assignments": [], "configs": []}], "timeout_ms": 5000,
        "validate_only": False})
    assert body["topics"][0]["error_code"] == ErrorCode.NONE
    return name


# -- the requests a client sends -----------------------------------------------------


def init(client, txn_id: str, version: int = 5) -> tuple[int, int]:
    body = client.call(ApiKey.INIT_PRODUCER_ID, version, {
        "transactional_id": txn_id, "transaction_timeout_ms": TIMEOUT_MS,
        "producer_id": -1, "producer_epoch": -1})
    assert body["error_code"] == ErrorCode.NONE, body
    return body["producer_id"], body["producer_epoch"]


def produce(client, txn_id: str, pid: int, epoch: int, seq: int, value: bytes, topic: str,
            partition: int = 0, version: int = 12) -> dict:
    batch = build_batch([(None, value)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=True)
    body = client.call(ApiKey.PRODUCE, version, {
        "transactional_id": txn_id, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    return body["responses"][0]["partition_responses"][0]


def end(client, txn_id: str, pid: int, epoch: int, commit: bool,
        version: int = 5) -> tuple[int, int, int]:
    body = client.call(ApiKey.END_TXN, version, {
        "transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
        "committed": commit})
    return body["error_code"], body["producer_id"], body["producer_epoch"]


def txn_offset_commit(client, txn_id: str, pid: int, epoch: int, group: str, topic: str,
                      offset: int, version: int = 5) -> int:
    body = client.call(ApiKey.TXN_OFFSET_COMMIT, version, {
        "transactional_id": txn_id, "group_id": group, "producer_id": pid,
        "producer_epoch": epoch, "generation_id": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]})
    return body["topics"][0]["partitions"][0]["error_code"]


def committed_offset(client, group: str, topic: str) -> int:
    body = client.call(ApiKey.OFFSET_FETCH, 7, {
        "group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}],
        "require_stable": True})
    p = body["topics"][0]["partitions"][0]
    assert p["error_code"] == ErrorCode.NONE, p
    return p["committed_offset"]


def fetch(client, topic: str, partition: int = 0, isolation_level: int = 1) -> dict:
    body = client.call(ApiKey.FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": isolation_level, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [
            {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    p = body["responses"][0]["partitions"][0]
    assert p["error_code"] == ErrorCode.NONE, p
    return p


def visible_values(p: dict) -> list[bytes]:
    """The values a read_committed consumer keeps: data batches below the LSO,
    minus each aborted transaction's batches (from its first offset in
    ``aborted_transactions`` to its producer's ABORT marker), as the Java
    consumer's CompletedFetch filters them."""
    starts = {(a["producer_id"], a["first_offset"]) for a in p["aborted_transactions"] or ()}
    aborting, out = set(), []
    for batch in iter_batches(p["records"] or b""):
        h = read_header(batch)
        if h.base_offset >= p["last_stable_offset"]:
            break
        if (h.producer_id, h.base_offset) in starts:
            aborting.add(h.producer_id)
        if h.is_control:
            aborting.discard(h.producer_id)
        elif h.producer_id not in aborting:
            out += [r.value for r in decode_records(batch)]
    return out


def markers(p: dict) -> list[tuple[str, int, int]]:
    """(COMMIT or ABORT, producer id, producer epoch) of each control batch."""
    out = []
    for batch in iter_batches(p["records"] or b""):
        h = read_header(batch)
        if h.is_control:
            [record] = decode_records(batch)
            kind = int.from_bytes(record.key[2:4], "big")
            out.append(("COMMIT" if kind == 1 else "ABORT", h.producer_id, h.producer_epoch))
    return out


# -- the tests -----------------------------------------------------------------------


def test_the_broker_finalizes_transaction_version_2_and_advertises_the_v2_requests(client):
    body = client.call(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_BODY)
    finalized = {f["name"]: f["max_version_level"] for f in body["finalized_features"]}
    assert finalized["transaction.version"] == 2
    ranges = {k["api_key"]: k["max_version"] for k in body["api_keys"]}
    # TxnOffsetCommit v5 is transaction version 2's; v6 (Kafka 4.4, KIP-1319) adds
    # topic ids on top of it.
    assert (ranges[ApiKey.PRODUCE], ranges[ApiKey.END_TXN],
            ranges[ApiKey.TXN_OFFSET_COMMIT]) == (13, 5, 6)


def test_each_end_bumps_the_epoch_and_the_next_transaction_uses_it(client, topic):
    pid, epoch = init(client, f"{topic}-id")
    first = epoch
    for i in range(4):
        commit = i != 2
        # A new epoch starts its sequences at 0; the partition joins implicitly.
        assert produce(client, f"{topic}-id", pid, epoch, 0, b"v%d" % i, topic)[
            "error_code"] == ErrorCode.NONE
        error, next_pid, next_epoch = end(client, f"{topic}-id", pid, epoch, commit)
        assert (error, next_pid, next_epoch) == (ErrorCode.NONE, pid, epoch + 1)
        epoch = next_epoch
    p = fetch(client, topic)
    assert visible_values(p) == [b"v0", b"v1", b"v3"]   # the third was aborted
    # Each marker carries the epoch after the bump: the ended transaction is fenced.
    assert markers(p) == [("COMMIT", pid, first + 1), ("COMMIT", pid, first + 2),
                          ("ABORT", pid, first + 3), ("COMMIT", pid, first + 4)]
    assert p["last_stable_offset"] == p["high_watermark"]


def test_produce_v12_and_txn_offset_commit_v5_add_implicitly(client, topic):
    txn_id, group = f"{topic}-id", f"{topic}-group"
    pid, epoch = init(client, txn_id)
    # Committed: two partitions and the group, none of them added explicitly.
    for partition in (0, 1):
        assert produce(client, txn_id, pid, epoch, 0, b"kept-%d" % partition, topic,
                       partition)["error_code"] == ErrorCode.NONE
    assert txn_offset_commit(client, txn_id, pid, epoch, group, topic, 5) == ErrorCode.NONE
    open_p = fetch(client, topic)
    assert open_p["last_stable_offset"] == 0 and visible_values(open_p) == []
    error, _, epoch = end(client, txn_id, pid, epoch, True)
    assert error == ErrorCode.NONE
    # Aborted: the records and the offset disappear.
    assert produce(client, txn_id, pid, epoch, 0, b"dropped", topic)["error_code"] == 0
    assert txn_offset_commit(client, txn_id, pid, epoch, group, topic, 9) == ErrorCode.NONE
    error, _, epoch = end(client, txn_id, pid, epoch, False)
    assert error == ErrorCode.NONE
    p0, p1 = fetch(client, topic, 0), fetch(client, topic, 1)
    assert (visible_values(p0), visible_values(p1)) == ([b"kept-0"], [b"kept-1"])
    assert [a["producer_id"] for a in p0["aborted_transactions"]] == [pid]
    assert b"dropped" in [r.value for b in iter_batches(fetch(client, topic, 0, 0)["records"])
                          for r in decode_records(b) if not read_header(b).is_control]
    assert committed_offset(client, group, topic) == 5


def test_an_old_epoch_is_fenced(client, topic):
    txn_id, group = f"{topic}-id", f"{topic}-group"
    pid, e = init(client, txn_id)
    assert produce(client, txn_id, pid, e, 0, b"a", topic)["error_code"] == 0
    assert end(client, txn_id, pid, e, True) == (ErrorCode.NONE, pid, e + 1)
    # A late batch of the ended transaction: its epoch is behind the marker's.
    assert produce(client, txn_id, pid, e, 1, b"late", topic)["error_code"] == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    assert txn_offset_commit(client, txn_id, pid, e, group, topic, 1) == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    # The EndTxn retried with the epoch before the bump is answered as it was.
    assert end(client, txn_id, pid, e, True) == (ErrorCode.NONE, pid, e + 1)
    assert end(client, txn_id, pid, e, False)[0] == ErrorCode.INVALID_TXN_STATE
    assert end(client, txn_id, pid, e - 1, True)[0] == ErrorCode.PRODUCER_FENCED
    # A new instance with the same transactional id fences the one at e + 1.
    assert init(client, txn_id) == (pid, e + 2)
    assert produce(client, txn_id, pid, e + 1, 0, b"zombie", topic)["error_code"] == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(client, txn_id, pid, e + 1, False)[0] == ErrorCode.PRODUCER_FENCED
    assert visible_values(fetch(client, topic)) == [b"a"]


def test_an_abort_with_no_transaction_open_bumps_the_epoch(client, topic):
    """KIP-890: a client that cannot tell whether its transaction started aborts
    anyway; the abort fences its earlier epoch."""
    pid, e = init(client, f"{topic}-id")
    assert end(client, f"{topic}-id", pid, e, True)[0] == ErrorCode.INVALID_TXN_STATE
    assert end(client, f"{topic}-id", pid, e, False) == (ErrorCode.NONE, pid, e + 1)
    assert produce(client, f"{topic}-id", pid, e, 0, b"x", topic)["error_code"] == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    assert markers(fetch(client, topic)) == []   # nothing was added: nothing to mark


def test_a_v1_client_keeps_the_classic_protocol_beside_a_v2_one(client, topic):
    v1_id, v2_id, group = f"{topic}-v1", f"{topic}-v2", f"{topic}-group"
    pid1, e1 = init(client, v1_id, version=4)
    pid2, e2 = init(client, v2_id)
    for round_ in range(2):
        # Produce v11 adds nothing: the partition must be added explicitly.
        assert produce(client, v1_id, pid1, e1, round_, b"early", topic, version=11)[
            "error_code"] == ErrorCode.INVALID_TXN_STATE
        added = client.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
            "v3_and_below_transactional_id": v1_id, "v3_and_below_producer_id": pid1,
            "v3_and_below_producer_epoch": e1, "v3_and_below_topics": [
                {"name": topic, "partitions": [0]}]})
        assert added["results_by_topic_v3_and_below"][0]["results_by_partition"][0][
            "partition_error_code"] == ErrorCode.NONE
        assert client.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, {
            "transactional_id": v1_id, "producer_id": pid1, "producer_epoch": e1,
            "group_id": group})["error_code"] == ErrorCode.NONE
        assert produce(client, v1_id, pid1, e1, round_, b"v1-%d" % round_, topic,
                       version=11)["error_code"] == ErrorCode.NONE
        assert produce(client, v2_id, pid2, e2, 0, b"v2-%d" % round_, topic)[
            "error_code"] == ErrorCode.NONE
        assert txn_offset_commit(client, v1_id, pid1, e1, group, topic, 10 + round_,
                                 version=4) == ErrorCode.NONE
        # EndTxn v4: no epoch bump, and no id or epoch in the answer.
        assert end(client, v1_id, pid1, e1, True, version=4) == (ErrorCode.NONE, -1, -1)
        error, _, e2 = end(client, v2_id, pid2, e2, True)
        assert error == ErrorCode.NONE
    p = fetch(client, topic)
    assert visible_values(p) == [b"v1-0", b"v2-0", b"v1-1", b"v2-1"]
    assert [(kind, epoch) for kind, pid, epoch in markers(p) if pid == pid1] == [
        ("COMMIT", e1), ("COMMIT", e1)]
    assert committed_offset(client, group, topic) == 11
