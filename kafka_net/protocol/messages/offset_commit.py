"""OffsetCommit (API key 8): versions 0-10, flexible from v8.

Wire schema of ``OffsetCommitRequest.json`` / ``OffsetCommitResponse.json``.

Version notes:

* v1: request gains generation_id_or_member_epoch and member_id; partitions
  gain commit_timestamp (v1 only).
* v2: request gains retention_time_ms (v2-v4; -1 = broker default).
* v3: response gains throttle_time_ms.  v4: no wire change.
* v5: retention_time_ms removed (broker configuration only).
* v6: partitions gain committed_leader_epoch.
* v7: request gains group_instance_id (KIP-345).
* v8: flexible versions.
* v9: no wire change; usable with the new consumer group protocol (KIP-848,
  generation_id_or_member_epoch carries the member epoch).
* v10: topic ids replace topic names, in request and response (KIP-848); an
  unknown id is answered UNKNOWN_TOPIC_ID.

Kafka deprecates v0-v1 (removed in Kafka 4.0).
"""

from kafka_net.protocol.schema import (
    INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "OffsetCommitRequest", valid="0-10", flexible="8+",
    fields=[
        Field("group_id", STRING),
        Field("generation_id_or_member_epoch", INT32, versions="1+", default=-1),
        Field("member_id", STRING, versions="1+"),
        Field("group_instance_id", STRING, versions="7+", nullable="7+", default=None),
        Field("retention_time_ms", INT64, versions="2-4", default=-1),  # -1: broker default
        Field("topics", Array(Struct(
            Field("name", STRING, versions="0-9"),
            Field("topic_id", UUID, versions="10+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("committed_offset", INT64),
                Field("committed_leader_epoch", INT32, versions="6+", default=-1),
                Field("commit_timestamp", INT64, versions="1", default=-1),  # v1 only
                Field("committed_metadata", STRING, nullable="0+"),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "OffsetCommitResponse", valid="0-10", flexible="8+",
    fields=[
        Field("throttle_time_ms", INT32, versions="3+"),
        Field("topics", Array(Struct(
            Field("name", STRING, versions="0-9"),
            Field("topic_id", UUID, versions="10+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ))),
        ))),
    ])
