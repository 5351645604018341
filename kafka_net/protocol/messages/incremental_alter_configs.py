"""IncrementalAlterConfigs (API key 44): versions 0-1, flexible from v1.

Wire schema of ``IncrementalAlterConfigsRequest.json`` /
``IncrementalAlterConfigsResponse.json`` (KIP-339).

Version notes:

* v1: flexible versions.

config_operation: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (the last two for
list-typed configs).
"""

from kafka_net.protocol.messages.alter_configs import RESOURCE_RESPONSES
from kafka_net.protocol.schema import BOOL, INT8, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "IncrementalAlterConfigsRequest", valid="0-1", flexible="1+",
    fields=[
        Field("resources", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("config_operation", INT8),
                Field("value", STRING, nullable="0+"),
            ))),
        ))),
        Field("validate_only", BOOL),
    ])

RESPONSE = Schema("IncrementalAlterConfigsResponse", valid="0-1", flexible="1+",
                  fields=RESOURCE_RESPONSES)
