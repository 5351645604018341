"""DeleteShareGroupOffsets (API key 92): version 0, flexible (KIP-932).

Forgets the share-partition state of whole topics of an empty share group.

Wire schema from franz-go's definitions at adb3a18 (Kafka 4.2).
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, UUID, Array, Field, Schema, Struct

REQUEST = Schema(
    "DeleteShareGroupOffsetsRequest", valid="0", flexible="0+",
    fields=[
        Field("group_id", STRING),
        Field("topics", Array(Struct(Field("topic_name", STRING)))),
    ])

RESPONSE = Schema(
    "DeleteShareGroupOffsetsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("responses", Array(Struct(
            Field("topic_name", STRING),
            Field("topic_id", UUID),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
        ))),
    ])
