"""The records of __consumer_offsets and __transaction_state, byte for byte as
Kafka's generated classes write them, the partition a key lives in, and the
batch a coordinator wraps them in."""

from __future__ import annotations

import struct

import pytest

from kafka_net.protocol.coordinator_records import (
    GroupMetadataRecord, OffsetCommitRecord, RecordFormatError, consumer_group_key,
    consumer_group_value, decode_group_record, decode_transaction_record, group_metadata_key,
    group_metadata_value, java_string_hash, kafka_abs, offset_commit_key, offset_commit_value,
    partition_for, transaction_log_key, transaction_log_value)
from kafka_net.protocol.records import build_batch, build_key_value_batch


def _str(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def test_offset_commit_key_is_version_1_group_topic_partition():
    assert offset_commit_key("g", "t", 3) == (struct.pack(">h", 1) + _str("g") + _str("t")
                                              + struct.pack(">i", 3))


def test_offset_commit_value_is_version_3_unless_it_expires():
    v3 = offset_commit_value(42, 7, "meta", 1000)
    assert v3 == (struct.pack(">hqi", 3, 42, 7) + _str("meta") + struct.pack(">q", 1000))
    v1 = offset_commit_value(42, 7, None, 1000, expire_timestamp=2000)
    # v1 has no leader epoch and carries the expire timestamp
    assert v1 == struct.pack(">hq", 1, 42) + _str("") + struct.pack(">qq", 1000, 2000)


def test_group_metadata_round_trip_with_a_static_member():
    value = {"protocol_type": "consumer", "generation": 4, "protocol": "range",
             "leader": "m-1", "current_state_timestamp": 99, "members": [{
                 "member_id": "m-1", "group_instance_id": "instance-a", "client_id": "c",
                 "client_host": "/127.0.0.1", "rebalance_timeout": 300000,
                 "session_timeout": 10000, "subscription": b"sub", "assignment": b"asg"}]}
    key, data = group_metadata_key("g"), group_metadata_value(value)
    assert key == struct.pack(">h", 2) + _str("g")
    assert data[:2] == struct.pack(">h", 3)
    assert decode_group_record(key, data) == GroupMetadataRecord("g", value)


def test_tombstones_decode_as_none():
    assert decode_group_record(offset_commit_key("g", "t", 0), None) == \
        OffsetCommitRecord("g", "t", 0, None)
    assert decode_group_record(group_metadata_key("g"), None) == GroupMetadataRecord("g", None)
    assert decode_transaction_record(transaction_log_key("tx"), None) == ("tx", None)


def test_transaction_log_round_trip():
    value = {"producer_id": 1000, "producer_epoch": 3, "transaction_timeout_ms": 60000,
             "transaction_status": 1,
             "transaction_partitions": [{"topic": "t", "partition_ids": [0, 2]}],
             "transaction_last_update_timestamp_ms": 5, "transaction_start_timestamp_ms": 4}
    key = transaction_log_key("tx")
    assert key == struct.pack(">h", 0) + _str("tx")
    txn_id, decoded = decode_transaction_record(key, transaction_log_value(value))
    assert txn_id == "tx"
    assert {k: decoded[k] for k in value} == value


@pytest.mark.parametrize("key, value", [
    (struct.pack(">h", 9) + _str("g"), None),         # unknown key version
    (b"\x00", None),                                  # no version
    (offset_commit_key("g", "t", 0), b"\x00\x03\x00"),  # truncated value
])
def test_garbage_is_a_record_format_error(key, value):
    with pytest.raises(RecordFormatError):
        decode_group_record(key, value)


@pytest.mark.parametrize("text, expected", [
    ("", 0), ("hello", 99162322), ("console-consumer-1", 35782224), ("burrow-group", -1039673043),
    ("polygenelubricants", -2**31),   # Java's famous Integer.MIN_VALUE hash
    ("é\U0001d11e", 1996307),         # UTF-16 code units, a surrogate pair included
    # (expected values printed by Java 17: String.hashCode)
])
def test_java_string_hash(text, expected):
    assert java_string_hash(text) == expected


def test_partition_for_is_utils_abs_of_the_hash_mod_count():
    assert kafka_abs(-2**31) == 0 and kafka_abs(-5) == 5
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("burrow-group", 50) == 1039673043 % 50 == 43


@pytest.mark.parametrize("pairs", [
    [(b"k", b"v")],
    [(b"k" * 70, None), (None, b"v" * 300), (b"", b"")],   # multi-byte lengths, nulls
    [(offset_commit_key("g", "t", p), offset_commit_value(p, -1, "", 5)) for p in range(70)],
])
def test_build_key_value_batch_makes_what_build_batch_makes(pairs):
    fields = dict(producer_id=7, producer_epoch=2, transactional=True)
    assert build_key_value_batch(pairs, 1234, **fields) == \
        build_batch([(k, v, (), 1234) for k, v in pairs], **fields)
    assert build_key_value_batch(pairs, 99) == build_batch([(k, v, (), 99) for k, v in pairs])


def test_consumer_group_records_kip_848():
    assert consumer_group_key(3, "g") == struct.pack(">h", 3) + _str("g")
    # flexible v0: int32 epoch, then an empty tagged-field section
    assert consumer_group_value(3, {"epoch": 7}) == struct.pack(">hi", 0, 7) + b"\x00"
    key = consumer_group_key(5, "g", "m")
    assert key == struct.pack(">h", 5) + _str("g") + _str("m")
    value = consumer_group_value(5, {
        "instance_id": "i", "rack_id": None, "client_id": "c", "client_host": "/h",
        "subscribed_topic_names": ["t"], "rebalance_timeout_ms": 300000,
        "server_assignor": "uniform"})
    decoded = decode_group_record(key, value)
    assert (decoded.record, decoded.group, decoded.member_id) == \
        ("ConsumerGroupMemberMetadata", "g", "m")
    assert decoded.value["subscribed_topic_names"] == ["t"]
    assert decoded.value["classic_member_metadata"] is None
    assert decode_group_record(consumer_group_key(8, "g", "m"), None).value is None


def test_streams_group_records_kip_1071():
    # Kafka's CoordinatorRecordType apiKeys: 17 metadata, 19 member, 20/21 target,
    # 22 current assignment, 23 topology (18 was the dropped partition metadata).
    assert consumer_group_key(17, "g1") == b"\x00\x11\x00\x02g1"
    assert consumer_group_key(19, "g1", "m1") == b"\x00\x13\x00\x02g1\x00\x02m1"
    # flexible v0, Kafka 4.2+'s layout: epoch, metadata hash, then the tagged
    # validated topology epoch (tag 0) and LastAssignmentConfigs (tag 1, a compact
    # array), then KIP-1331's stored description epoch (tag 2)
    value = consumer_group_value(17, {"epoch": 3, "metadata_hash": 9,
                                      "validated_topology_epoch": 1,
                                      "last_assignment_configs": [{"key": "k", "value": "v"}],
                                      "stored_description_topology_epoch": 1})
    assert value == (struct.pack(">hiq", 0, 3, 9) + b"\x03" + b"\x00\x04\x00\x00\x00\x01"
                     + b"\x01\x06\x02\x02k\x02v\x00" + b"\x02\x04\x00\x00\x00\x01")
    decoded = decode_group_record(consumer_group_key(17, "g"), value).value
    assert decoded["validated_topology_epoch"] == 1
    assert decoded["last_assignment_configs"] == [{"key": "k", "value": "v"}]
    assert decoded["stored_description_topology_epoch"] == 1
    assert decoded["topology_description"] is None
    default = consumer_group_value(17, {"epoch": 3, "metadata_hash": 9})
    assert default == struct.pack(">hiq", 0, 3, 9) + b"\x00"   # every tag at its default
    # What kafka-net wrote before (the configs a plain field) still reads.
    legacy = (struct.pack(">hiq", 0, 3, 9) + b"\x02\x02k\x02v\x00"
              + b"\x01\x00\x04\x00\x00\x00\x01")
    decoded = decode_group_record(consumer_group_key(17, "g"), legacy).value
    assert (decoded["validated_topology_epoch"], decoded["last_assignment_configs"],
            decoded["stored_description_topology_epoch"]) == (
        1, [{"key": "k", "value": "v"}], -1)
    for old_empty, validated in ((b"\x01\x00", -1),
                                 (b"\x01\x01\x00\x04\x00\x00\x00\x02", 2)):
        decoded = decode_group_record(consumer_group_key(17, "g"),
                                      struct.pack(">hiq", 0, 3, 9) + old_empty).value
        assert (decoded["last_assignment_configs"], decoded["validated_topology_epoch"]) == \
            ([], validated)
    tasks = [{"subtopology_id": "0", "partitions": [0, 2]}]
    current = consumer_group_value(22, {
        "member_epoch": 4, "previous_member_epoch": 3, "state": 1, "active_tasks": tasks,
        "standby_tasks": [], "warmup_tasks": [], "active_tasks_pending_revocation": tasks,
        "standby_tasks_pending_revocation": [], "warmup_tasks_pending_revocation": []})
    decoded = decode_group_record(consumer_group_key(22, "g", "m"), current)
    assert (decoded.record, decoded.member_id) == ("StreamsGroupCurrentMemberAssignment", "m")
    assert decoded.value["active_tasks_pending_revocation"][0]["partitions"] == [0, 2]
    member = consumer_group_value(19, {
        "instance_id": None, "rack_id": None, "client_id": "c", "client_host": "/h",
        "rebalance_timeout_ms": 1000, "topology_epoch": 1, "process_id": "p",
        "user_endpoint": {"host": "localhost", "port": 8080},
        "client_tags": [{"key": "zone", "value": "a"}]})
    got = decode_group_record(consumer_group_key(19, "g", "m"), member).value
    assert got["user_endpoint"] == {"host": "localhost", "port": 8080}
    assert decode_group_record(consumer_group_key(23, "g"), None).record == \
        "StreamsGroupTopology"
