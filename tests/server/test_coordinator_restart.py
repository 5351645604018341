"""A broker restarted over the same partition logs gets its coordinators' state
back from __consumer_offsets and __transaction_state (Kafka's
loadGroupsAndOffsets and loadTransactionsForTxnTopicPartition).

The restart is a second BrokerCore whose log factory hands out the same
InMemoryLog per (topic, partition) as the first, over the same metadata log:
the topics come back by replaying it, and everything the new broker knows of
groups and transactions comes from reading the partition logs back, which
is what a durable log feeds after a real restart (that one is in
tests/integration/test_internal_topics_restart.py).
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.coordinator_records import decode_transaction_record
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import decode_records
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME as OFFSETS, TRANSACTION_STATE_TOPIC_NAME as TXN_STATE)
from kafka_net.server.storage import InMemoryLog
from kafka_net.server.transaction import TransactionState
from tests.server.conftest import Broker, produce
from tests.server.handlers.conftest import join_stable, subscription
from tests.server.test_internal_topics import commit, find
from tests.server.txn_support import (
    add_offsets, batches, begin, end_txn, fetch_partition, init, produce_txn, txn_batch)

ERR = ErrorCode
READ_COMMITTED = 1


class SharedLogs:
    """A log factory that keeps each partition's log across brokers."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], InMemoryLog] = {}

    def __call__(self, topic, index, topic_id) -> InMemoryLog:
        return self.logs.setdefault((topic, index), InMemoryLog())


@pytest.fixture
def logs():
    return SharedLogs()


@pytest.fixture
def brokers(logs):
    started = []
    metadata_log = InMemoryLog()

    def start(keep_metadata: bool = True) -> Broker:
        b = Broker(log_factory=logs, metadata_log_factory=(
            (lambda config: metadata_log) if keep_metadata else None)).start()
        b.create_topic("t", 2)   # a no-op when the metadata log brought it back
        started.append(b)
        return b
    yield start
    for b in started:
        b.stop()


def restart(old: Broker, start) -> Broker:
    """Stop ``old``; a new broker over the same logs, whose coordinators load the
    internal topics the metadata log brought back (``BrokerCore.startup``)."""
    old.stop()
    new = start()
    assert new.metadata_cache.topic(OFFSETS) is not None \
        or old.metadata_cache.topic(OFFSETS) is None
    new.internal_topics.load_existing()
    return new


def fetch_offsets(broker, group: str) -> dict:
    body = broker.call(ApiKey.OFFSET_FETCH, 7, group_id=group, topics=None)
    return {(t["name"], p["partition_index"]): (p["committed_offset"], p["metadata"])
            for t in body["topics"] for p in t["partitions"]}


def describe(broker, group: str) -> dict:
    [described] = broker.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group])["groups"]
    return described


# -- groups and offsets ----------------------------------------------------------------------

def test_committed_offsets_come_back(brokers):
    b = brokers()
    find(b, "simple")
    assert set(commit(b, "simple", {("t", 0): 5, ("t", 1): 7}).values()) == {ERR.NONE}
    commit(b, "simple", {("t", 0): 6})   # the later commit wins
    b = restart(b, brokers)
    assert fetch_offsets(b, "simple") == {("t", 0): (6, "m6"), ("t", 1): (7, "m7")}
    assert describe(b, "simple")["group_state"] == "Empty"


def test_a_group_with_a_static_member_comes_back_stable(brokers):
    b = brokers()
    member, generation = join_stable(b, "g", subscription("t"), instance_id="i-1")
    commit(b, "g", {("t", 0): 3}, generation, member)
    b = restart(b, brokers)
    described = describe(b, "g")
    assert described["group_state"] == "Stable"
    assert described["protocol_data"] == "range"
    [m] = described["members"]
    assert (m["member_id"], m["group_instance_id"], m["member_assignment"]) == \
        (member, "i-1", b"x")
    # The running member carries on: its heartbeat and generation are known.
    assert b.call(ApiKey.HEARTBEAT, 4, group_id="g", generation_id=generation,
                  member_id=member, group_instance_id="i-1")["error_code"] == ERR.NONE
    # The static member restarting too gets its place back without a rebalance.
    joined = b.call(ApiKey.JOIN_GROUP, 5, group_id="g", session_timeout_ms=60_000,
                    rebalance_timeout_ms=60_000, protocol_type="consumer",
                    group_instance_id="i-1",
                    protocols=[{"name": "range", "metadata": subscription("t")}])
    assert joined["error_code"] == ERR.NONE and joined["generation_id"] == generation
    synced = b.call(ApiKey.SYNC_GROUP, 3, group_id="g", generation_id=generation,
                    member_id=joined["member_id"], group_instance_id="i-1", assignments=[])
    assert synced["error_code"] == ERR.NONE and synced["assignment"] == b"x"
    assert fetch_offsets(b, "g") == {("t", 0): (3, "m3")}


def test_deleted_offsets_and_groups_stay_deleted(brokers):
    b = brokers()
    commit(b, "gone", {("t", 0): 1})
    commit(b, "partly", {("t", 0): 1, ("t", 1): 2})
    b.call(ApiKey.OFFSET_DELETE, 0, group_id="partly", topics=[
        {"name": "t", "partitions": [{"partition_index": 0}]}])
    assert b.call(ApiKey.DELETE_GROUPS, 2, groups_names=["gone"])["results"][0][
        "error_code"] == ERR.NONE
    b = restart(b, brokers)
    assert fetch_offsets(b, "partly") == {("t", 1): (2, "m2")}
    assert [g["group_id"] for g in b.call(ApiKey.LIST_GROUPS, 4)["groups"]] == ["partly"]


def test_find_coordinator_on_a_fresh_broker_loads_what_the_logs_hold(brokers):
    """Without the metadata log, the topic is created again at the first
    FindCoordinator, over the same partition logs, and loaded."""
    b = brokers()
    commit(b, "g", {("t", 1): 4})
    b.stop()
    b = brokers(keep_metadata=False)
    find(b, "g")
    assert fetch_offsets(b, "g") == {("t", 1): (4, "m4")}


# -- transactions --------------------------------------------------------------------------

def txn_offset_commit(b, pid, epoch, offset, group="cg", txn_id="tx") -> int:
    body = b.call(ApiKey.TXN_OFFSET_COMMIT, 3, transactional_id=txn_id, group_id=group,
                  producer_id=pid, producer_epoch=epoch, topics=[{"name": "t", "partitions": [
                      {"partition_index": 0, "committed_offset": offset,
                       "committed_metadata": ""}]}])
    return body["topics"][0]["partitions"][0]["error_code"]


def test_a_committed_transactions_offsets_come_back(brokers):
    b = brokers()
    pid, epoch = begin(b, "tx")
    assert add_offsets(b, "tx", pid, epoch, "cg") == ERR.NONE
    assert txn_offset_commit(b, pid, epoch, 11) == ERR.NONE
    assert end_txn(b, "tx", pid, epoch, commit=True) == ERR.NONE
    b = restart(b, brokers)
    assert fetch_offsets(b, "cg") == {("t", 0): (11, "")}
    md = b.transaction_coordinator.describe("tx")
    assert (md.state, md.producer_id, md.producer_epoch) == \
        (TransactionState.COMPLETE_COMMIT, pid, epoch)


def test_an_open_transaction_comes_back_and_is_aborted_at_its_timeout(brokers):
    b = brokers()
    pid, epoch = begin(b, "tx")
    assert add_offsets(b, "tx", pid, epoch, "cg") == ERR.NONE
    assert produce_txn(b, pid, epoch, 0, b"a")["error_code"] == ERR.NONE
    assert txn_offset_commit(b, pid, epoch, 11) == ERR.NONE
    b = restart(b, brokers)
    md = b.transaction_coordinator.describe("tx")
    assert md.state == TransactionState.ONGOING and md.topic_partitions == {("t", 0)}
    assert md.groups == {"cg"}
    assert fetch_offsets(b, "cg") == {}   # pending, not committed
    coordinator = b.transaction_coordinator
    coordinator.clock_ms = lambda: md.txn_start_timestamp + md.txn_timeout_ms + 1
    assert coordinator.abort_timed_out_transactions() == 1
    assert md.state == TransactionState.COMPLETE_ABORT and md.producer_epoch == epoch + 1
    records = fetch_partition(b, isolation_level=READ_COMMITTED)["records"]
    assert [kind for _, control, kind in batches(records) if control] == [["ABORT"]]
    assert fetch_offsets(b, "cg") == {}
    # The aborted transaction's offsets stay uncommitted after yet another restart.
    b = restart(b, brokers)
    assert fetch_offsets(b, "cg") == {}


def test_pending_offsets_come_back_pending_and_are_committed_by_the_end_txn(brokers):
    b = brokers()
    pid, epoch = begin(b, "tx")
    assert add_offsets(b, "tx", pid, epoch, "cg") == ERR.NONE
    assert txn_offset_commit(b, pid, epoch, 12) == ERR.NONE
    b = restart(b, brokers)
    assert fetch_offsets(b, "cg") == {}
    assert end_txn(b, "tx", pid, epoch, commit=True) == ERR.NONE
    assert fetch_offsets(b, "cg") == {("t", 0): (12, "")}
    b = restart(b, brokers)
    assert fetch_offsets(b, "cg") == {("t", 0): (12, "")}


def test_a_transaction_found_in_prepare_commit_is_completed_at_load(brokers):
    b = brokers()
    pid, epoch = begin(b, "tx")
    assert produce_txn(b, pid, epoch, 0, b"a")["error_code"] == ERR.NONE
    # The broker dies after writing PrepareCommit, before any marker (what
    # _end_transaction writes first).
    md = b.transaction_coordinator.describe("tx")
    with md.lock:
        md.state = TransactionState.PREPARE_COMMIT
        assert b.transaction_coordinator.txn_log.append(md) == ERR.NONE
    b = restart(b, brokers)
    md = b.transaction_coordinator.describe("tx")
    assert md.state == TransactionState.COMPLETE_COMMIT
    records = fetch_partition(b, isolation_level=READ_COMMITTED)["records"]
    assert [(control, values) for _, control, values in batches(records)] == \
        [(False, [b"a"]), (True, ["COMMIT"])]


def test_a_tv2_transaction_keeps_its_client_version_and_next_producer_id(brokers):
    """Written at TransactionLogValue v1: after a restart an EndTxn v5 retry is
    still recognised, and a commit of an exhausted epoch found in PrepareCommit
    completes onto its new producer id."""
    b = brokers()
    pid, epoch = init(b, "tx")
    assert produce(b, 12, records=txn_batch(pid, epoch, 0, b"a"))["responses"][0][
        "partition_responses"][0]["error_code"] == ERR.NONE
    assert end_txn_v5(b, pid, epoch, True) == (ERR.NONE, pid, epoch + 1)
    b = restart(b, brokers)
    md = b.transaction_coordinator.describe("tx")
    assert (md.state, md.producer_epoch, md.client_transaction_version) == \
        (TransactionState.COMPLETE_COMMIT, epoch + 1, 2)
    assert end_txn_v5(b, pid, epoch, True) == (ERR.NONE, pid, epoch + 1)   # the retry
    # The broker dies after the PrepareCommit of an exhausted epoch's commit.
    with md.lock:
        md.state, md.producer_epoch, md.next_producer_id = \
            TransactionState.PREPARE_COMMIT, 2**15 - 1, pid + 500
        assert b.transaction_coordinator.txn_log.append(md) == ERR.NONE
    b = restart(b, brokers)
    md = b.transaction_coordinator.describe("tx")
    assert (md.state, md.producer_id, md.producer_epoch, md.previous_producer_id) == \
        (TransactionState.COMPLETE_COMMIT, pid + 500, 0, pid)


def set_transaction_version(b, level: int) -> None:
    body = b.call(ApiKey.UPDATE_FEATURES, 1, validate_only=False, feature_updates=[
        {"feature": "transaction.version", "max_version_level": level,
         "upgrade_type": 1 if level >= b.apis.features.level("transaction.version") else 2}])
    assert body["error_code"] == ERR.NONE and body["results"][0]["error_code"] == ERR.NONE, body


def txn_state_value_versions(b) -> list[tuple[str, int, int]]:
    """(transactional id, TransactionLogValue version, status) of every record
    in __transaction_state, in each partition's order."""
    found = []
    for index in range(b.internal_topics.partition_count(TXN_STATE)):
        for _, batch in b.replica_manager.read_batches(TXN_STATE, index):
            for record in decode_records(batch):
                txn_id, value = decode_transaction_record(record.key, record.value)
                found.append((txn_id, int.from_bytes(record.value[:2], "big"),
                              value["transaction_status"]))
    return found


def test_the_log_value_version_follows_the_finalized_transaction_version(brokers):
    """Kafka's transactionLogValueVersion: v0 at transaction.version 0, v1 (flexible,
    tagged fields) from level 1 on, whatever version the client uses; a log
    holding both loads back after a restart."""
    b = brokers()
    set_transaction_version(b, 0)
    pid0, epoch0 = begin(b, "tv0")    # classic requests at level 0: v0 records
    assert produce_txn(b, pid0, epoch0, 0, b"a")["error_code"] == ERR.NONE
    assert end_txn(b, "tv0", pid0, epoch0, commit=True) == ERR.NONE
    set_transaction_version(b, 1)
    pid1, epoch1 = begin(b, "tv1")    # classic requests at level 1: v1 records
    assert end_txn(b, "tv1", pid1, epoch1, commit=False) == ERR.NONE
    set_transaction_version(b, 2)
    pid2, epoch2 = init(b, "tv2")     # a TV2 transaction at level 2: v1
    assert produce(b, 12, records=txn_batch(pid2, epoch2, 0, b"b"))["responses"][0][
        "partition_responses"][0]["error_code"] == ERR.NONE
    versions = {}
    for txn_id, version, _ in txn_state_value_versions(b):
        versions.setdefault(txn_id, set()).add(version)
    assert versions == {"tv0": {0}, "tv1": {1}, "tv2": {1}}
    b = restart(b, brokers)
    assert b.apis.features.level("transaction.version") == 2
    co = b.transaction_coordinator
    assert (co.describe("tv0").state, co.describe("tv0").producer_epoch,
            co.describe("tv0").client_transaction_version) == \
        (TransactionState.COMPLETE_COMMIT, epoch0, 0)
    assert (co.describe("tv1").state, co.describe("tv1").producer_id) == \
        (TransactionState.COMPLETE_ABORT, pid1)
    md = co.describe("tv2")
    assert (md.state, md.topic_partitions, md.client_transaction_version) == \
        (TransactionState.ONGOING, {("t", 0)}, 2)
    assert end_txn_v5(b, pid2, epoch2, True, "tv2") == (ERR.NONE, pid2, epoch2 + 1)
    # Back at level 0 (a downgrade): the next records are v0 again.
    set_transaction_version(b, 0)
    pid0b, epoch0b = init(b, "tv0")
    assert [v for t, v, _ in txn_state_value_versions(b) if t == "tv0"][-1] == 0
    b = restart(b, brokers)
    assert b.transaction_coordinator.describe("tv0").producer_epoch == epoch0b


def end_txn_v5(b, pid: int, epoch: int, commit: bool, txn_id: str = "tx") -> tuple[int, int, int]:
    body = b.call(ApiKey.END_TXN, 5, transactional_id=txn_id, producer_id=pid,
                  producer_epoch=epoch, committed=commit)
    return body["error_code"], body["producer_id"], body["producer_epoch"]


def test_producer_ids_are_not_handed_out_again(brokers):
    b = brokers()
    pid, _ = init(b, "tx")
    b = restart(b, brokers)
    other, _ = init(b, "other")
    assert other > pid
    again, epoch = init(b, "tx")
    assert again == pid and epoch == 1


def kip848_heartbeat(b, member_id: str, epoch: int, owned=None) -> dict:
    body = b.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="kip848", member_id=member_id,
                  member_epoch=epoch, rebalance_timeout_ms=60_000,
                  subscribed_topic_names=["t"], topic_partitions=owned or [])
    assert body["error_code"] == ERR.NONE, body
    return body


def test_a_consumer_protocol_group_comes_back_with_its_members(brokers):
    """KIP-848: the ConsumerGroup* records bring the group epoch, the member, its
    target and its assignment back; the member carries on at its epoch."""
    b = brokers()
    kip848_heartbeat(b, "m-1", 0)
    joined = kip848_heartbeat(b, "m-1", 1)   # the assignment once the target exists
    owned = joined["assignment"]["topic_partitions"] if joined["assignment"] else []
    epoch = joined["member_epoch"]
    assert set(commit(b, "kip848", {("t", 0): 4}, epoch, "m-1").values()) == {ERR.NONE}
    before = b.group_coordinator.group("kip848").modern
    b = restart(b, brokers)
    after = b.group_coordinator.group("kip848").modern
    assert (after.group_epoch, after.assignment_epoch, after.target) == \
        (before.group_epoch, before.assignment_epoch, before.target)
    [(member_id, member)] = after.members.items()
    assert (member_id, member.member_epoch, member.assigned, member.subscribed_topic_names) == \
        ("m-1", epoch, before.members["m-1"].assigned, ("t",))
    assert fetch_offsets(b, "kip848") == {("t", 0): (4, "m4")}
    again = kip848_heartbeat(b, "m-1", epoch, owned)
    assert again["member_epoch"] == epoch
    assert set(commit(b, "kip848", {("t", 0): 5}, epoch, "m-1").values()) == {ERR.NONE}


def test_a_consumer_protocol_member_that_left_stays_gone(brokers):
    b = brokers()
    kip848_heartbeat(b, "m-1", 0)
    kip848_heartbeat(b, "m-2", 0)
    kip848_heartbeat(b, "m-2", -1)   # leaves: its records get tombstones
    b = restart(b, brokers)
    assert list(b.group_coordinator.group("kip848").modern.members) == ["m-1"]
