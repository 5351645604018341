"""DescribeClientQuotas (API key 48): versions 0-1, flexible from v1 (KIP-546).

Wire schema of ``DescribeClientQuotasRequest.json`` / ``DescribeClientQuotasResponse.json``.

Version notes:

* v1: flexible versions (no other change).

A filter component names an entity type and how to match it: ``match_type``
0 = exact name (``match``), 1 = the default entity, 2 = any specified name;
``strict`` leaves out entities with entity types the filter does not name.
``entries`` is null in an error response.  An entity name of null is the
default entity.
"""

from kafka_net.protocol.schema import (
    BOOL, FLOAT64, INT8, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "DescribeClientQuotasRequest", valid="0-1", flexible="1+",
    fields=[
        Field("components", Array(Struct(
            Field("entity_type", STRING),
            Field("match_type", INT8),
            Field("match", STRING, nullable="0+"),
        ))),
        Field("strict", BOOL),
    ])

RESPONSE = Schema(
    "DescribeClientQuotasResponse", valid="0-1", flexible="1+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("entries", Array(Struct(
            Field("entity", Array(Struct(
                Field("entity_type", STRING),
                Field("entity_name", STRING, nullable="0+"),
            ))),
            Field("values", Array(Struct(
                Field("key", STRING),
                Field("value", FLOAT64),
            ))),
        )), nullable="0+"),
    ])
