"""Metadata (API key 3): versions 0-13, flexible from v9.

Wire schema of ``MetadataRequest.json`` / ``MetadataResponse.json``.

Version notes:

* v0: ``topics`` empty means **all** topics.
* v1: ``topics`` null means all topics, empty means none; response gains
  rack, controller_id, is_internal.
* v2: response gains cluster_id.
* v3: response gains throttle_time_ms.
* v4: request gains allow_auto_topic_creation (v0-v3 always auto-create).
* v5: partitions gain offline_replicas.
* v7: partitions gain leader_epoch.
* v8: authorized-operations flags (cluster ones only in v8-v10).
* v9: flexible versions.
* v10: topic ids (request and response); request topic name becomes nullable.
* v12: response topic name becomes nullable (topics looked up by id).
* v13: response gains a top-level error_code (KIP-1102): Kafka sets it only
  to REBOOTSTRAP_REQUIRED, telling the client to forget its bootstrap
  metadata and start again from bootstrap.servers.

Behaviour notes live with the handler (:mod:`kafka_net.server.handlers.metadata`).
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, STRING, UUID, Array, Field, Schema, Struct)

# Kafka's "not requested" value for authorized-operations fields.
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

REQUEST = Schema(
    "MetadataRequest", valid="0-13", flexible="9+",
    fields=[
        # -1 (null, v1+) means "all topics"; in v0 an empty array means all.
        Field("topics", Array(Struct(
            Field("topic_id", UUID, versions="10+"),
            Field("name", STRING, nullable="10+"),
        )), nullable="1+"),
        Field("allow_auto_topic_creation", BOOL, versions="4+", default=True),
        Field("include_cluster_authorized_operations", BOOL, versions="8-10"),
        Field("include_topic_authorized_operations", BOOL, versions="8+"),
    ])

RESPONSE = Schema(
    "MetadataResponse", valid="0-13", flexible="9+",
    fields=[
        Field("throttle_time_ms", INT32, versions="3+"),
        Field("brokers", Array(Struct(
            Field("node_id", INT32),
            Field("host", STRING),
            Field("port", INT32),
            Field("rack", STRING, versions="1+", nullable="1+", default=None),
        ))),
        Field("cluster_id", STRING, versions="2+", nullable="2+", default=None),
        Field("controller_id", INT32, versions="1+", default=-1),
        Field("topics", Array(Struct(
            Field("error_code", INT16),
            Field("name", STRING, nullable="12+"),
            Field("topic_id", UUID, versions="10+"),
            Field("is_internal", BOOL, versions="1+"),
            Field("partitions", Array(Struct(
                Field("error_code", INT16),
                Field("partition_index", INT32),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32, versions="7+", default=-1),
                Field("replica_nodes", Array(INT32)),
                Field("isr_nodes", Array(INT32)),
                Field("offline_replicas", Array(INT32), versions="5+"),
            ))),
            Field("topic_authorized_operations", INT32, versions="8+",
                  default=AUTHORIZED_OPERATIONS_OMITTED),
        ))),
        Field("cluster_authorized_operations", INT32, versions="8-10",
              default=AUTHORIZED_OPERATIONS_OMITTED),
        Field("error_code", INT16, versions="13+"),
    ])
