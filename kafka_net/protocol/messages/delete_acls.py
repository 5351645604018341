"""DeleteAcls (API key 31): versions 0-3, flexible from v2.

Wire schema of ``DeleteAclsRequest.json`` / ``DeleteAclsResponse.json``.

The admin client's ACL deletion by filters (KIP-140; pattern types from
KIP-290).

Request history (from Kafka's JSON):

* Version 1 adds the pattern type.
* Version 2 enables flexible versions.
* Version 3 adds the user resource type.

Response history (from Kafka's JSON):

* Version 1 adds the resource pattern type.
* Starting in version 1, on quota violation, brokers send out responses before
  throttling.
* Version 2 enables flexible versions.
* Version 3 adds the user resource type.
"""

from kafka_net.protocol.messages.describe_acls import ACL_FILTER
from kafka_net.protocol.schema import INT8, INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "DeleteAclsRequest", valid="0-3", flexible="2+",
    fields=[
        Field("filters", Array(Struct(*ACL_FILTER))),
    ])

RESPONSE = Schema(
    "DeleteAclsResponse", valid="0-3", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("filter_results", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("matching_acls", Array(Struct(
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
                Field("resource_type", INT8),
                Field("resource_name", STRING),
                Field("pattern_type", INT8, versions="1+", default=3),
                Field("principal", STRING),
                Field("host", STRING),
                Field("operation", INT8),
                Field("permission_type", INT8),
            ))),
        ))),
    ])
