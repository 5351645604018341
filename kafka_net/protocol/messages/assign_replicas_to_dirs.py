"""AssignReplicasToDirs (API key 73): version 0, flexible.

Wire schema of ``AssignReplicasToDirsRequest.json`` / ``AssignReplicasToDirsResponse.json``.

A JBOD KRaft broker telling the controller which log directory holds each
replica (KIP-858).  Decode-only here.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, UUID, Array, Field, Schema, Struct

REQUEST = Schema(
    "AssignReplicasToDirsRequest", valid="0", flexible="0+",
    fields=[
        Field("broker_id", INT32),
        Field("broker_epoch", INT64, default=-1),
        Field("directories", Array(Struct(
            Field("id", UUID),
            Field("topics", Array(Struct(
                Field("topic_id", UUID),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32),
                ))),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "AssignReplicasToDirsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("directories", Array(Struct(
            Field("id", UUID),
            Field("topics", Array(Struct(
                Field("topic_id", UUID),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32),
                    Field("error_code", INT16),
                ))),
            ))),
        ))),
    ])

