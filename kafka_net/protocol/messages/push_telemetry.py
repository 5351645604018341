"""PushTelemetry (API key 72): version 0, flexible in every version.

Wire schema of ``PushTelemetryRequest.json`` / ``PushTelemetryResponse.json``.

Client metrics (KIP-714): a client's metrics, OTLP-encoded, maybe compressed.
"""

from kafka_net.protocol.schema import BOOL, BYTES, INT8, INT16, INT32, UUID, Field, Schema

REQUEST = Schema(
    "PushTelemetryRequest", valid="0", flexible="0+",
    fields=[
        Field("client_instance_id", UUID),
        Field("subscription_id", INT32),
        Field("terminating", BOOL),
        Field("compression_type", INT8),
        Field("metrics", BYTES),
    ])

RESPONSE = Schema(
    "PushTelemetryResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
    ])
