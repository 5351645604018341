"""ListOffsets (API key 2): versions 0-11, flexible from v6.

Wire schema of ``ListOffsetsRequest.json`` / ``ListOffsetsResponse.json``.

Version notes:

* v0: request carries max_num_offsets; response returns old_style_offsets
  (an array).  From v1 a single timestamp/offset pair is returned.
* v2: request gains isolation_level; response gains throttle_time_ms.
* v3: no wire change.
* v4: request gains current_leader_epoch; response gains leader_epoch.
* v5: no wire change (OFFSET_NOT_AVAILABLE).
* v6: flexible versions.
* v7: timestamp -3 = max timestamp (KIP-734).
* v8: timestamp -4 = local log start offset (KIP-405).
* v9: timestamp -5 = last tiered offset (KIP-1005).
* v10: request gains timeout_ms (async remote list offsets, KIP-1075).
* v11: timestamp -6 = earliest pending upload offset (KIP-1023): the first
  offset not yet copied to tiered storage.  With no tiered storage (ours)
  Kafka answers offset -1.

Special timestamps: -1 latest, -2 earliest.  Kafka deprecates v0.
"""

from kafka_net.protocol.schema import (
    INT8, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "ListOffsetsRequest", valid="0-11", flexible="6+",
    fields=[
        Field("replica_id", INT32),  # -1 for consumers (no default in Kafka's JSON)
        Field("isolation_level", INT8, versions="2+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("current_leader_epoch", INT32, versions="4+", default=-1),
                # -1 latest, -2 earliest, -3 max timestamp (v7+), -4 earliest local (v8+),
                # -5 latest tiered (v9+), -6 earliest pending upload (v11+), else the
                # first offset with a timestamp >= it.
                Field("timestamp", INT64),
                Field("max_num_offsets", INT32, versions="0", default=1),
            ))),
        ))),
        Field("timeout_ms", INT32, versions="10+"),
    ])

RESPONSE = Schema(
    "ListOffsetsResponse", valid="0-11", flexible="6+",
    fields=[
        Field("throttle_time_ms", INT32, versions="2+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("old_style_offsets", Array(INT64), versions="0"),
                Field("timestamp", INT64, versions="1+", default=-1),
                Field("offset", INT64, versions="1+", default=-1),
                Field("leader_epoch", INT32, versions="4+", default=-1),
            ))),
        ))),
    ])
