"""ListGroups (API key 16): versions 0-5, flexible from v3.

Wire schema of ``ListGroupsRequest.json`` / ``ListGroupsResponse.json``.

Version notes:

* v1: response gains throttle_time_ms.  v2: no wire change.
* v3: flexible versions.
* v4: request gains states_filter; groups gain group_state (KIP-518).
* v5: request gains types_filter; groups gain group_type (KIP-848).
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "ListGroupsRequest", valid="0-5", flexible="3+",
    fields=[
        Field("states_filter", Array(STRING), versions="4+"),
        Field("types_filter", Array(STRING), versions="5+"),
    ])

RESPONSE = Schema(
    "ListGroupsResponse", valid="0-5", flexible="3+",
    fields=[
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("error_code", INT16),
        Field("groups", Array(Struct(
            Field("group_id", STRING),
            Field("protocol_type", STRING),
            Field("group_state", STRING, versions="4+"),
            Field("group_type", STRING, versions="5+"),
        ))),
    ])
