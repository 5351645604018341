"""OffsetDelete (API key 47): version 0 only, not flexible.

Wire schema of ``OffsetDeleteRequest.json`` / ``OffsetDeleteResponse.json``
(KIP-496): delete a group's committed offsets for some partitions.

Note the response's field order: the top-level error_code comes *before*
throttle_time_ms.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "OffsetDeleteRequest", valid="0", flexible="none",
    fields=[
        Field("group_id", STRING),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "OffsetDeleteResponse", valid="0", flexible="none",
    fields=[
        Field("error_code", INT16),
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ))),
        ))),
    ])
