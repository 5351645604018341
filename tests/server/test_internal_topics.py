"""__consumer_offsets and __transaction_state: created by the broker when a
coordinator is first looked for, flagged internal, compacted, 50 partitions;
clients may read them but not create, delete or produce to them; the group
coordinator's offsets and groups, and the transaction coordinator's state,
are records in them (Kafka's schemas, decoded here with
kafka_net/protocol/coordinator_records.py)."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.coordinator_records import (
    GroupMetadataRecord, OffsetCommitRecord, decode_group_record, decode_transaction_record,
    partition_for)
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.log_safety import RateLimitedLog
from kafka_net.protocol.records import (
    build_key_value_batch, decode_records, iter_batches, read_header)
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.internal_topics import (
    GROUP_METADATA_TOPIC_NAME as OFFSETS, TRANSACTION_STATE_TOPIC_NAME as TXN_STATE,
    loaded_batches)
from tests.server.conftest import Broker, batch, fetch, produce
from tests.server.handlers.conftest import join_stable, subscription
from tests.server.txn_support import add_offsets, begin, end_txn, init

ERR = ErrorCode


def find(broker, key: str, key_type: int = 0) -> dict:
    [answer] = broker.call(ApiKey.FIND_COORDINATOR, 4, key_type=key_type,
                           coordinator_keys=[key])["coordinators"]
    return answer


def metadata(broker, *names: str) -> dict:
    body = broker.call(ApiKey.METADATA, 12, topics=[{"name": n, "topic_id": ZERO_UUID}
                                                    for n in names],
                       allow_auto_topic_creation=True)
    return {t["name"]: t for t in body["topics"]}


def commit(broker, group: str, offsets: dict, generation: int = -1, member: str = "") -> dict:
    topics: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "committed_offset": offset,
             "committed_metadata": f"m{offset}"})
    body = broker.call(ApiKey.OFFSET_COMMIT, 8, group_id=group,
                       generation_id_or_member_epoch=generation, member_id=member,
                       topics=[{"name": t, "partitions": ps} for t, ps in topics.items()])
    return {(t["name"], p["partition_index"]): p["error_code"]
            for t in body["topics"] for p in t["partitions"]}


def stored(broker, topic: str, partition: int) -> list[tuple]:
    """(batch header, [records]) of one partition, read through Fetch as a client would."""
    body = fetch(broker, partitions=[(topic, partition, 0)], max_bytes=10 << 20)
    [p] = body["responses"][0]["partitions"]
    assert p["error_code"] == ERR.NONE
    return [(read_header(b), decode_records(b)) for b in iter_batches(p["records"])]


def group_records(broker, group: str) -> list:
    return [decode_group_record(r.key, r.value)
            for header, records in stored(broker, OFFSETS, partition_for(group, 50))
            if not header.is_control for r in records]


@pytest.fixture
def broker():
    b = Broker().start()
    b.create_topic("t", 2)
    try:
        yield b
    finally:
        b.stop()


# -- creation, flags, configs -----------------------------------------------------------

def test_find_coordinator_creates_the_internal_topics(broker):
    assert broker.metadata_cache.topic(OFFSETS) is None
    assert find(broker, "g")["error_code"] == ERR.NONE
    assert broker.metadata_cache.topic(TXN_STATE) is None   # only the one looked for
    assert find(broker, "tx", key_type=1)["error_code"] == ERR.NONE
    topics = metadata(broker, OFFSETS, TXN_STATE, "t")
    for name in (OFFSETS, TXN_STATE):
        assert topics[name]["error_code"] == ERR.NONE
        assert topics[name]["is_internal"] is True
        assert len(topics[name]["partitions"]) == 50
        config = broker.replica_manager.config_repository.log_config(name)
        assert config.compact and not config.delete
        assert config.segment_bytes == 104857600
    assert topics["t"]["is_internal"] is False


def test_partition_counts_come_from_the_broker_config():
    config = dataclasses.replace(ServerConfig(log_store="memory"), offsets_topic_num_partitions=3,
                                 transaction_state_log_num_partitions=2,
                                 offsets_topic_segment_bytes=1 << 20)
    b = Broker(config)
    find(b, "g")
    find(b, "tx", key_type=1)
    assert b.metadata_cache.topic(OFFSETS).num_partitions == 3
    assert b.metadata_cache.topic(TXN_STATE).num_partitions == 2
    assert b.replica_manager.config_repository.log_config(OFFSETS).segment_bytes == 1 << 20


def test_metadata_auto_creation_makes_the_internal_topic_not_an_ordinary_one(broker):
    topics = metadata(broker, OFFSETS)
    assert topics[OFFSETS]["is_internal"] is True
    assert len(topics[OFFSETS]["partitions"]) == 50   # not num.partitions (1)
    assert broker.replica_manager.config_repository.log_config(OFFSETS).compact


def test_metadata_without_auto_creation_does_not_create_them(broker):
    body = broker.call(ApiKey.METADATA, 12, topics=[{"name": OFFSETS, "topic_id": ZERO_UUID}],
                       allow_auto_topic_creation=False)
    assert body["topics"][0]["error_code"] == ERR.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.metadata_cache.topic(OFFSETS) is None


def test_find_coordinator_answers_coordinator_not_available_when_creation_fails():
    b = Broker(dataclasses.replace(ServerConfig(log_store="memory"), max_broker_partitions=10))
    assert find(b, "g")["error_code"] == ERR.COORDINATOR_NOT_AVAILABLE
    assert b.metadata_cache.topic(OFFSETS) is None


# -- what clients may not do -------------------------------------------------------------

def create(broker, name: str) -> dict:
    [t] = broker.call(ApiKey.CREATE_TOPICS, 7, topics=[
        {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": []}])["topics"]
    return t


def test_clients_cannot_create_them(broker):
    refused = create(broker, OFFSETS)
    assert refused["error_code"] == ERR.INVALID_REQUEST
    assert refused["error_message"] == f"Creation of internal topic {OFFSETS} is prohibited."
    assert broker.metadata_cache.topic(OFFSETS) is None
    find(broker, "g")
    assert create(broker, OFFSETS)["error_code"] == ERR.TOPIC_ALREADY_EXISTS
    assert create(broker, TXN_STATE)["error_code"] == ERR.INVALID_REQUEST


def test_clients_cannot_delete_them(broker):
    find(broker, "g")
    [answer] = broker.call(ApiKey.DELETE_TOPICS, 6, topics=[
        {"name": OFFSETS, "topic_id": ZERO_UUID}])["responses"]
    assert answer["error_code"] == ERR.INVALID_REQUEST
    assert answer["error_message"] == f"Deletion of internal topic {OFFSETS} is prohibited."
    assert broker.metadata_cache.topic(OFFSETS) is not None


def test_clients_cannot_produce_to_them(broker):
    find(broker, "g")
    body = produce(broker, topic=OFFSETS, partition=0, records=batch([b"x"]))
    [p] = body["responses"][0]["partition_responses"]
    assert p["error_code"] == ERR.INVALID_TOPIC_EXCEPTION
    assert p["error_message"] == f"Cannot append to internal topic {OFFSETS}"
    assert stored(broker, OFFSETS, 0) == []


def test_clients_cannot_delete_their_records(broker):
    find(broker, "g")
    commit(broker, "g", {("t", 0): 1})
    body = broker.call(ApiKey.DELETE_RECORDS, 2, timeout_ms=1000, topics=[
        {"name": OFFSETS, "partitions": [{"partition_index": partition_for("g", 50),
                                          "offset": -1}]}])
    [p] = body["topics"][0]["partitions"]
    assert (p["error_code"], p["low_watermark"]) == (ERR.INVALID_TOPIC_EXCEPTION, -1)
    assert len(group_records(broker, "g")) == 1


# -- the group coordinator's records ------------------------------------------------------

def test_each_offset_commit_is_one_batch_in_the_groups_partition(broker):
    find(broker, "g")
    assert set(commit(broker, "g", {("t", 0): 5, ("t", 1): 7}).values()) == {ERR.NONE}
    batches = stored(broker, OFFSETS, partition_for("g", 50))
    assert len(batches) == 1 and len(batches[0][1]) == 2
    decoded = [decode_group_record(r.key, r.value) for r in batches[0][1]]
    assert [(d.group, d.topic, d.partition, d.value["offset"], d.value["metadata"])
            for d in decoded] == [("g", "t", 0, 5, "m5"), ("g", "t", 1, 7, "m7")]
    others = [p for p in range(50) if p != partition_for("g", 50)]
    assert all(stored(broker, OFFSETS, p) == [] for p in others[:5])


def test_a_commit_without_find_coordinator_creates_the_topic_itself(broker):
    assert set(commit(broker, "g", {("t", 0): 1}).values()) == {ERR.NONE}
    assert broker.metadata_cache.topic(OFFSETS).is_internal


def test_refused_commits_write_nothing(broker):
    find(broker, "g")
    assert commit(broker, "g", {("nope", 0): 1}) == {("nope", 0): ERR.UNKNOWN_TOPIC_OR_PARTITION}
    assert group_records(broker, "g") == []


def test_the_group_is_written_at_sync_and_when_it_empties(broker):
    member, generation = join_stable(broker, "g", subscription("t"), instance_id="i-1")
    [group] = [r for r in group_records(broker, "g") if isinstance(r, GroupMetadataRecord)]
    assert group.value["generation"] == generation
    assert group.value["protocol"] == "range" and group.value["leader"] == member
    [m] = group.value["members"]
    assert (m["member_id"], m["group_instance_id"], m["assignment"], m["subscription"]) == \
        (member, "i-1", b"x", subscription("t"))
    broker.call(ApiKey.LEAVE_GROUP, 4, group_id="g", members=[
        {"member_id": member, "group_instance_id": "i-1"}])
    last = [r for r in group_records(broker, "g") if isinstance(r, GroupMetadataRecord)][-1]
    assert last.value["members"] == [] and last.value["generation"] == generation + 1


def test_offset_delete_and_delete_groups_write_tombstones(broker):
    commit(broker, "g", {("t", 0): 1, ("t", 1): 2})
    body = broker.call(ApiKey.OFFSET_DELETE, 0, group_id="g", topics=[
        {"name": "t", "partitions": [{"partition_index": 0}]}])
    assert body["error_code"] == ERR.NONE
    assert group_records(broker, "g")[-1] == OffsetCommitRecord("g", "t", 0, None)
    [result] = broker.call(ApiKey.DELETE_GROUPS, 2, groups_names=["g"])["results"]
    assert result["error_code"] == ERR.NONE
    assert group_records(broker, "g")[-2:] == [OffsetCommitRecord("g", "t", 1, None),
                                               GroupMetadataRecord("g", None)]


def test_delete_topics_writes_tombstones_for_the_topics_offsets(broker):
    commit(broker, "g", {("t", 0): 1})
    broker.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": "t", "topic_id": ZERO_UUID}])
    assert group_records(broker, "g")[-1] == OffsetCommitRecord("g", "t", 0, None)


# -- the transaction coordinator's records --------------------------------------------------

def txn_records(broker, txn_id: str) -> list[tuple[int, list]]:
    """(transactionStatus, partitions) of each record of ``txn_id``, in order."""
    out = []
    for header, records in stored(broker, TXN_STATE, partition_for(txn_id, 50)):
        for r in records:
            key, value = decode_transaction_record(r.key, r.value)
            if key == txn_id:
                out.append((value["transaction_status"], value["transaction_partitions"]))
    return out


def test_every_transition_is_written(broker):
    pid, epoch = begin(broker, "tx", [("t", 0), ("t", 1)])
    assert add_offsets(broker, "tx", pid, epoch, "g") == ERR.NONE
    assert end_txn(broker, "tx", pid, epoch, commit=True) == ERR.NONE
    t_parts = {"topic": "t", "partition_ids": [0, 1]}
    offsets = {"topic": OFFSETS, "partition_ids": [partition_for("g", 50)]}
    assert txn_records(broker, "tx") == [
        (0, None),                          # Empty: InitProducerId
        (1, [t_parts]),                     # Ongoing: AddPartitionsToTxn
        (1, [t_parts, offsets]),            # Ongoing: AddOffsetsToTxn (its partition)
        (2, [t_parts, offsets]),            # PrepareCommit
        (4, []),                            # CompleteCommit
    ]


def test_txn_offset_commit_offsets_are_transactional_records_then_committed(broker):
    pid, epoch = init(broker, "tx")
    assert add_offsets(broker, "tx", pid, epoch, "g") == ERR.NONE
    body = broker.call(ApiKey.TXN_OFFSET_COMMIT, 3, transactional_id="tx", group_id="g",
                       producer_id=pid, producer_epoch=epoch, topics=[{"name": "t", "partitions": [
                           {"partition_index": 0, "committed_offset": 9,
                            "committed_metadata": ""}]}])
    assert body["topics"][0]["partitions"][0]["error_code"] == ERR.NONE
    assert end_txn(broker, "tx", pid, epoch, commit=True) == ERR.NONE
    batches = stored(broker, OFFSETS, partition_for("g", 50))
    (data_header, [record]), (marker_header, _) = batches
    assert data_header.is_transactional and data_header.producer_id == pid
    assert decode_group_record(record.key, record.value).value["offset"] == 9
    assert marker_header.is_control and marker_header.producer_id == pid


def test_a_consumer_protocol_group_is_written_as_kafkas_consumer_group_records(broker):
    def heartbeat(epoch: int, owned=None) -> dict:
        return broker.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="cg", member_id="m-1",
                           member_epoch=epoch, rebalance_timeout_ms=60_000,
                           subscribed_topic_names=["t"], topic_partitions=owned or [])
    heartbeat(0)
    body = heartbeat(1)
    written = [(r.record, r.member_id) for r in group_records(broker, "cg")]
    assert set(written) == {
        ("ConsumerGroupMemberMetadata", "m-1"), ("ConsumerGroupMetadata", None),
        ("ConsumerGroupTargetAssignmentMember", "m-1"),
        ("ConsumerGroupTargetAssignmentMetadata", None),
        ("ConsumerGroupCurrentMemberAssignment", "m-1")}
    [current] = [r for r in group_records(broker, "cg")
                 if r.record == "ConsumerGroupCurrentMemberAssignment"][-1:]
    assert current.value["member_epoch"] == body["member_epoch"]
    # A heartbeat that changes nothing writes nothing.
    count = len(group_records(broker, "cg"))
    heartbeat(body["member_epoch"], body["assignment"]["topic_partitions"])
    assert len(group_records(broker, "cg")) == count


def test_an_owner_loads_the_readable_batches_and_skips_a_corrupt_one(caplog):
    good = [build_key_value_batch([(b"k%d" % i, b"v")], timestamp=1, base_offset=i)
            for i in (0, 2)]
    corrupt = bytearray(build_key_value_batch([(b"k1", b"v")], timestamp=1, base_offset=1))
    corrupt[-1] ^= 0xFF   # the CRC no longer matches

    class Log:
        def read_batches(self, topic, index):
            assert (topic, index) == (OFFSETS, 3)
            for data in (good[0], bytes(corrupt), good[1]):
                yield read_header(memoryview(data)), data

    with caplog.at_level(logging.ERROR):
        loaded = list(loaded_batches(Log(), OFFSETS, 3,
                                     RateLimitedLog(logging.getLogger("test-loader"))))
    assert [(h.base_offset, [r.key for r in records]) for h, records in loaded] == \
        [(0, [b"k0"]), (2, [b"k2"])]
    assert "Skipping an unreadable batch at offset 1 of __consumer_offsets-3" in caplog.text
