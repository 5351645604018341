"""AlterReplicaLogDirs (API key 34): versions 0-2, flexible from v2.

Wire schema of ``AlterReplicaLogDirsRequest.json`` /
``AlterReplicaLogDirsResponse.json``.

Moves replicas between the log directories of a broker (KIP-113).

Request history (from Kafka's JSON):

* Version 1 is the same as version 0.
* Version 2 enables flexible versions.

Response history (from Kafka's JSON):

* Starting in version 1, on quota violation brokers send out responses before
  throttling.
* Version 2 enables flexible versions.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "AlterReplicaLogDirsRequest", valid="0-2", flexible="2+",
    fields=[
        Field("dirs", Array(Struct(
            Field("path", STRING),
            Field("topics", Array(Struct(
                Field("name", STRING),
                Field("partitions", Array(INT32)),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "AlterReplicaLogDirsResponse", valid="0-2", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ))),
        ))),
    ])
