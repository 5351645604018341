"""AlterPartition (API key 56): versions 0-3, flexible in every version.

Wire schema of ``AlterPartitionRequest.json`` / ``AlterPartitionResponse.json``.

A partition leader asking the controller to change the ISR (KIP-497,
formerly AlterIsr).  Broker to controller; decode-only here.

Version notes:

* v1: leader_recovery_state (KIP-704).
* v2: topics by topic_id.
* v3: new_isr_with_epochs replaces new_isr (KIP-903).
"""

from kafka_net.protocol.schema import (
    INT8, INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "AlterPartitionRequest", valid="0-3", flexible="0+",
    fields=[
        Field("broker_id", INT32),
        Field("broker_epoch", INT64, default=-1),
        Field("topics", Array(Struct(
            Field("topic_name", STRING, versions="0-1"),
            Field("topic_id", UUID, versions="2+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("leader_epoch", INT32),
                Field("new_isr", Array(INT32), versions="0-2"),
                Field("new_isr_with_epochs", Array(Struct(
                    Field("broker_id", INT32, versions="3+"),
                    Field("broker_epoch", INT64, versions="3+", default=-1),
                )), versions="3+"),
                Field("leader_recovery_state", INT8, versions="1+"),
                Field("partition_epoch", INT32),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "AlterPartitionResponse", valid="0-3", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("topics", Array(Struct(
            Field("topic_name", STRING, versions="0-1"),
            Field("topic_id", UUID, versions="2+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32),
                Field("isr", Array(INT32)),
                Field("leader_recovery_state", INT8, versions="1+"),
                Field("partition_epoch", INT32),
            ))),
        ))),
    ])

