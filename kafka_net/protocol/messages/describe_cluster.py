"""DescribeCluster (API key 60): versions 0-2, flexible from v0.

Wire schema of ``DescribeClusterRequest.json`` / ``DescribeClusterResponse.json``
(KIP-700: the admin client's cluster view without Metadata).

Version notes:

* v1: request and response gain endpoint_type (KIP-919): 1 = brokers,
  2 = controllers.
* v2: request gains include_fenced_brokers, each broker is_fenced (KIP-1073).
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, STRING, Array, Field, Schema, Struct)

BROKERS, CONTROLLERS = 1, 2   # EndpointType

REQUEST = Schema(
    "DescribeClusterRequest", valid="0-2", flexible="0+",
    fields=[
        Field("include_cluster_authorized_operations", BOOL),
        Field("endpoint_type", INT8, versions="1+", default=BROKERS),
        Field("include_fenced_brokers", BOOL, versions="2+"),
    ])

RESPONSE = Schema(
    "DescribeClusterResponse", valid="0-2", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("endpoint_type", INT8, versions="1+", default=BROKERS),
        Field("cluster_id", STRING),
        Field("controller_id", INT32, default=-1),
        Field("brokers", Array(Struct(
            Field("broker_id", INT32),
            Field("host", STRING),
            Field("port", INT32),
            Field("rack", STRING, nullable="0+", default=None),
            Field("is_fenced", BOOL, versions="2+"),
        ))),
        Field("cluster_authorized_operations", INT32, default=-2147483648),
    ])
