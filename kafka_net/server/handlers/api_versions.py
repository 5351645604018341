"""ApiVersions (API key 18): serves v0-v4.

Behaviour:

* The answer lists every API in the dispatch table with the versions served,
  straight from :data:`kafka_net.server.apis.HANDLERS`: what we advertise is
  what we serve -- except GetTelemetrySubscriptions and PushTelemetry, listed
  only when ``metrics.listener`` exports client metrics (Kafka lists them only
  with a telemetry exporter plugin; both are served either way, as Kafka's).
* A version newer than v4 (or negative) is not a disconnect: the codec marks
  the request ``unsupported_version`` without parsing its body, and we answer
  a **v0** body with UNSUPPORTED_VERSION and only the ApiVersions range, so
  the client can retry with a version we speak (KIP-511).  librdkafka sends v3
  first, kafka-python v4, aiokafka v0.
* v3+ requests name the client software; names that break Kafka's pattern
  ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` get INVALID_REQUEST, in the body.
* v3+ answers carry the feature levels (KIP-584, tagged fields):
  supported_features, finalized_features and finalized_features_epoch from
  :class:`~kafka_net.server.features.FeatureControl` (metadata.version,
  kraft.version, group.version, transaction.version; with as.version, those
  of that release, and none with epoch -1 before 3.3).  A v3 request does not
  get the features whose supported minimum is 0: older clients fail to read
  them (Kafka's ``alterFeatureLevel0``, KAFKA-17492).
* The response header is always v0 (see :mod:`kafka_net.protocol.headers`).
"""

import re
from types import MappingProxyType

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import Versions
from kafka_net.server.features import FeatureSnapshot

API_KEY = ApiKey.API_VERSIONS

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx, request: dict | None) -> dict:
    if ctx.unsupported_version:
        # The range actually served (the dispatch table, as narrowed by as.version).
        served = ctx.supported_versions[API_KEY]
        return {"error_code": ErrorCode.UNSUPPORTED_VERSION,
                "api_keys": [_entry(API_KEY, served)]}
    if ctx.api_version >= 3 and not _valid_software(request):
        return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": []}
    return _answer(advertised(ctx), ctx.features.snapshot, ctx.api_version >= 4)


def advertised(ctx) -> dict[int, Versions]:
    """What is listed: the served table, less GetTelemetrySubscriptions and
    PushTelemetry while no exporter takes client metrics (Kafka lists them only
    with a ClientTelemetryExporter: :meth:`ClientMetricsManager.advertised`)."""
    return ctx.client_metrics.advertised(ctx.supported_versions)


# Every client asks for ApiVersions on every connection, and the answer only
# changes when the dispatch table does (KafkaApis.set_handlers swaps in a new
# dict) or the finalized features do (a new snapshot).  Building its 24 entries
# took as long as the rest of the request, so the answer is built once per table
# and snapshot (and request version >= 4 or not), and handed out read-only:
# KafkaApis then encodes it once per version and writes only the correlation id
# per request (encoding the 24 entries was 4.6 µs of a request's ~40 on the
# network path).
_cached: dict[bool, tuple[object, object, MappingProxyType]] = {}


def _answer(supported: dict[int, Versions], features: FeatureSnapshot,
            level0: bool) -> MappingProxyType:
    table, snapshot, answer = _cached.get(level0, (None, None, None))
    if table is not supported or snapshot is not features:
        answer = MappingProxyType({
            "error_code": ErrorCode.NONE,
            "api_keys": [_entry(key, versions) for key, versions in supported.items()],
            "throttle_time_ms": 0,
            "supported_features": [
                {"name": name, "min_version": low, "max_version": high}
                for name, (low, high) in features.supported if level0 or low > 0],
            # -1: unknown, what a broker without features (before 3.3) answered.
            "finalized_features_epoch": features.epoch if features.supported else -1,
            "finalized_features": [
                {"name": name, "max_version_level": level, "min_version_level": level}
                for name, level in features.levels]})
        _cached[level0] = (supported, features, answer)
    return answer


def error_response(request: dict | None, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "api_keys": []}


def _entry(key: int, versions: Versions) -> dict:
    return {"api_key": int(key), "min_version": versions.low, "max_version": versions.high}


def _valid_software(request: dict) -> bool:
    return all(_SOFTWARE.fullmatch(request.get(f) or "")
               for f in ("client_software_name", "client_software_version"))
