"""SyncGroup (API key 14): versions 0-5, flexible from v4.

Wire schema of ``SyncGroupRequest.json`` / ``SyncGroupResponse.json``.

Version notes:

* v1: response gains throttle_time_ms.  v2: no wire change.
* v3: request gains group_instance_id (KIP-345).
* v4: flexible versions.
* v5: request and response gain protocol_type and protocol_name (KIP-559);
  the broker rejects a request whose values disagree with the group's.
"""

from kafka_net.protocol.schema import (
    BYTES, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "SyncGroupRequest", valid="0-5", flexible="4+",
    fields=[
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, versions="3+", nullable="3+", default=None),
        Field("protocol_type", STRING, versions="5+", nullable="5+", default=None),
        Field("protocol_name", STRING, versions="5+", nullable="5+", default=None),
        Field("assignments", Array(Struct(
            Field("member_id", STRING),
            Field("assignment", BYTES),
        ))),
    ])

RESPONSE = Schema(
    "SyncGroupResponse", valid="0-5", flexible="4+",
    fields=[
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("error_code", INT16),
        Field("protocol_type", STRING, versions="5+", nullable="5+", default=None),
        Field("protocol_name", STRING, versions="5+", nullable="5+", default=None),
        Field("assignment", BYTES),
    ])
