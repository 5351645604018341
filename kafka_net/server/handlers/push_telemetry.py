"""PushTelemetry (API key 72): serves v0-v0.

Behaviour (Kafka's ``ClientMetricsManager.processPushTelemetryRequest``, see
:mod:`kafka_net.server.client_metrics`), the first that applies:

* the zero (or reserved) client instance id: INVALID_REQUEST;
* an instance that already pushed with ``terminating``: INVALID_REQUEST;
* sooner than its push interval after its last push, unless the push follows
  a GetTelemetrySubscriptions or terminates: THROTTLING_QUOTA_EXCEEDED;
* a subscription id that is not the instance's (a subscription changed):
  UNKNOWN_SUBSCRIPTION_ID, and the client asks for its subscription again;
* a compression type that is no Kafka codec (0-4): UNSUPPORTED_COMPRESSION_TYPE;
* more than ``telemetry.max.bytes`` as sent: TELEMETRY_TOO_LARGE;
* with an exporter (``metrics.listener``): the payload is decompressed (at
  most ``telemetry.max.bytes`` of it, else TELEMETRY_TOO_LARGE, as Kafka's
  exporter plugin bounds it) and decoded as OTLP MetricsData
  (:mod:`kafka_net.protocol.otlp`); one that does not is INVALID_RECORD
  (Kafka's answer to a failed export, after which a client stops pushing).
  The metrics appear on ``/metrics`` with the client's labels.

The ``terminating`` flag is remembered whatever the answer.  A failure inside
the manager is INVALID_REQUEST, as KafkaApis answers it.  No ACL is checked
(Kafka checks none).
"""

import logging

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.client_metrics import client_attributes

API_KEY = ApiKey.PUSH_TELEMETRY

log = logging.getLogger(__name__)


def handle(ctx, request: dict) -> dict:
    try:
        error = ctx.client_metrics.push(request, client_attributes(ctx.request),
                                         ctx.request.connection_id)
    except Exception:   # noqa: BLE001 -- Kafka's KafkaApis answers INVALID_REQUEST
        log.exception("Error handling PushTelemetry %s", ctx.request.describe())
        error = ErrorCode.INVALID_REQUEST
    return {"throttle_time_ms": 0, "error_code": error}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code}
