"""AlterClientQuotas (API key 49): versions 0-1, flexible from v1 (KIP-546).

Wire schema of ``AlterClientQuotasRequest.json`` / ``AlterClientQuotasResponse.json``.

Version notes:

* v1: flexible versions (no other change).

Each entry names an entity (entity type and name; a null name is the default
entity) and the quota keys to set (``value``) or remove (``remove``, the
value then ignored).  ``validate_only`` checks without changing anything.
The response has one entry per entity, with its error.
"""

from kafka_net.protocol.schema import (
    BOOL, FLOAT64, INT16, INT32, STRING, Array, Field, Schema, Struct)

_ENTITY = Array(Struct(
    Field("entity_type", STRING),
    Field("entity_name", STRING, nullable="0+"),
))

REQUEST = Schema(
    "AlterClientQuotasRequest", valid="0-1", flexible="1+",
    fields=[
        Field("entries", Array(Struct(
            Field("entity", _ENTITY),
            Field("ops", Array(Struct(
                Field("key", STRING),
                Field("value", FLOAT64),
                Field("remove", BOOL),
            ))),
        ))),
        Field("validate_only", BOOL),
    ])

RESPONSE = Schema(
    "AlterClientQuotasResponse", valid="0-1", flexible="1+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("entries", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("entity", _ENTITY),
        ))),
    ])
