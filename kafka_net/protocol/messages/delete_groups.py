"""DeleteGroups (API key 42): versions 0-2, flexible from v2.

Wire schema of ``DeleteGroupsRequest.json`` / ``DeleteGroupsResponse.json``
(KIP-229).

Version notes:

* v1: no wire change (responses sent before throttling).
* v2: flexible versions.  (Kafka 4 marks v0 deprecated but still serves it.)
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "DeleteGroupsRequest", valid="0-2", flexible="2+",
    fields=[
        Field("groups_names", Array(STRING)),
    ])

RESPONSE = Schema(
    "DeleteGroupsResponse", valid="0-2", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("group_id", STRING),
            Field("error_code", INT16),
        ))),
    ])
