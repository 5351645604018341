"""CreateAcls (API key 30): versions 0-3, flexible from v2.

Wire schema of ``CreateAclsRequest.json`` / ``CreateAclsResponse.json``.

The admin client's ACL creation (KIP-140; pattern types from KIP-290).

Request history (from Kafka's JSON):

* Version 1 adds resource pattern type.
* Version 2 enables flexible versions.
* Version 3 adds user resource type.

Response history (from Kafka's JSON):

* Starting in version 1, on quota violation, brokers send out responses before
  throttling.
* Version 2 enables flexible versions.
* Version 3 adds user resource type.
"""

from kafka_net.protocol.schema import INT8, INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "CreateAclsRequest", valid="0-3", flexible="2+",
    fields=[
        Field("creations", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("resource_pattern_type", INT8, versions="1+", default=3),
            Field("principal", STRING),
            Field("host", STRING),
            Field("operation", INT8),
            Field("permission_type", INT8),
        ))),
    ])

RESPONSE = Schema(
    "CreateAclsResponse", valid="0-3", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ))),
    ])
