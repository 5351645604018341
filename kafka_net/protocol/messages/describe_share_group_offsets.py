"""DescribeShareGroupOffsets (API key 90): versions 0-1, flexible (KIP-932).

Each partition's share-partition start offset (SPSO) and leader epoch; a null
``topics`` asks for every partition the group has state for.  v1 (Kafka 4.2,
KIP-1226) adds ``lag``.

Wire schema from franz-go's definitions at adb3a18 (Kafka 4.2).
"""

from kafka_net.protocol.schema import (
    INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "DescribeShareGroupOffsetsRequest", valid="0-1", flexible="0+",
    fields=[
        Field("groups", Array(Struct(
            Field("group_id", STRING),
            Field("topics", Array(Struct(
                Field("topic_name", STRING),
                Field("partitions", Array(INT32)),
            )), nullable="0+", default=None),
        ))),
    ])

RESPONSE = Schema(
    "DescribeShareGroupOffsetsResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("groups", Array(Struct(
            Field("group_id", STRING),
            Field("topics", Array(Struct(
                Field("topic_name", STRING),
                Field("topic_id", UUID),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32),
                    Field("start_offset", INT64),
                    Field("leader_epoch", INT32),
                    Field("lag", INT64, versions="1+", default=-1),
                    Field("error_code", INT16),
                    Field("error_message", STRING, nullable="0+", default=None),
                ))),
            ))),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
        ))),
    ])
