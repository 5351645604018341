"""OffsetFetch (API key 9): versions 0-10, flexible from v6.

Wire schema of ``OffsetFetchRequest.json`` / ``OffsetFetchResponse.json``.

Version notes:

* v0: offsets read from ZooKeeper; v1+: from ``__consumer_offsets``.
* v2: request ``topics`` may be null (= all topics); response gains a
  top-level error_code.
* v3: response gains throttle_time_ms.  v4: no wire change.
* v5: partitions gain committed_leader_epoch.
* v6: flexible versions.
* v7: request gains require_stable (UNSTABLE_OFFSET_COMMIT may be returned).
* v8: several groups per request (``groups`` replaces group_id/topics in the
  request and topics/error_code in the response).
* v9: groups gain member_id and member_epoch (KIP-848).
* v10: topic ids replace topic names, in request and response (KIP-848); an
  unknown id is answered UNKNOWN_TOPIC_ID.

Kafka deprecates v0.
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "OffsetFetchRequest", valid="0-10", flexible="6+",
    fields=[
        Field("group_id", STRING, versions="0-7"),
        Field("topics", Array(Struct(
            Field("name", STRING, versions="0-7"),
            Field("partition_indexes", Array(INT32), versions="0-7"),
        )), versions="0-7", nullable="2-7"),  # null (v2+): all topics
        Field("groups", Array(Struct(
            Field("group_id", STRING, versions="8+"),
            Field("member_id", STRING, versions="9+", nullable="9+", default=None),
            Field("member_epoch", INT32, versions="9+", default=-1),
            Field("topics", Array(Struct(
                Field("name", STRING, versions="8-9"),
                Field("topic_id", UUID, versions="10+"),
                Field("partition_indexes", Array(INT32), versions="8+"),
            )), versions="8+", nullable="8+"),  # null: all topics
        )), versions="8+"),
        Field("require_stable", BOOL, versions="7+"),
    ])

RESPONSE = Schema(
    "OffsetFetchResponse", valid="0-10", flexible="6+",
    fields=[
        Field("throttle_time_ms", INT32, versions="3+"),
        Field("topics", Array(Struct(
            Field("name", STRING, versions="0-7"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32, versions="0-7"),
                Field("committed_offset", INT64, versions="0-7"),
                Field("committed_leader_epoch", INT32, versions="5-7", default=-1),
                Field("metadata", STRING, versions="0-7", nullable="0-7"),
                Field("error_code", INT16, versions="0-7"),
            )), versions="0-7"),
        )), versions="0-7"),
        Field("error_code", INT16, versions="2-7"),
        Field("groups", Array(Struct(
            Field("group_id", STRING, versions="8+"),
            Field("topics", Array(Struct(
                Field("name", STRING, versions="8-9"),
                Field("topic_id", UUID, versions="10+"),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32, versions="8+"),
                    Field("committed_offset", INT64, versions="8+"),
                    Field("committed_leader_epoch", INT32, versions="8+", default=-1),
                    Field("metadata", STRING, versions="8+", nullable="8+"),
                    Field("error_code", INT16, versions="8+"),
                )), versions="8+"),
            )), versions="8+"),
            Field("error_code", INT16, versions="8+"),
        )), versions="8+"),
    ])
