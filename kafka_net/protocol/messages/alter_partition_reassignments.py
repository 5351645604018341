"""AlterPartitionReassignments (API key 45): versions 0-1, flexible in every version.

Wire schema of ``AlterPartitionReassignmentsRequest.json`` /
``AlterPartitionReassignmentsResponse.json``.

Starts or cancels (null ``replicas``) partition reassignments (KIP-455).

Version notes:

* v1: allow_replication_factor_change (default true) in the request and,
  echoed, in the response (KIP-860): false refuses a target that changes a
  partition's replication factor.
"""

from kafka_net.protocol.schema import BOOL, INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "AlterPartitionReassignmentsRequest", valid="0-1", flexible="0+",
    fields=[
        Field("timeout_ms", INT32, default=60000),
        Field("allow_replication_factor_change", BOOL, versions="1+", default=True),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("replicas", Array(INT32), nullable="0+", default=None),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "AlterPartitionReassignmentsResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("allow_replication_factor_change", BOOL, versions="1+", default=True),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("responses", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
            ))),
        ))),
    ])
