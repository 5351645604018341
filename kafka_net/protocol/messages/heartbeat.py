"""Heartbeat (API key 12): versions 0-4, flexible from v4.

Wire schema of ``HeartbeatRequest.json`` / ``HeartbeatResponse.json``.

Version notes:

* v1: response gains throttle_time_ms.  v2: no wire change.
* v3: request gains group_instance_id (KIP-345).
* v4: flexible versions.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Field, Schema

REQUEST = Schema(
    "HeartbeatRequest", valid="0-4", flexible="4+",
    fields=[
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, versions="3+", nullable="3+", default=None),
    ])

RESPONSE = Schema(
    "HeartbeatResponse", valid="0-4", flexible="4+",
    fields=[
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("error_code", INT16),
    ])
