"""DeleteGroups (API key 42): versions 0-3, flexible from v2.

Wire schema of ``DeleteGroupsRequest.json`` / ``DeleteGroupsResponse.json``
(KIP-229).

Version notes:

* v1: no wire change (responses sent before throttling).
* v2: flexible versions.  (Kafka 4 marks v0 deprecated but still serves it.)
* v3: each result gains ErrorMessage (KIP-1331, Kafka 4.4), where a streams
  group whose stored topology description could not be deleted is answered
  GROUP_DELETION_FAILED; an older version gets UNKNOWN_SERVER_ERROR, no message.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "DeleteGroupsRequest", valid="0-3", flexible="2+",
    fields=[
        Field("groups_names", Array(STRING)),
    ])

RESPONSE = Schema(
    "DeleteGroupsResponse", valid="0-3", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("group_id", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, versions="3+", nullable="3+", default=None),
        ))),
    ])
