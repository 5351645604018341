"""JoinGroup (API key 11): versions 0-9, flexible from v6.

Wire schema of ``JoinGroupRequest.json`` / ``JoinGroupResponse.json``.

Version notes:

* v1: request gains rebalance_timeout_ms (v0: the session timeout is used).
* v2: response gains throttle_time_ms.  v3: no wire change.
* v4: no wire change; a member joining with an empty member_id gets
  MEMBER_ID_REQUIRED and must rejoin with the assigned id (KIP-394).
* v5: group_instance_id for static membership (KIP-345).
* v6: flexible versions.
* v7: response gains protocol_type; protocol_name becomes nullable (KIP-559).
* v8: request gains reason (KIP-800).
* v9: response gains skip_assignment.

Kafka deprecates v0-v1.
"""

from kafka_net.protocol.schema import (
    BOOL, BYTES, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "JoinGroupRequest", valid="0-9", flexible="6+",
    fields=[
        Field("group_id", STRING),
        Field("session_timeout_ms", INT32),
        Field("rebalance_timeout_ms", INT32, versions="1+", default=-1),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, versions="5+", nullable="5+", default=None),
        Field("protocol_type", STRING),
        Field("protocols", Array(Struct(
            Field("name", STRING),
            Field("metadata", BYTES),
        ))),
        Field("reason", STRING, versions="8+", nullable="8+", default=None),
    ])

RESPONSE = Schema(
    "JoinGroupResponse", valid="0-9", flexible="6+",
    fields=[
        Field("throttle_time_ms", INT32, versions="2+"),
        Field("error_code", INT16),
        Field("generation_id", INT32, default=-1),
        Field("protocol_type", STRING, versions="7+", nullable="7+", default=None),
        Field("protocol_name", STRING, nullable="7+"),
        Field("leader", STRING),
        Field("skip_assignment", BOOL, versions="9+"),
        Field("member_id", STRING),
        Field("members", Array(Struct(
            Field("member_id", STRING),
            Field("group_instance_id", STRING, versions="5+", nullable="5+", default=None),
            Field("metadata", BYTES),
        ))),
    ])
