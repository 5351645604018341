"""The records of ``__share_group_state``: the share coordinator's state (KIP-932).

Kafka's share coordinator keeps each share-partition's state (its start
offset and the delivery state of its in-flight records) as records in this
compacted internal topic, keyed by (group, topic id, partition).  Each key and
value is a big-endian int16 version then the struct (Kafka's coordinator
record framing, as in ``__consumer_offsets``):

=======  ===================================  ========================================
key      schema                               value (version 0, flexible)
=======  ===================================  ========================================
0        ShareSnapshotKey: group, topic id,   ShareSnapshotValue: snapshot epoch, state
         partition                            epoch, leader epoch, start offset,
                                              delivery complete count (tag 0),
                                              create/write timestamps, state batches
1        ShareUpdateKey: the same             ShareUpdateValue: snapshot epoch, leader
                                              epoch, start offset, delivery complete
                                              count (tag 0), state batches
=======  ===================================  ========================================

A snapshot is the whole state; an update is applied over the last snapshot
(a higher start offset drops the batches before it, its batches replace the
states of their offsets).  Kafka writes a snapshot every
``share.coordinator.snapshot.update.records.per.snapshot`` updates, and so
does kafka-net.  A null value (tombstone) deletes the state
(DeleteShareGroupOffsets, DeleteShareGroupState).  State batches carry
``delivery_state`` 0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED.

The partition of the topic a share-partition's records live in is
``Utils.abs("group:topicId:partition".hashCode()) % numPartitions`` (Kafka's
``SharePartitionKey.asCoordinatorKey``).
"""

from __future__ import annotations

import base64
import struct
from typing import NamedTuple

from kafka_net.protocol.coordinator_records import RecordFormatError, partition_for
from kafka_net.protocol.schema import (
    INT8, INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

_VERSION = struct.Struct(">h")

SNAPSHOT_KEY_VERSION, UPDATE_KEY_VERSION = 0, 1

_STATE_BATCHES = Array(Struct(
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("delivery_state", INT8),
    Field("delivery_count", INT16),
))


def _key(name: str, version: int) -> Schema:
    v = str(version)
    return Schema(name, valid=v, flexible="none", fields=[
        Field("group_id", STRING, versions=v),
        Field("topic_id", UUID, versions=v),
        Field("partition", INT32, versions=v),
    ])


SHARE_SNAPSHOT_KEY = _key("ShareSnapshotKey", SNAPSHOT_KEY_VERSION)
SHARE_UPDATE_KEY = _key("ShareUpdateKey", UPDATE_KEY_VERSION)

SHARE_SNAPSHOT_VALUE = Schema(
    "ShareSnapshotValue", valid="0", flexible="0+",
    fields=[
        Field("snapshot_epoch", INT32),
        Field("state_epoch", INT32),
        Field("leader_epoch", INT32),
        Field("start_offset", INT64),
        Field("delivery_complete_count", INT32, tag=0, default=-1),
        Field("create_timestamp", INT64),
        Field("write_timestamp", INT64),
        Field("state_batches", _STATE_BATCHES),
    ])

SHARE_UPDATE_VALUE = Schema(
    "ShareUpdateValue", valid="0", flexible="0+",
    fields=[
        Field("snapshot_epoch", INT32),
        Field("leader_epoch", INT32),
        Field("start_offset", INT64),
        Field("delivery_complete_count", INT32, tag=0, default=-1),
        Field("state_batches", _STATE_BATCHES),
    ])

_RECORDS = {SNAPSHOT_KEY_VERSION: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
            UPDATE_KEY_VERSION: (SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE)}


class ShareStateRecord(NamedTuple):
    kind: int               # SNAPSHOT_KEY_VERSION or UPDATE_KEY_VERSION
    group_id: str
    topic_id: object        # uuid.UUID
    partition: int
    value: dict | None      # None: a tombstone


def _encode(schema: Schema, version: int, value: dict) -> bytes:
    buf = bytearray(_VERSION.pack(version))
    schema.encoder(version)(value, buf)
    return bytes(buf)


def share_state_key(kind: int, group_id: str, topic_id, partition: int) -> bytes:
    return _encode(_RECORDS[kind][0], kind,
                   {"group_id": group_id, "topic_id": topic_id, "partition": partition})


def share_state_value(kind: int, value: dict) -> bytes:
    """The value (version 0) of a snapshot or update record; ``value`` in snake_case,
    state batches as dicts."""
    return _encode(_RECORDS[kind][1], 0, value)


def decode_share_state_record(key: bytes, value: bytes | None) -> ShareStateRecord:
    """One record of ``__share_group_state``.  Raises RecordFormatError."""
    if key is None or len(key) < 2:
        raise RecordFormatError("a __share_group_state record without a versioned key")
    kind = _VERSION.unpack_from(key)[0]
    if kind not in _RECORDS:
        raise RecordFormatError(f"Unknown version {kind} of a __share_group_state key")
    key_schema, value_schema = _RECORDS[kind]
    try:
        k = key_schema.decode(key, kind, 2)
        v = None
        if value is not None:
            version = _VERSION.unpack_from(value)[0]
            if version not in value_schema.valid:
                raise RecordFormatError(f"Unknown {value_schema.name} version {version}")
            v = value_schema.decode(value, version, 2)
    except RecordFormatError:
        raise
    except Exception as exc:   # a truncated or garbled struct
        raise RecordFormatError(f"{key_schema.name}: {exc}") from exc
    return ShareStateRecord(kind, k["group_id"], k["topic_id"], k["partition"], v)


def share_partition_for(group_id: str, topic_id, partition: int, partition_count: int) -> int:
    """The ``__share_group_state`` partition of a share-partition's records."""
    return partition_for(f"{group_id}:{topic_id_string(topic_id)}:{partition}", partition_count)


def topic_id_string(topic_id) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
