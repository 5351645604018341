"""ListConfigResources (API key 74; ListClientMetricsResources before Kafka 4.1): versions 0-1, flexible in every version.

Wire schema of Kafka 4.2's ``ListConfigResourcesRequest.json`` /
``ListConfigResourcesResponse.json`` (KIP-714, renamed by KIP-1142; the module
keeps the old name, as ApiKey does; the wire carries neither).

* v0: ListClientMetricsResources: the names of the client-metrics
  subscriptions (``client_metrics_resources`` then, ``config_resources`` now).
* v1: the request names the resource types to list (empty: every type the
  broker knows); each resource gains its type (default 16, CLIENT_METRICS).
"""

from kafka_net.protocol.schema import INT8, INT16, INT32, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "ListClientMetricsResourcesRequest", valid="0-1", flexible="0+",
    fields=[
        Field("resource_types", Array(INT8), versions="1+"),
    ])

RESPONSE = Schema(
    "ListClientMetricsResourcesResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("config_resources", Array(Struct(
            Field("resource_name", STRING),
            Field("resource_type", INT8, versions="1+", default=16),
        ))),
    ])
