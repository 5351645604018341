"""StopReplica (API key 5): versions 0-4, flexible from v2.

Wire schema of ``StopReplicaRequest.json`` / ``StopReplicaResponse.json``.

The ZooKeeper-mode controller telling a broker to stop (and maybe delete)
replicas.  Removed with ZooKeeper mode in Kafka 4.0; decode-only here.

Version notes:

* v1: request gains broker_epoch; partitions grouped by topic (KIP-380).
* v2: flexible versions.
* v3: per-partition leader_epoch and delete flag (topic_states) replace
  the request-wide delete_partitions.
* v4: is_kraft_controller, second on the wire (KIP-866).
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "StopReplicaRequest", valid="0-4", flexible="2+",
    fields=[
        Field("controller_id", INT32),
        Field("is_kraft_controller", BOOL, versions="4+"),
        Field("controller_epoch", INT32),
        Field("broker_epoch", INT64, versions="1+", default=-1),
        Field("delete_partitions", BOOL, versions="0-2"),
        Field("ungrouped_partitions", Array(Struct(
            Field("topic_name", STRING, versions="0"),
            Field("partition_index", INT32, versions="0"),
        )), versions="0"),
        Field("topics", Array(Struct(
            Field("name", STRING, versions="1-2"),
            Field("partition_indexes", Array(INT32), versions="1-2"),
        )), versions="1-2"),
        Field("topic_states", Array(Struct(
            Field("topic_name", STRING, versions="3+"),
            Field("partition_states", Array(Struct(
                Field("partition_index", INT32, versions="3+"),
                Field("leader_epoch", INT32, versions="3+", default=-1),
                Field("delete_partition", BOOL, versions="3+"),
            )), versions="3+"),
        )), versions="3+"),
    ])

RESPONSE = Schema(
    "StopReplicaResponse", valid="0-4", flexible="2+",
    fields=[
        Field("error_code", INT16),
        Field("partition_errors", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ))),
    ])

