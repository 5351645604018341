"""DescribeAcls (API key 29): versions 0-3, flexible from v2.

Wire schema of ``DescribeAclsRequest.json`` / ``DescribeAclsResponse.json``.

The admin client's ACL listing (KIP-140; pattern types from KIP-290).

Request history (from Kafka's JSON):

* Version 1 adds resource pattern type.
* Version 2 enables flexible versions.
* Version 3 adds user resource type.

Response history (from Kafka's JSON):

* Version 1 adds PatternType.
* Starting in version 1, on quota violation, brokers send out responses before
  throttling.
* Version 2 enables flexible versions.
* Version 3 adds user resource type.
"""

from kafka_net.protocol.schema import INT8, INT16, INT32, STRING, Array, Field, Schema, Struct

# An ACL binding filter (Java's AclBindingFilter): null strings and ANY (1) codes
# match everything.  DeleteAcls sends a list of the same filters.
ACL_FILTER = [
    Field("resource_type_filter", INT8),
    Field("resource_name_filter", STRING, nullable="0+"),
    Field("pattern_type_filter", INT8, versions="1+", default=3),  # 3 = LITERAL
    Field("principal_filter", STRING, nullable="0+"),
    Field("host_filter", STRING, nullable="0+"),
    Field("operation", INT8),
    Field("permission_type", INT8),
]

REQUEST = Schema("DescribeAclsRequest", valid="0-3", flexible="2+", fields=ACL_FILTER)

RESPONSE = Schema(
    "DescribeAclsResponse", valid="0-3", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("resources", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("pattern_type", INT8, versions="1+", default=3),
            Field("acls", Array(Struct(
                Field("principal", STRING),
                Field("host", STRING),
                Field("operation", INT8),
                Field("permission_type", INT8),
            ))),
        ))),
    ])
