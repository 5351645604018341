"""GetTelemetrySubscriptions (API key 71): version 0, flexible in every version.

Wire schema of ``GetTelemetrySubscriptionsRequest.json`` /
``GetTelemetrySubscriptionsResponse.json``.

Client metrics (KIP-714): which metrics a client should push, and how often.
"""

from kafka_net.protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, Array, Field, Schema

REQUEST = Schema(
    "GetTelemetrySubscriptionsRequest", valid="0", flexible="0+",
    fields=[
        Field("client_instance_id", UUID),
    ])

RESPONSE = Schema(
    "GetTelemetrySubscriptionsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("client_instance_id", UUID),
        Field("subscription_id", INT32),
        Field("accepted_compression_types", Array(INT8)),
        Field("push_interval_ms", INT32),
        Field("telemetry_max_bytes", INT32),
        Field("delta_temporality", BOOL),
        Field("requested_metrics", Array(STRING)),
    ])
