"""The records of Kafka's internal topics: ``__consumer_offsets`` and ``__transaction_state``.

The group coordinator and the transaction coordinator keep their state as
records in these compacted topics (Kafka's ``GroupMetadataManager`` and
``TransactionStateManager``).  Each record's key and value are a big-endian
int16 *version* followed by the struct of that version, from Kafka's message
definitions (group-coordinator/src/main/resources/common/message/*.json and
transaction-coordinator/.../TransactionLog*.json):

=====================  ========  =====================================================
key (version)          schema    value schema (version kafka-net writes)
=====================  ========  =====================================================
0, 1                   OffsetCommitKey: group, topic, partition
                                 OffsetCommitValue (3; 1 when an expire timestamp is
                                 set, as Kafka's ``offsetCommitValueVersion``)
2                      GroupMetadataKey: group
                                 GroupMetadataValue (3)
3, 5, 6, 7, 8           KIP-848 consumer groups: ConsumerGroupMetadataKey (group) ->
                       ConsumerGroupMetadataValue (epoch); ConsumerGroupMemberMetadata
                       (group, member); ConsumerGroupTargetAssignmentMetadata (group);
                       ConsumerGroupTargetAssignmentMember (group, member);
                       ConsumerGroupCurrentMemberAssignment (group, member); values v0
17, 19-23               KIP-1071 streams groups: StreamsGroupMetadata (epoch,
                       metadata hash; tagged: validated topology epoch, last
                       assignment configs, KIP-1331's stored description epoch
                       and, tag 10000, kafka-net's stored topology description),
                       StreamsGroupMemberMetadata, StreamsGroupTopology,
                       StreamsGroupTargetAssignmentMetadata / ...Member,
                       StreamsGroupCurrentMemberAssignment; values v0
0 (transaction log)    TransactionLogKey: transactionalId
                                 TransactionLogValue (0)
=====================  ========  =====================================================

A null value is a tombstone: the offset, group or transactional id is gone
(compaction drops the key's older records).  The key's version says which
record it is in ``__consumer_offsets``; Kafka's own formatters
(``kafka-console-consumer --formatter ...OffsetsMessageFormatter``,
``GroupMetadataMessageFormatter``, ``TransactionLogMessageFormatter``) read
them, and so does :func:`decode_group_record` here.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafka_net.protocol.schema import (
    BYTES, INT8, INT16, INT32, INT64, STRING, UINT16, UUID, Array, Field, Schema, Struct)
from kafka_net.protocol.streams_topology_description import TOPOLOGY_DESCRIPTION

_VERSION = struct.Struct(">h")
# StreamsGroupMetadataValue's tag for the topology description kafka-net stores.
TOPOLOGY_DESCRIPTION_TAG = 10000

OFFSET_COMMIT_KEY = Schema(
    "OffsetCommitKey", valid="0-1", flexible="none",
    fields=[
        Field("group", STRING),
        Field("topic", STRING),
        Field("partition", INT32),
    ])

OFFSET_COMMIT_VALUE = Schema(
    "OffsetCommitValue", valid="0-4", flexible="4+",
    fields=[
        Field("offset", INT64),
        Field("leader_epoch", INT32, versions="3+", default=-1),
        Field("metadata", STRING),
        Field("commit_timestamp", INT64),
        Field("expire_timestamp", INT64, versions="1", default=-1),
    ])

GROUP_METADATA_KEY = Schema(
    "GroupMetadataKey", valid="2", flexible="none",
    fields=[Field("group", STRING, versions="2")])

GROUP_METADATA_VALUE = Schema(
    "GroupMetadataValue", valid="0-4", flexible="4+",
    fields=[
        Field("protocol_type", STRING),
        Field("generation", INT32),
        Field("protocol", STRING, nullable="0+"),
        Field("leader", STRING, nullable="0+"),
        Field("current_state_timestamp", INT64, versions="2+", default=-1),
        Field("members", Array(Struct(
            Field("member_id", STRING),
            Field("group_instance_id", STRING, versions="3+", nullable="3+", default=None),
            Field("client_id", STRING),
            Field("client_host", STRING),
            Field("rebalance_timeout", INT32, versions="1+", default=-1),
            Field("session_timeout", INT32),
            Field("subscription", BYTES),
            Field("assignment", BYTES),
        ))),
    ])

# -- KIP-848 consumer groups (the new group coordinator's records) --------------------

def _group_key(name: str, version: int, member: bool = False) -> Schema:
    fields = [Field("group_id", STRING, versions=str(version))]
    if member:
        fields.append(Field("member_id", STRING, versions=str(version)))
    return Schema(name, valid=str(version), flexible="none", fields=fields)


_TOPIC_PARTITIONS = Array(Struct(Field("topic_id", UUID), Field("partitions", Array(INT32))))

CONSUMER_GROUP_METADATA_KEY = _group_key("ConsumerGroupMetadataKey", 3)
CONSUMER_GROUP_METADATA_VALUE = Schema(
    "ConsumerGroupMetadataValue", valid="0", flexible="0+", fields=[Field("epoch", INT32)])
CONSUMER_GROUP_MEMBER_METADATA_KEY = _group_key("ConsumerGroupMemberMetadataKey", 5, True)
CONSUMER_GROUP_MEMBER_METADATA_VALUE = Schema(
    "ConsumerGroupMemberMetadataValue", valid="0", flexible="0+",
    fields=[
        Field("instance_id", STRING, nullable="0+"),
        Field("rack_id", STRING, nullable="0+"),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", Array(STRING)),
        Field("subscribed_topic_regex", STRING, nullable="0+", default=None),
        Field("rebalance_timeout_ms", INT32, default=-1),
        Field("server_assignor", STRING, nullable="0+"),
        Field("classic_member_metadata", Struct(
            Field("session_timeout_ms", INT32),
            Field("supported_protocols", Array(Struct(
                Field("name", STRING), Field("metadata", BYTES)))),
        ), nullable="0+", tag=0, default=None),
    ])
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMetadataKey", 6)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Schema(
    "ConsumerGroupTargetAssignmentMetadataValue", valid="0", flexible="0+",
    fields=[Field("assignment_epoch", INT32)])
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMemberKey", 7, True)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Schema(
    "ConsumerGroupTargetAssignmentMemberValue", valid="0", flexible="0+",
    fields=[Field("topic_partitions", _TOPIC_PARTITIONS)])
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "ConsumerGroupCurrentMemberAssignmentKey", 8, True)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Schema(
    "ConsumerGroupCurrentMemberAssignmentValue", valid="0", flexible="0+",
    fields=[
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("assigned_partitions", _TOPIC_PARTITIONS),
        Field("partitions_pending_revocation", _TOPIC_PARTITIONS),
    ])

# key version -> (record name, key schema, value schema)
CONSUMER_GROUP_RECORDS = {
    3: ("ConsumerGroupMetadata", CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    5: ("ConsumerGroupMemberMetadata", CONSUMER_GROUP_MEMBER_METADATA_KEY,
        CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: ("ConsumerGroupTargetAssignmentMetadata", CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: ("ConsumerGroupTargetAssignmentMember", CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: ("ConsumerGroupCurrentMemberAssignment", CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
}


# -- KIP-1071 streams groups ---------------------------------------------------------------
# Key versions are the records' apiKeys in Kafka's CoordinatorRecordType (18 was
# StreamsGroupPartitionMetadata, gone since KIP-1101's metadata hash); values v0.

_KEY_VALUE = Struct(Field("key", STRING), Field("value", STRING))
_TASK_IDS = Array(Struct(Field("subtopology_id", STRING), Field("partitions", Array(INT32))))
_STREAMS_TOPIC_INFO = Struct(
    Field("name", STRING),
    Field("partitions", INT32),
    Field("replication_factor", INT16),
    Field("topic_configs", Array(_KEY_VALUE)),
)

STREAMS_GROUP_METADATA_KEY = _group_key("StreamsGroupMetadataKey", 17)
STREAMS_GROUP_METADATA_VALUE = Schema(
    "StreamsGroupMetadataValue", valid="0", flexible="0+",
    fields=[
        Field("epoch", INT32),
        Field("metadata_hash", INT64),
        Field("validated_topology_epoch", INT32, tag=0, default=-1),
        # Kafka's LastAssignmentConfigs: the assignment configs the target was
        # computed with (num.standby.replicas); a change triggers a new assignment.
        Field("last_assignment_configs", Array(_KEY_VALUE), nullable="0+", tag=1,
              default=None),
        # Kafka 4.4 (KIP-1331): the topology epoch whose description the topology
        # description plugin stored, and the one it refused for good.
        Field("stored_description_topology_epoch", INT32, tag=2, default=-1),
        Field("failed_description_topology_epoch", INT32, tag=3, default=-1),
        # kafka-net's own: the stored description itself (Kafka keeps it in its
        # plugin; kafka-net, being the plugin, keeps it with the group).  A tag far
        # above Kafka's, which Kafka's readers skip as any unknown tag.
        Field("topology_description", TOPOLOGY_DESCRIPTION, nullable="0+",
              tag=TOPOLOGY_DESCRIPTION_TAG, default=None),
    ])
# How kafka-net wrote StreamsGroupMetadataValue before it followed Kafka's layout
# (Kafka 4.3.1's, as another implementation's byte-exact tests against it record
# it; an early apache/kafka trunk, 1291a930, had a plain AssignmentConfigs): the
# assignment configs a plain field after the metadata hash, where Kafka has a
# tagged one.  Such a value is still read (see decode_group_record).
_LEGACY_STREAMS_GROUP_METADATA_VALUE = Schema(
    "StreamsGroupMetadataValue", valid="0", flexible="0+",
    fields=[
        Field("epoch", INT32),
        Field("metadata_hash", INT64),
        Field("validated_topology_epoch", INT32, tag=0, default=-1),
        Field("last_assignment_configs", Array(_KEY_VALUE), default=[]),
    ])
STREAMS_GROUP_MEMBER_METADATA_KEY = _group_key("StreamsGroupMemberMetadataKey", 19, True)
STREAMS_GROUP_MEMBER_METADATA_VALUE = Schema(
    "StreamsGroupMemberMetadataValue", valid="0", flexible="0+",
    fields=[
        Field("instance_id", STRING, nullable="0+"),
        Field("rack_id", STRING, nullable="0+"),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout_ms", INT32),
        Field("topology_epoch", INT32),
        Field("process_id", STRING),
        Field("user_endpoint", Struct(Field("host", STRING), Field("port", UINT16)),
              nullable="0+", default=None),
        Field("client_tags", Array(_KEY_VALUE)),
    ])
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key(
    "StreamsGroupTargetAssignmentMetadataKey", 20)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Schema(
    "StreamsGroupTargetAssignmentMetadataValue", valid="0", flexible="0+",
    fields=[Field("assignment_epoch", INT32)])
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "StreamsGroupTargetAssignmentMemberKey", 21, True)
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Schema(
    "StreamsGroupTargetAssignmentMemberValue", valid="0", flexible="0+",
    fields=[
        Field("active_tasks", _TASK_IDS),
        Field("standby_tasks", _TASK_IDS),
        Field("warmup_tasks", _TASK_IDS),
    ])
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "StreamsGroupCurrentMemberAssignmentKey", 22, True)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Schema(
    "StreamsGroupCurrentMemberAssignmentValue", valid="0", flexible="0+",
    fields=[
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("active_tasks", _TASK_IDS),
        Field("standby_tasks", _TASK_IDS),
        Field("warmup_tasks", _TASK_IDS),
        Field("active_tasks_pending_revocation", _TASK_IDS),
        Field("standby_tasks_pending_revocation", _TASK_IDS),
        Field("warmup_tasks_pending_revocation", _TASK_IDS),
    ])
STREAMS_GROUP_TOPOLOGY_KEY = _group_key("StreamsGroupTopologyKey", 23)
STREAMS_GROUP_TOPOLOGY_VALUE = Schema(
    "StreamsGroupTopologyValue", valid="0", flexible="0+",
    fields=[
        Field("epoch", INT32),
        Field("subtopologies", Array(Struct(
            Field("subtopology_id", STRING),
            Field("source_topics", Array(STRING)),
            Field("source_topic_regex", Array(STRING)),
            Field("state_changelog_topics", Array(_STREAMS_TOPIC_INFO)),
            Field("repartition_sink_topics", Array(STRING)),
            Field("repartition_source_topics", Array(_STREAMS_TOPIC_INFO)),
            Field("copartition_groups", Array(Struct(
                Field("source_topics", Array(INT16)),
                Field("source_topic_regex", Array(INT16)),
                Field("repartition_source_topics", Array(INT16)),
            ))),
        ))),
    ])

# key version -> (record name, key schema, value schema); decoded as ConsumerGroupRecord
STREAMS_GROUP_RECORDS = {
    17: ("StreamsGroupMetadata", STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE),
    19: ("StreamsGroupMemberMetadata", STREAMS_GROUP_MEMBER_METADATA_KEY,
         STREAMS_GROUP_MEMBER_METADATA_VALUE),
    20: ("StreamsGroupTargetAssignmentMetadata", STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
         STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    21: ("StreamsGroupTargetAssignmentMember", STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
         STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    22: ("StreamsGroupCurrentMemberAssignment", STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
         STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    23: ("StreamsGroupTopology", STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
}
# Their names (ConsumerGroupRecord.record): what tells a reader of
# __consumer_offsets that a record is a streams group's.
STREAMS_RECORD_NAMES = frozenset(name for name, _key, _value in STREAMS_GROUP_RECORDS.values())


TRANSACTION_LOG_KEY = Schema(
    "TransactionLogKey", valid="0", flexible="none",
    fields=[Field("transactional_id", STRING, versions="0")])

TRANSACTION_LOG_VALUE = Schema(
    "TransactionLogValue", valid="0-1", flexible="1+",
    fields=[
        Field("producer_id", INT64),
        Field("previous_producer_id", INT64, versions="1+", tag=0, default=-1),
        Field("next_producer_id", INT64, versions="1+", tag=1, default=-1),
        Field("producer_epoch", INT16),
        Field("transaction_timeout_ms", INT32),
        Field("transaction_status", INT8),
        Field("transaction_partitions", Array(Struct(
            Field("topic", STRING),
            Field("partition_ids", Array(INT32)),
        )), nullable="0+"),
        Field("transaction_last_update_timestamp_ms", INT64),
        Field("transaction_start_timestamp_ms", INT64),
        Field("client_transaction_version", INT16, versions="1+", tag=2, default=0),
    ])

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3
TRANSACTION_LOG_KEY_VERSION = 0
TRANSACTION_LOG_VALUE_VERSION = 0


class RecordFormatError(ValueError):
    """A key or value that is not one of these records (Kafka's
    ``IllegalStateException("Unknown version ... from the offset message")``)."""


def _encode(schema: Schema, version: int, value: dict) -> bytes:
    buf = bytearray(_VERSION.pack(version))
    schema.encoder(version)(value, buf)   # the compiled codec, straight (per commit)
    return bytes(buf)



def _decode(schema: Schema, data: bytes, whole: bool = False) -> tuple[int, dict]:
    """(version, value); ``whole``: the value must end where ``data`` does."""
    if data is None or len(data) < 2:
        raise RecordFormatError(f"{schema.name}: {len(data or b'')} bytes, no version")
    version = _VERSION.unpack_from(data)[0]
    if version not in schema.valid:
        raise RecordFormatError(f"Unknown {schema.name} version {version}")
    try:
        body, end = schema.decoder(version)(data, 2)
    except Exception as exc:   # a truncated or garbled struct
        raise RecordFormatError(f"{schema.name} v{version}: {exc}") from exc
    if whole and end != len(data):
        raise RecordFormatError(f"{schema.name} v{version}: {len(data) - end} bytes left")
    return version, body


def _decode_streams_group_metadata(data: bytes) -> dict:
    """Kafka's layout; else the one kafka-net wrote before (its assignment configs a
    plain field), which Kafka's layout cannot read whole."""
    try:
        return _decode(STREAMS_GROUP_METADATA_VALUE, data, whole=True)[1]
    except RecordFormatError:
        legacy = _decode(_LEGACY_STREAMS_GROUP_METADATA_VALUE, data, whole=True)[1]
        return {**STREAMS_GROUP_METADATA_VALUE.defaults(), **legacy}


# -- __consumer_offsets ---------------------------------------------------------------

def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _encode(OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY_VERSION,
                   {"group": group, "topic": topic, "partition": partition})


def offset_commit_value(offset: int, leader_epoch: int, metadata: str | None,
                        commit_timestamp: int, expire_timestamp: int = -1) -> bytes:
    version = (OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY if expire_timestamp >= 0
               else OFFSET_COMMIT_VALUE_VERSION)
    return _encode(OFFSET_COMMIT_VALUE, version, {
        "offset": offset, "leader_epoch": leader_epoch, "metadata": metadata or "",
        "commit_timestamp": commit_timestamp, "expire_timestamp": expire_timestamp})


def group_metadata_key(group: str) -> bytes:
    return _encode(GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION, {"group": group})


def group_metadata_value(value: dict) -> bytes:
    """``value``: GroupMetadataValue's fields (snake_case), members as dicts."""
    return _encode(GROUP_METADATA_VALUE, GROUP_METADATA_VALUE_VERSION, value)


class OffsetCommitRecord(NamedTuple):
    group: str
    topic: str
    partition: int
    value: dict | None      # None: a tombstone


class GroupMetadataRecord(NamedTuple):
    group: str
    value: dict | None      # None: a tombstone


class ConsumerGroupRecord(NamedTuple):
    """One of the KIP-848 records: ``record`` is its name without Key/Value."""
    record: str
    group: str
    member_id: str | None   # the member records only
    value: dict | None      # None: a tombstone


def _modern_records(version: int) -> tuple:
    return CONSUMER_GROUP_RECORDS.get(version) or STREAMS_GROUP_RECORDS[version]


def consumer_group_key(version: int, group: str, member_id: str | None = None) -> bytes:
    """The key of a KIP-848 or KIP-1071 group record (its key version picks which)."""
    key_schema = _modern_records(version)[1]
    fields = {"group_id": group} if member_id is None else \
        {"group_id": group, "member_id": member_id}
    return _encode(key_schema, version, fields)


def consumer_group_value(version: int, value: dict) -> bytes:
    """The value (version 0) of the record whose key has ``version``."""
    return _encode(_modern_records(version)[2], 0, value)


def decode_group_record(key: bytes, value: bytes | None
                        ) -> OffsetCommitRecord | GroupMetadataRecord | ConsumerGroupRecord:
    """One record of ``__consumer_offsets`` (Kafka's ``GroupMetadataManager.readMessageKey``
    then the value by the key's type).  Raises RecordFormatError."""
    if key is None or len(key) < 2:
        raise RecordFormatError("a __consumer_offsets record without a versioned key")
    version = _VERSION.unpack_from(key)[0]
    if version in OFFSET_COMMIT_KEY.valid:
        k = _decode(OFFSET_COMMIT_KEY, key)[1]
        v = None if value is None else _decode(OFFSET_COMMIT_VALUE, value)[1]
        return OffsetCommitRecord(k["group"], k["topic"], k["partition"], v)
    if version == GROUP_METADATA_KEY_VERSION:
        k = _decode(GROUP_METADATA_KEY, key)[1]
        v = None if value is None else _decode(GROUP_METADATA_VALUE, value)[1]
        return GroupMetadataRecord(k["group"], v)
    if version in CONSUMER_GROUP_RECORDS or version in STREAMS_GROUP_RECORDS:
        name, key_schema, value_schema = _modern_records(version)
        k = _decode(key_schema, key)[1]
        if value is None:
            v = None
        elif value_schema is STREAMS_GROUP_METADATA_VALUE:
            v = _decode_streams_group_metadata(value)
        else:
            v = _decode(value_schema, value)[1]
        return ConsumerGroupRecord(name, k["group_id"], k.get("member_id"), v)
    raise RecordFormatError(f"Unknown version {version} from the offset message")


# -- __transaction_state ----------------------------------------------------------------

def transaction_log_key(transactional_id: str) -> bytes:
    return _encode(TRANSACTION_LOG_KEY, TRANSACTION_LOG_KEY_VERSION,
                   {"transactional_id": transactional_id})


def transaction_log_value(value: dict, version: int = TRANSACTION_LOG_VALUE_VERSION) -> bytes:
    """``value``: TransactionLogValue's fields (snake_case); ``version`` 1 carries
    the tagged previous/next producer id and client transaction version."""
    return _encode(TRANSACTION_LOG_VALUE, version, value)


def decode_transaction_record(key: bytes, value: bytes | None) -> tuple[str, dict | None]:
    """(transactional id, value or None for a tombstone).  Raises RecordFormatError."""
    transactional_id = _decode(TRANSACTION_LOG_KEY, key)[1]["transactional_id"]
    return transactional_id, None if value is None else _decode(TRANSACTION_LOG_VALUE, value)[1]


# -- the partition a key lives in ---------------------------------------------------------

def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code
    units, in 32-bit two's complement."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: Integer.MIN_VALUE maps to 0, not to itself."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, partition_count: int) -> int:
    """``Utils.abs(key.hashCode()) % partitionCount``: the partition of
    ``__consumer_offsets`` holding a group, or of ``__transaction_state`` a
    transactional id (Kafka's ``partitionFor``)."""
    return kafka_abs(java_string_hash(key)) % partition_count
