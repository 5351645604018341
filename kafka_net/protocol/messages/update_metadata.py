"""UpdateMetadata (API key 6): versions 0-8, flexible from v6.

Wire schema of ``UpdateMetadataRequest.json`` / ``UpdateMetadataResponse.json``.

The ZooKeeper-mode controller pushing cluster metadata to brokers.  Removed
with ZooKeeper mode in Kafka 4.0; decode-only here.

Version notes:

* v1: brokers list endpoints; v2: rack; v3: endpoint listener names.
* v4: offline_replicas.  v5: partitions grouped by topic, broker_epoch.
* v6: flexible versions.  v7: topic ids.
* v8: is_kraft_controller and a tagged type (KIP-866).
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

_UPDATE_METADATA_PARTITION_STATE = Struct(
    Field("topic_name", STRING, versions="0-4"),
    Field("partition_index", INT32),
    Field("controller_epoch", INT32),
    Field("leader", INT32),
    Field("leader_epoch", INT32),
    Field("isr", Array(INT32)),
    Field("zk_version", INT32),
    Field("replicas", Array(INT32)),
    Field("offline_replicas", Array(INT32), versions="4+"),
)

REQUEST = Schema(
    "UpdateMetadataRequest", valid="0-8", flexible="6+",
    fields=[
        Field("controller_id", INT32),
        Field("is_kraft_controller", BOOL, versions="8+"),
        Field("type", INT8, versions="8+", tag=0),
        Field("controller_epoch", INT32),
        Field("broker_epoch", INT64, versions="5+", default=-1),
        Field("ungrouped_partition_states", Array(_UPDATE_METADATA_PARTITION_STATE),
              versions="0-4"),
        Field("topic_states", Array(Struct(
            Field("topic_name", STRING, versions="5+"),
            Field("topic_id", UUID, versions="7+"),
            Field("partition_states", Array(_UPDATE_METADATA_PARTITION_STATE), versions="5+"),
        )), versions="5+"),
        Field("live_brokers", Array(Struct(
            Field("id", INT32),
            Field("v0_host", STRING, versions="0"),
            Field("v0_port", INT32, versions="0"),
            Field("endpoints", Array(Struct(
                Field("port", INT32, versions="1+"),
                Field("host", STRING, versions="1+"),
                Field("listener", STRING, versions="3+"),
                Field("security_protocol", INT16, versions="1+"),
            )), versions="1+"),
            Field("rack", STRING, versions="2+", nullable="0+"),
        ))),
    ])

RESPONSE = Schema(
    "UpdateMetadataResponse", valid="0-8", flexible="6+",
    fields=[
        Field("error_code", INT16),
    ])

