"""AlterShareGroupOffsets (API key 91): version 0, flexible (KIP-932).

Sets the start offsets of the share-partitions of an empty share group.

Wire schema from franz-go's definitions at adb3a18 (Kafka 4.2).
"""

from kafka_net.protocol.schema import (
    INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "AlterShareGroupOffsetsRequest", valid="0", flexible="0+",
    fields=[
        Field("group_id", STRING),
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("start_offset", INT64),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "AlterShareGroupOffsetsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("responses", Array(Struct(
            Field("topic_name", STRING),
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
            ))),
        ))),
    ])
