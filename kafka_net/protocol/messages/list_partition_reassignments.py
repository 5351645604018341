"""ListPartitionReassignments (API key 46): version 0, flexible in every version.

Wire schema of ``ListPartitionReassignmentsRequest.json`` /
``ListPartitionReassignmentsResponse.json``.

The reassignments in progress (KIP-455); ``topics`` null means all.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "ListPartitionReassignmentsRequest", valid="0", flexible="0+",
    fields=[
        Field("timeout_ms", INT32, default=60000),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partition_indexes", Array(INT32)),
        )), nullable="0+", default=None),
    ])

RESPONSE = Schema(
    "ListPartitionReassignmentsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("replicas", Array(INT32)),
                Field("adding_replicas", Array(INT32)),
                Field("removing_replicas", Array(INT32)),
            ))),
        ))),
    ])
