"""AlterConfigs (API key 33): versions 0-2, flexible from v2.

Wire schema of ``AlterConfigsRequest.json`` / ``AlterConfigsResponse.json``.

Version notes:

* v1: no wire change (responses sent before throttling).
* v2: flexible versions.

The request replaces a resource's whole config set (KIP-339 added
IncrementalAlterConfigs for changes to single keys).
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "AlterConfigsRequest", valid="0-2", flexible="2+",
    fields=[
        Field("resources", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
            ))),
        ))),
        Field("validate_only", BOOL),
    ])

# IncrementalAlterConfigsResponse has the same fields (AlterConfigsResourceResponse).
RESOURCE_RESPONSES = [
    Field("throttle_time_ms", INT32),
    Field("responses", Array(Struct(
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
    ))),
]

RESPONSE = Schema("AlterConfigsResponse", valid="0-2", flexible="2+",
                  fields=RESOURCE_RESPONSES)
