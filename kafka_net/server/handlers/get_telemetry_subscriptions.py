"""GetTelemetrySubscriptions (API key 71): serves v0-v0.

Behaviour (Kafka's ``ClientMetricsManager.processGetTelemetrySubscriptionRequest``,
see :mod:`kafka_net.server.client_metrics`):

* a client that sends the zero id gets a new client instance id (a random
  UUID, never one of Kafka's reserved ids);
* the answer carries the instance's subscription: the metric prefixes of
  every subscription it matches (``*`` if any asks for all), the smallest of
  their push intervals (300000 ms when none matches), the subscription id
  (Kafka's CRC32C-based hash), the compression types Kafka accepts in its
  order of preference (zstd, lz4, gzip, snappy), ``telemetry.max.bytes`` and
  delta temporality (always true, as Kafka);
* asking again within the push interval of the last request is
  THROTTLING_QUOTA_EXCEEDED, unless the last push failed with
  UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE (the client must be
  able to recover at once) or a subscription changed meanwhile;
* an error answer carries only its code (Kafka's ``getErrorResponse``); a
  failure inside the manager is INVALID_REQUEST, as KafkaApis answers it.

Served whatever the configuration; ApiVersions lists it only when an
exporter (``metrics.listener``) takes the pushes, as Kafka lists it only with
a ClientTelemetryExporter plugin.  No ACL is checked (Kafka checks none).
"""

import logging

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.client_metrics import client_attributes, error_body

API_KEY = ApiKey.GET_TELEMETRY_SUBSCRIPTIONS

log = logging.getLogger(__name__)


def handle(ctx, request: dict) -> dict:
    try:
        return ctx.client_metrics.get_subscriptions(request["client_instance_id"],
                                                    client_attributes(ctx.request),
                                                    ctx.request.connection_id)
    except Exception:   # noqa: BLE001 -- Kafka's KafkaApis answers INVALID_REQUEST
        log.exception("Error handling GetTelemetrySubscriptions %s", ctx.request.describe())
        return error_body(ErrorCode.INVALID_REQUEST)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return error_body(error_code)
