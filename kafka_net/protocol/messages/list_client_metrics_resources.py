"""ListClientMetricsResources (API key 74): version 0, flexible in every version.

Wire schema of ``ListClientMetricsResourcesRequest.json`` /
``ListClientMetricsResourcesResponse.json``.

Client metrics (KIP-714): the names of the client-metrics config resources.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "ListClientMetricsResourcesRequest", valid="0", flexible="0+",
    fields=[
    ])

RESPONSE = Schema(
    "ListClientMetricsResourcesResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("client_metrics_resources", Array(Struct(
            Field("name", STRING),
        ))),
    ])
