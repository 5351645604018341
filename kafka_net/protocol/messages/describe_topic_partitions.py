"""DescribeTopicPartitions (API key 75): version 0, flexible.

Wire schema of ``DescribeTopicPartitionsRequest.json`` /
``DescribeTopicPartitionsResponse.json`` (KIP-966): topic and partition
metadata with eligible leader replicas, paged by a cursor.

Version notes:

* v0: the cursor (request) and next_cursor (response) are nullable structs,
  written with an int8 presence marker.
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, STRING, UUID, Array, Field, Schema, Struct)


def _cursor() -> Struct:
    return Struct(
        Field("topic_name", STRING),
        Field("partition_index", INT32),
    )


REQUEST = Schema(
    "DescribeTopicPartitionsRequest", valid="0", flexible="0+",
    fields=[
        Field("topics", Array(Struct(
            Field("name", STRING),
        ))),
        Field("response_partition_limit", INT32, default=2000),
        Field("cursor", _cursor(), nullable="0+", default=None),
    ])

RESPONSE = Schema(
    "DescribeTopicPartitionsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("error_code", INT16),
            Field("name", STRING, nullable="0+"),
            Field("topic_id", UUID),
            Field("is_internal", BOOL),
            Field("partitions", Array(Struct(
                Field("error_code", INT16),
                Field("partition_index", INT32),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32, default=-1),
                Field("replica_nodes", Array(INT32)),
                Field("isr_nodes", Array(INT32)),
                Field("eligible_leader_replicas", Array(INT32), nullable="0+", default=None),
                Field("last_known_elr", Array(INT32), nullable="0+", default=None),
                Field("offline_replicas", Array(INT32)),
            ))),
            Field("topic_authorized_operations", INT32, default=-2147483648),
        ))),
        Field("next_cursor", _cursor(), nullable="0+", default=None),
    ])
