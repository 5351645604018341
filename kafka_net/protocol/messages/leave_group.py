"""LeaveGroup (API key 13): versions 0-5, flexible from v4.

Wire schema of ``LeaveGroupRequest.json`` / ``LeaveGroupResponse.json``.

Version notes:

* v1: response gains throttle_time_ms.  v2: no wire change.
* v3: batch mode (KIP-345): the request's single member_id becomes the
  ``members`` array (member_id + group_instance_id) and the response gains a
  per-member ``members`` array.
* v4: flexible versions.
* v5: request members gain reason (KIP-800).
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "LeaveGroupRequest", valid="0-5", flexible="4+",
    fields=[
        Field("group_id", STRING),
        Field("member_id", STRING, versions="0-2"),
        Field("members", Array(Struct(
            Field("member_id", STRING, versions="3+"),
            Field("group_instance_id", STRING, versions="3+", nullable="3+", default=None),
            Field("reason", STRING, versions="5+", nullable="5+", default=None),
        )), versions="3+"),
    ])

RESPONSE = Schema(
    "LeaveGroupResponse", valid="0-5", flexible="4+",
    fields=[
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("error_code", INT16),
        Field("members", Array(Struct(
            Field("member_id", STRING, versions="3+"),
            Field("group_instance_id", STRING, versions="3+", nullable="3+"),
            Field("error_code", INT16, versions="3+"),
        )), versions="3+"),
    ])
