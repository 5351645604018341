"""DeleteTopics (API key 20): versions 0-6, flexible from v4.

Wire schema of ``DeleteTopicsRequest.json`` / ``DeleteTopicsResponse.json``.

Version notes:

* v1: response gains throttle_time_ms.  v2: no wire change.
* v3: no wire change (TOPIC_DELETION_DISABLED).
* v4: flexible versions.
* v5: response gains error_message (THROTTLING_QUOTA_EXCEEDED, KIP-599).
* v6: the request's ``topic_names`` becomes ``topics`` (name or topic id,
  name nullable); responses gain topic_id and their name becomes nullable.

Kafka deprecates v0.
"""

from kafka_net.protocol.schema import (
    INT16, INT32, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "DeleteTopicsRequest", valid="0-6", flexible="4+",
    fields=[
        Field("topics", Array(Struct(
            Field("name", STRING, versions="6+", nullable="6+", default=None),
            Field("topic_id", UUID, versions="6+"),
        )), versions="6+"),
        Field("topic_names", Array(STRING), versions="0-5"),  # v0-v5; v6+ uses topics
        Field("timeout_ms", INT32),
    ])

RESPONSE = Schema(
    "DeleteTopicsResponse", valid="0-6", flexible="4+",
    fields=[
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("responses", Array(Struct(
            Field("name", STRING, nullable="6+"),
            Field("topic_id", UUID, versions="6+"),
            Field("error_code", INT16),
            Field("error_message", STRING, versions="5+", nullable="5+", default=None),
        ))),
    ])
