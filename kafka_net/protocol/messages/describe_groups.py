"""DescribeGroups (API key 15): versions 0-6, flexible from v5.

Wire schema of ``DescribeGroupsRequest.json`` / ``DescribeGroupsResponse.json``.

Version notes:

* v1: response gains throttle_time_ms.  v2: no wire change.
* v3: request gains include_authorized_operations; groups gain
  authorized_operations.
* v4: members gain group_instance_id (KIP-345).
* v5: flexible versions.
* v6: groups gain error_message; an unknown group is answered
  GROUP_ID_NOT_FOUND instead of a Dead group with no error (KIP-1043).

protocol_data and the members' metadata/assignment are only filled in for a
Stable group; a Dead group has no members.
"""

from kafka_net.protocol.schema import (
    BOOL, BYTES, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "DescribeGroupsRequest", valid="0-6", flexible="5+",
    fields=[
        Field("groups", Array(STRING)),
        Field("include_authorized_operations", BOOL, versions="3+"),
    ])

RESPONSE = Schema(
    "DescribeGroupsResponse", valid="0-6", flexible="5+",
    fields=[
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("groups", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, versions="6+", nullable="6+", default=None),
            Field("group_id", STRING),
            Field("group_state", STRING),
            Field("protocol_type", STRING),
            Field("protocol_data", STRING),
            Field("members", Array(Struct(
                Field("member_id", STRING),
                Field("group_instance_id", STRING, versions="4+", nullable="4+", default=None),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("member_metadata", BYTES),
                Field("member_assignment", BYTES),
            ))),
            # INT32 min = "not requested" (as in Metadata).
            Field("authorized_operations", INT32, versions="3+", default=-2147483648),
        ))),
    ])
