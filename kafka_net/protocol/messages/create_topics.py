"""CreateTopics (API key 19): versions 0-7, flexible from v5.

Wire schema of ``CreateTopicsRequest.json`` / ``CreateTopicsResponse.json``.

Version notes:

* v1: request gains validate_only; response topics gain error_message.
* v2: response gains throttle_time_ms.  v3: no wire change.
* v4: num_partitions / replication_factor may be -1 (broker defaults) even
  without assignments (KIP-464).
* v5: flexible versions; the response returns the topic's num_partitions,
  replication_factor and configs, with a tagged topic_config_error_code
  (KIP-525).
* v6: no wire change (THROTTLING_QUOTA_EXCEEDED, KIP-599).
* v7: response topics gain topic_id.

Kafka deprecates v0-v1.
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "CreateTopicsRequest", valid="0-7", flexible="5+",
    fields=[
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("num_partitions", INT32),  # -1 (v4+): broker default
            Field("replication_factor", INT16),  # -1 (v4+): broker default
            Field("assignments", Array(Struct(
                Field("partition_index", INT32),
                Field("broker_ids", Array(INT32)),
            ))),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
            ))),
        ))),
        Field("timeout_ms", INT32, default=60000),
        Field("validate_only", BOOL, versions="1+"),
    ])

RESPONSE = Schema(
    "CreateTopicsResponse", valid="0-7", flexible="5+",
    fields=[
        Field("throttle_time_ms", INT32, versions="2+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("topic_id", UUID, versions="7+"),
            Field("error_code", INT16),
            Field("error_message", STRING, versions="1+", nullable="0+"),
            Field("topic_config_error_code", INT16, versions="5+", tag=0),
            Field("num_partitions", INT32, versions="5+", default=-1),
            Field("replication_factor", INT16, versions="5+", default=-1),
            Field("configs", Array(Struct(
                Field("name", STRING, versions="5+"),
                Field("value", STRING, versions="5+", nullable="5+"),
                Field("read_only", BOOL, versions="5+"),
                Field("config_source", INT8, versions="5+", default=-1),
                Field("is_sensitive", BOOL, versions="5+"),
            )), versions="5+", nullable="5+"),
        ))),
    ])
