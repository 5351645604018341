"""OffsetForLeaderEpoch (API key 23): versions 0-4, flexible from v4.

Wire schema of ``OffsetForLeaderEpochRequest.json`` / ``OffsetForLeaderEpochResponse.json``.

Version notes:

* v1: response partitions gain leader_epoch.
* v2: request partitions gain current_leader_epoch (fencing); response gains
  throttle_time_ms.
* v3: request gains replica_id (default -2, a "debug" consumer that may see
  beyond the high watermark; followers send their broker id).
* v4: flexible versions.

librdkafka sends v2 to validate positions that carry a leader epoch; a broker
that reports leader_epoch -1 everywhere never receives it.
"""

from kafka_net.protocol.schema import (
    INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "OffsetForLeaderEpochRequest", valid="0-4", flexible="4+",
    fields=[
        Field("replica_id", INT32, versions="3+", default=-2),  # -2 debug consumer, -1 consumer
        Field("topics", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(Struct(
                Field("partition", INT32),
                Field("current_leader_epoch", INT32, versions="2+", default=-1),
                Field("leader_epoch", INT32),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "OffsetForLeaderEpochResponse", valid="0-4", flexible="4+",
    fields=[
        Field("throttle_time_ms", INT32, versions="2+"),
        Field("topics", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(Struct(
                Field("error_code", INT16),
                Field("partition", INT32),
                Field("leader_epoch", INT32, versions="1+", default=-1),
                Field("end_offset", INT64, default=-1),
            ))),
        ))),
    ])
