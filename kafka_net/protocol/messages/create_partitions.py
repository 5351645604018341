"""CreatePartitions (API key 37): versions 0-3, flexible from v2.

Wire schema of ``CreatePartitionsRequest.json`` / ``CreatePartitionsResponse.json``.

Version notes:

* v1: no wire change (throttled responses sent before throttling).
* v2: flexible versions.
* v3: no wire change (THROTTLING_QUOTA_EXCEEDED, KIP-599).

``count`` is the new total number of partitions; ``assignments`` (null = let
the broker choose) lists the replicas of each new partition.
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "CreatePartitionsRequest", valid="0-3", flexible="2+",
    fields=[
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("count", INT32),
            Field("assignments", Array(Struct(
                Field("broker_ids", Array(INT32)),
            )), nullable="0+"),
        ))),
        Field("timeout_ms", INT32),
        Field("validate_only", BOOL),
    ])

RESPONSE = Schema(
    "CreatePartitionsResponse", valid="0-3", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("name", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
        ))),
    ])
