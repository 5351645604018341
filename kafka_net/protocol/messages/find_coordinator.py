"""FindCoordinator (API key 10): versions 0-6, flexible from v3.

Wire schema of ``FindCoordinatorRequest.json`` / ``FindCoordinatorResponse.json``.

Version notes:

* v1: request gains key_type (0 group, 1 transaction, 2 share); response
  gains throttle_time_ms and error_message.  v2: no wire change.
* v3: flexible versions.
* v4: batched lookups (KIP-699): the request's single ``key`` becomes
  ``coordinator_keys`` and the response's single coordinator becomes the
  ``coordinators`` array.
* v5: no wire change (TRANSACTION_ABORTABLE, KIP-890).
* v6: no wire change (share groups, KIP-932: key_type 2).

Kafka deprecates v0.
"""

from kafka_net.protocol.schema import (
    INT8, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "FindCoordinatorRequest", valid="0-6", flexible="3+",
    fields=[
        Field("key", STRING, versions="0-3"),
        Field("key_type", INT8, versions="1+"),  # 0 group, 1 transaction, 2 share (v6)
        Field("coordinator_keys", Array(STRING), versions="4+"),
    ])

RESPONSE = Schema(
    "FindCoordinatorResponse", valid="0-6", flexible="3+",
    fields=[
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("error_code", INT16, versions="0-3"),
        Field("error_message", STRING, versions="1-3", nullable="1-3"),
        Field("node_id", INT32, versions="0-3"),
        Field("host", STRING, versions="0-3"),
        Field("port", INT32, versions="0-3"),
        Field("coordinators", Array(Struct(
            Field("key", STRING, versions="4+"),
            Field("node_id", INT32, versions="4+"),
            Field("host", STRING, versions="4+"),
            Field("port", INT32, versions="4+"),
            Field("error_code", INT16, versions="4+"),
            Field("error_message", STRING, versions="4+", nullable="4+"),
        )), versions="4+"),
    ])
