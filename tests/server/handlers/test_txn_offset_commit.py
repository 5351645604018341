"""TxnOffsetCommit (API key 28): offsets pending until EndTxn, then visible or dropped."""

from __future__ import annotations

import uuid

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from tests.server.conftest import versions
from tests.server.handlers.conftest import join_stable, subscription
from tests.server.txn_support import add_offsets, end_txn, init

VERSIONS = versions(ApiKey.TXN_OFFSET_COMMIT)


def txn_commit(broker, version, pid, epoch, offset, group="cg", txn_id="tx", partition=0,
               **kw) -> int:
    topic_id = broker.metadata_cache.topic("t").topic_id   # v6 names it so (KIP-1319)
    body = broker.call(ApiKey.TXN_OFFSET_COMMIT, version, transactional_id=txn_id,
                       group_id=group, producer_id=pid, producer_epoch=epoch,
                       topics=[{"name": "t", "topic_id": topic_id, "partitions": [
                           {"partition_index": partition, "committed_offset": offset,
                            "committed_metadata": "m"}]}], **kw)
    [[error]] = [[p["error_code"] for p in t["partitions"]] for t in body["topics"]]
    return error


def committed(broker, group="cg", partition=0) -> int:
    body = broker.call(ApiKey.OFFSET_FETCH, 7, group_id=group, topics=[
        {"name": "t", "partition_indexes": [partition]}])
    return body["topics"][0]["partitions"][0]["committed_offset"]


@pytest.fixture
def txn(broker):
    broker.create_topic("t", 2)
    pid, epoch = init(broker)
    assert add_offsets(broker, "tx", pid, epoch, "cg") == ErrorCode.NONE
    return broker, pid, epoch


@pytest.mark.parametrize("version", VERSIONS)
def test_offsets_become_visible_only_on_commit(txn, version):
    broker, pid, epoch = txn
    assert txn_commit(broker, version, pid, epoch, 5) == ErrorCode.NONE
    assert committed(broker) == -1
    assert end_txn(broker, "tx", pid, epoch, True) == ErrorCode.NONE
    assert committed(broker) == 5


@pytest.mark.parametrize("version", VERSIONS)
def test_an_abort_drops_the_offsets(txn, version):
    broker, pid, epoch = txn
    assert txn_commit(broker, version, pid, epoch, 5) == ErrorCode.NONE
    assert end_txn(broker, "tx", pid, epoch, False) == ErrorCode.NONE
    assert committed(broker) == -1
    # The next transaction's commit does not resurrect them.
    assert add_offsets(broker, "tx", pid, epoch, "cg") == ErrorCode.NONE
    assert txn_commit(broker, version, pid, epoch, 9, partition=1) == ErrorCode.NONE
    assert end_txn(broker, "tx", pid, epoch, True) == ErrorCode.NONE
    assert (committed(broker), committed(broker, partition=1)) == (-1, 9)


@pytest.mark.parametrize("version", VERSIONS)
def test_errors(txn, version):
    broker, pid, epoch = txn
    # The group was not added to the transaction: v5 (KIP-890 part 2) adds it.
    assert txn_commit(broker, version, pid, epoch, 1, group="other") == (
        ErrorCode.NONE if version >= 5 else ErrorCode.INVALID_TXN_STATE)
    assert txn_commit(broker, version, pid, epoch, 1, txn_id="ghost") == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert txn_commit(broker, version, pid, epoch + 1, 1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert txn_commit(broker, version, pid, epoch, 1, partition=7) == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_v6_names_topics_by_id_and_an_unknown_id_is_refused(txn):
    broker, pid, epoch = txn
    topic_id = broker.metadata_cache.topic("t").topic_id
    unknown = uuid.UUID(int=0x0102030405060708090a0b0c0d0e0f10)
    body = broker.call(ApiKey.TXN_OFFSET_COMMIT, 6, transactional_id="tx", group_id="cg",
                       producer_id=pid, producer_epoch=epoch, topics=[
                           {"topic_id": topic_id, "partitions": [
                               {"partition_index": 0, "committed_offset": 4,
                                "committed_metadata": None}]},
                           {"topic_id": unknown, "partitions": [
                               {"partition_index": 0, "committed_offset": 4,
                                "committed_metadata": None}]}])
    assert [(t["topic_id"], [p["error_code"] for p in t["partitions"]])
            for t in body["topics"]] == [(topic_id, [ErrorCode.NONE]),
                                         (unknown, [ErrorCode.UNKNOWN_TOPIC_ID])]
    assert end_txn(broker, "tx", pid, epoch, True) == ErrorCode.NONE
    assert committed(broker) == 4
    assert ZERO_UUID not in (t["topic_id"] for t in body["topics"])


@pytest.mark.parametrize("version", [3, 4])
def test_v3_checks_the_member_against_the_group(rich, version):
    """A Stable group "g" with a member (the rich fixture): a TxnOffsetCommit
    naming a member must name one of the current generation."""
    pid, epoch = init(rich)
    assert add_offsets(rich, "tx", pid, epoch, "g") == ErrorCode.NONE
    assert txn_commit(rich, version, pid, epoch, 1, group="g", member_id="nobody",
                      generation_id=rich.generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert txn_commit(rich, version, pid, epoch, 1, group="g", member_id=rich.group_member,
                      generation_id=rich.generation + 1) == ErrorCode.ILLEGAL_GENERATION
    assert txn_commit(rich, version, pid, epoch, 1, group="g", member_id=rich.group_member,
                      generation_id=rich.generation) == ErrorCode.NONE
    assert end_txn(rich, "tx", pid, epoch, True) == ErrorCode.NONE
    assert committed(rich, group="g", partition=0) == 1


@pytest.mark.parametrize("version", [7, 8, 9])
def test_offset_fetch_require_stable_sees_pending_offsets_as_unstable(txn, version):
    """KIP-447: while a transaction holds an offset for a partition, a
    read_committed consumer's OffsetFetch (require_stable) gets
    UNSTABLE_OFFSET_COMMIT for it; once the transaction ends, the offset."""
    broker, pid, epoch = txn
    assert txn_commit(broker, 3, pid, epoch, 5) == ErrorCode.NONE

    def fetched(require_stable: bool) -> list[tuple[int, int, int]]:
        topics = [{"name": "t", "partition_indexes": [0, 1]}]
        fields = (dict(groups=[{"group_id": "cg", "topics": topics}]) if version >= 8
                  else dict(group_id="cg", topics=topics))
        body = broker.call(ApiKey.OFFSET_FETCH, version, require_stable=require_stable,
                           **fields)
        [topic] = body["groups"][0]["topics"] if version >= 8 else body["topics"]
        return [(p["partition_index"], p["committed_offset"], p["error_code"])
                for p in topic["partitions"]]

    assert fetched(True) == [(0, -1, ErrorCode.UNSTABLE_OFFSET_COMMIT), (1, -1, 0)]
    assert fetched(False) == [(0, -1, 0), (1, -1, 0)]
    assert end_txn(broker, "tx", pid, epoch, True) == ErrorCode.NONE
    assert fetched(True) == [(0, 5, 0), (1, -1, 0)]


@pytest.mark.parametrize("version", [3, 4])
def test_v3_fences_an_old_incarnation_of_a_static_member(txn, version):
    """KIP-345 with KIP-447: the group_instance_id must map to the member id sent
    (Kafka's validateMember), else FENCED_INSTANCE_ID, and nothing is held."""
    broker, pid, epoch = txn
    member, generation = join_stable(broker, "cg", subscription("t"), instance_id="i-1")
    assert txn_commit(broker, version, pid, epoch, 5, member_id="old-incarnation",
                      generation_id=generation, group_instance_id="i-1"
                      ) == ErrorCode.FENCED_INSTANCE_ID
    assert txn_commit(broker, version, pid, epoch, 7, member_id=member,
                      generation_id=generation, group_instance_id="i-2"
                      ) == ErrorCode.UNKNOWN_MEMBER_ID
    assert txn_commit(broker, version, pid, epoch, 9, member_id=member,
                      generation_id=generation, group_instance_id="i-1") == ErrorCode.NONE
    assert end_txn(broker, "tx", pid, epoch, True) == ErrorCode.NONE
    assert committed(broker) == 9
