"""LeaderAndIsr (API key 4): versions 0-7, flexible from v4.

Wire schema of ``LeaderAndIsrRequest.json`` / ``LeaderAndIsrResponse.json``.

The ZooKeeper-mode controller telling a broker which partitions it leads or
follows.  Kafka 4.0 removed ZooKeeper mode and the RPC with it, but the key
stays assigned (franz-go still defines it); kafka-net reads it for the
conformance checker and ``kafka-net decode`` and does not serve it.

Version notes:

* v1: partition states gain is_new.
* v2: partition states grouped by topic (KIP-380); request gains broker_epoch.
* v3: adding_replicas / removing_replicas (KIP-455).
* v4: flexible versions.
* v5: request gains type and topic ids; the response groups errors by topic id.
* v6: leader_recovery_state (KIP-704).
* v7: is_kraft_controller (KIP-866, ZooKeeper migration).
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

_LEADER_AND_ISR_PARTITION_STATE = Struct(
    Field("topic_name", STRING, versions="0-1"),
    Field("partition_index", INT32),
    Field("controller_epoch", INT32),
    Field("leader", INT32),
    Field("leader_epoch", INT32),
    Field("isr", Array(INT32)),
    Field("partition_epoch", INT32),
    Field("replicas", Array(INT32)),
    Field("adding_replicas", Array(INT32), versions="3+"),
    Field("removing_replicas", Array(INT32), versions="3+"),
    Field("is_new", BOOL, versions="1+"),
    Field("leader_recovery_state", INT8, versions="6+"),
)

_LEADER_AND_ISR_PARTITION_ERROR = Struct(
    Field("topic_name", STRING, versions="0-4"),
    Field("partition_index", INT32),
    Field("error_code", INT16),
)

REQUEST = Schema(
    "LeaderAndIsrRequest", valid="0-7", flexible="4+",
    fields=[
        Field("controller_id", INT32),
        Field("is_kraft_controller", BOOL, versions="7+"),
        Field("controller_epoch", INT32),
        Field("broker_epoch", INT64, versions="2+", default=-1),
        Field("type", INT8, versions="5+"),
        Field("ungrouped_partition_states", Array(_LEADER_AND_ISR_PARTITION_STATE),
              versions="0-1"),
        Field("topic_states", Array(Struct(
            Field("topic_name", STRING, versions="2+"),
            Field("topic_id", UUID, versions="5+"),
            Field("partition_states", Array(_LEADER_AND_ISR_PARTITION_STATE), versions="2+"),
        )), versions="2+"),
        Field("live_leaders", Array(Struct(
            Field("broker_id", INT32),
            Field("host_name", STRING),
            Field("port", INT32),
        ))),
    ])

RESPONSE = Schema(
    "LeaderAndIsrResponse", valid="0-7", flexible="4+",
    fields=[
        Field("error_code", INT16),
        Field("partition_errors", Array(_LEADER_AND_ISR_PARTITION_ERROR), versions="0-4"),
        Field("topics", Array(Struct(
            Field("topic_id", UUID, versions="5+"),
            Field("partition_errors", Array(_LEADER_AND_ISR_PARTITION_ERROR), versions="5+"),
        )), versions="5+"),
    ])

