"""Client metrics (KIP-714): subscriptions, client instances, and what clients push.

Kafka's ``ClientMetricsInstance`` and ``ClientMetricsManager``, on one node;
the subscription keys and their checks (Kafka's ``ClientMetricsConfigs``) are
:mod:`kafka_net.config.client_metrics_keys`.

Subscriptions are CLIENT_METRICS config resources (type 16), set with
IncrementalAlterConfigs / AlterConfigs and kept as ConfigRecords in the
metadata log.  A subscription has three keys:

* ``metrics``: metric name prefixes, comma-separated; ``*`` means every metric;
* ``interval.ms``: how often a matching client pushes (default 300000; 100 to
  3600000, else INVALID_REQUEST);
* ``match``: ``name=regex`` selectors, all of which must match (a full match,
  as Java's ``Matcher.matches``) a client's ``client_instance_id``,
  ``client_id``, ``client_software_name``, ``client_software_version``,
  ``client_source_address`` or ``client_source_port``; none matches every
  client.  A bad selector is INVALID_CONFIG ``Illegal client matching
  pattern: ...``.

A client instance (its id assigned by GetTelemetrySubscriptions when the
client sends zeros) gets the union of the metrics of every subscription it
matches, the smallest of their intervals, and a subscription id: CRC32C of
the metrics set's Java ``toString()`` (a ``HashSet``'s order, reproduced
here) followed by the interval, XORed with the instance id's Java
``hashCode()``: Kafka's value, so a client that moves between Kafka and
kafka-net sees the same ids.  When a subscription changes, each instance is
re-evaluated at its next request (``subscriptionUpdateVersion``).

Pushes are checked in Kafka's order: an instance that said ``terminating``
is INVALID_REQUEST; a push sooner than the interval after the last one
(unless it follows a GetTelemetrySubscriptions, or terminates) is
THROTTLING_QUOTA_EXCEEDED; a stale subscription id is UNKNOWN_SUBSCRIPTION_ID;
an unknown compression type UNSUPPORTED_COMPRESSION_TYPE; more than
``telemetry.max.bytes`` (compressed, or once decompressed) TELEMETRY_TOO_LARGE;
a payload that does not decompress or decode as OTLP is INVALID_RECORD.

Kafka hands the payload to a ``ClientTelemetryExporter`` plugin and
advertises the two telemetry APIs only when one is configured.  kafka-net's
exporter is the metrics listener: with ``metrics.listener`` set, the
decoded metrics appear on ``/metrics`` (:class:`ClientTelemetryStore`,
read by server/prometheus.py) and ApiVersions lists GetTelemetrySubscriptions
and PushTelemetry; without it, both are still served (as Kafka serves them)
but not advertised, so clients never push.

An instance is dropped, with its pushed metrics, when it has made no request
for ``max(60 s, 3 x its push interval)`` (Kafka's expiration task) or when
more than 16384 instances are known (Kafka's LRU cache), and when the
connection that created it closes: the manager's
:meth:`~ClientMetricsManager.connection_disconnect_listener` is registered with
the SocketServer, whose Processors call it with each closed connection's id
(Kafka's ``clientConnectionIdMap``; an instance re-created on a later
connection belongs to that one).
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_net.config.client_metrics_keys import (
    INTERVAL_MS_CONFIG, INTERVAL_MS_DEFAULT, MATCH_CONFIG, METRICS_CONFIG,
    ClientMetricsConfigError, parse_list, parse_matching_patterns)
from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records.framing import _crc32c   # imports crc32c on first use
from kafka_net.server.config_repository import with_config

if TYPE_CHECKING:
    from kafka_net.protocol.otlp import ResourceMetrics

_TELEMETRY_APIS = (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY)

log = logging.getLogger(__name__)
_refusals = RateLimitedLog(log)

ALL_SUBSCRIBED_METRICS = "*"
# Kafka's order: the client picks the first it supports.
SUPPORTED_COMPRESSION_TYPES = (4, 3, 1, 2)   # zstd, lz4, gzip, snappy
CACHE_MAX_SIZE = 16384
DEFAULT_CACHE_EXPIRY_MS = 60_000
SWEEP_INTERVAL_MS = 1000
MAX_SERIES_PER_INSTANCE = 50_000
ZERO_UUID, ONE_UUID = uuid.UUID(int=0), uuid.UUID(int=1)   # Kafka's Uuid.RESERVED


def kafka_uuid_text(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


# -- subscriptions (ClientMetricsConfigs; their keys: config/client_metrics_keys.py) ---------

@dataclass(frozen=True)
class Subscription:
    """One client-metrics resource (KIP-714): the metrics it asks for, how often, of which
    clients."""

    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: dict[str, re.Pattern]

    @classmethod
    def of(cls, name: str, props: dict[str, str]) -> "Subscription":
        interval = props.get(INTERVAL_MS_CONFIG)
        return cls(name, tuple(parse_list(props.get(METRICS_CONFIG, ""))),
                   INTERVAL_MS_DEFAULT if interval is None else int(interval.strip()),
                   parse_matching_patterns(parse_list(props.get(MATCH_CONFIG, ""))))

    def matches(self, attributes: dict[str, str | None]) -> bool:
        return all(attributes.get(key) is not None and pattern.fullmatch(attributes[key])
                   for key, pattern in self.match.items())


# -- Kafka's subscription id ------------------------------------------------------------------

def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), unsigned."""
    data, h = text.encode("utf-16-be", "surrogatepass"), 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_set_order(items: list[str]) -> list[str]:
    """``items`` (distinct, in insertion order) in the order a ``java.util.HashSet``
    filled with them iterates: by bucket of the final table, then insertion."""
    capacity = 16
    while len(items) > capacity * 0.75:
        capacity *= 2

    def bucket(item: str) -> int:
        h = java_string_hash(item)
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(items, key=bucket)   # sorted() is stable: insertion order within a bucket


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def subscription_id(metrics: list[str], interval_ms: int, instance_id: uuid.UUID) -> int:
    """Kafka's ``computeSubscriptionId``."""
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    crc = _crc32c(text.encode("utf-8"))
    most, least = instance_id.int >> 64, instance_id.int & 0xFFFFFFFFFFFFFFFF
    folded = most ^ least
    uuid_hash = (folded >> 32) ^ (folded & 0xFFFFFFFF)
    return _signed32(crc ^ uuid_hash)


# -- client instances (ClientMetricsInstance) -----------------------------------------------

NEVER = float("-inf")


@dataclass
class ClientInstance:
    """A client that asked for its telemetry subscription: its attributes, what it was
    sent and when it last pushed."""

    instance_id: uuid.UUID
    attributes: dict[str, str | None]
    subscription_id: int
    subscription_version: int
    metrics: list[str]
    push_interval_ms: int
    last_get_ms: float = NEVER
    last_push_ms: float = NEVER
    terminating: bool = False
    last_known_error: int = ErrorCode.NONE
    expires_at_ms: float = 0.0
    series: dict = field(default_factory=dict)   # what it pushed: ClientTelemetryStore's
    connection_id: str | None = None   # the connection that created it

    def maybe_update_get(self, now: float) -> bool:
        if now - max(self.last_get_ms, self.last_push_ms) >= self.push_interval_ms:
            self.last_get_ms = now
            return True
        return False

    def maybe_update_push(self, now: float) -> bool:
        # A push right after a GetTelemetrySubscriptions is accepted early: the client
        # applies a jitter of 0.5 to 1.5 times the interval to its first push.
        accept = self.last_get_ms > self.last_push_ms or \
            now - self.last_push_ms >= self.push_interval_ms
        if accept:
            self.last_push_ms = now
        return accept


class ClientMetricsManager:
    """Subscriptions, client instances and their pushed metrics, for one broker."""

    def __init__(self, telemetry_max_bytes: int = 1024 * 1024, receiver: bool = False,
                 clock=None, cache_expiry_ms: int = DEFAULT_CACHE_EXPIRY_MS,
                 cache_max_size: int = CACHE_MAX_SIZE) -> None:
        self.telemetry_max_bytes = telemetry_max_bytes
        # True: an exporter takes the pushes (the metrics listener): the APIs are
        # advertised and pushes decoded (Kafka's isTelemetryExporterConfigured).
        self.receiver = receiver
        self.clock = clock or (lambda: time.monotonic() * 1000)
        self.cache_expiry_ms = cache_expiry_ms
        self.cache_max_size = cache_max_size
        self._lock = threading.Lock()
        self._configs: dict[str, dict[str, str]] = {}
        self._subscriptions: dict[str, Subscription] = {}
        self._version = 0
        self._instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        # connection id -> the instance it created, kept in step with _instances.
        self._connections: dict[str, uuid.UUID] = {}
        self._disconnect_listener = _ClientConnectionDisconnectListener(self)
        self._advertised: tuple[object, dict] | None = None
        self._next_sweep_ms = NEVER

    # -- subscriptions (ConfigRecords of resource CLIENT_METRICS) ---------------------------

    def list_resources(self) -> list[str]:
        with self._lock:
            return sorted(self._subscriptions)

    def configs(self, name: str) -> dict[str, str]:
        with self._lock:
            return dict(self._configs.get(name, {}))

    def all_configs(self) -> dict[str, dict[str, str]]:
        with self._lock:
            return {name: dict(values) for name, values in self._configs.items()}

    def set_key(self, name: str, key: str, value: str | None) -> None:
        """One ConfigRecord applied (None: the key removed); a subscription whose
        keys are all gone is removed (Kafka's ``updateSubscription`` with no keys)."""
        with self._lock:
            values = with_config(self._configs.get(name), key, value)
            if values:
                self._configs[name] = values
                try:
                    self._subscriptions[name] = Subscription.of(name, values)
                except (ClientMetricsConfigError, ValueError):
                    # Validated before it was written; a record from elsewhere that is
                    # not valid leaves the subscription out.
                    log.warning("Ignoring client metrics subscription %s: invalid config %s",
                                escape(name), escape(str(values)))
                    self._subscriptions.pop(name, None)
            else:
                self._configs.pop(name, None)
                self._subscriptions.pop(name, None)
            self._version += 1

    # -- ApiVersions --------------------------------------------------------------------------

    def advertised(self, supported: dict) -> dict:
        """``supported`` as ApiVersions lists it: without GetTelemetrySubscriptions and
        PushTelemetry unless an exporter is configured (Kafka's ApiVersionsResponse.
        filterApis with clientTelemetryEnabled).  The same dict object while the
        table is (ApiVersions caches its answer by identity)."""
        if self.receiver:
            return supported
        cached = self._advertised
        if cached is None or cached[0] is not supported:
            filtered = {k: v for k, v in supported.items() if k not in _TELEMETRY_APIS}
            cached = self._advertised = (supported, filtered)
        return cached[1]

    # -- GetTelemetrySubscriptions -----------------------------------------------------------

    def get_subscriptions(self, client_instance_id: uuid.UUID, attributes: dict,
                          connection_id: str | None = None) -> dict:
        """``connection_id``: the request's (an instance goes when it closes)."""
        now = self.clock()
        with self._lock:
            self._expire(now)
            instance_id = client_instance_id
            if instance_id == ZERO_UUID:
                instance_id = self._new_instance_id()
            instance = self._instance(instance_id, attributes, now, connection_id)
            if not instance.maybe_update_get(now) and instance.last_known_error not in (
                    ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE):
                return self._refused(ErrorCode.THROTTLING_QUOTA_EXCEEDED, instance_id,
                                     "Request from the client [%s] arrived before the next "
                                     "push interval time")
            instance.last_known_error = ErrorCode.NONE
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                    "client_instance_id": instance_id,
                    "subscription_id": instance.subscription_id,
                    "accepted_compression_types": list(SUPPORTED_COMPRESSION_TYPES),
                    "push_interval_ms": instance.push_interval_ms,
                    "telemetry_max_bytes": self.telemetry_max_bytes,
                    "delta_temporality": True,
                    "requested_metrics": list(instance.metrics)}

    def _new_instance_id(self) -> uuid.UUID:
        while True:
            candidate = uuid.uuid4()
            # Kafka's Uuid.randomUuid: never reserved, never "-" first in its text.
            if candidate not in (ZERO_UUID, ONE_UUID) and \
                    not kafka_uuid_text(candidate).startswith("-") and \
                    candidate not in self._instances:
                return candidate

    # -- PushTelemetry -------------------------------------------------------------------------

    def push(self, request: dict, attributes: dict, connection_id: str | None = None) -> int:
        """The error code of a PushTelemetry (its metrics stored when an exporter is
        on); ``connection_id``: the request's."""
        instance_id = request["client_instance_id"]
        if instance_id in (ZERO_UUID, ONE_UUID):
            _refusals.log(logging.INFO, ("push", ErrorCode.INVALID_REQUEST),
                          "Invalid PushTelemetry from the client [%s], invalid client "
                          "instance id", kafka_uuid_text(instance_id))
            return ErrorCode.INVALID_REQUEST
        now = self.clock()
        with self._lock:
            self._expire(now)
            instance = self._instance(instance_id, attributes, now, connection_id)
            error = self._validate_push(request, instance, now)
            instance.terminating = request["terminating"]
            if error is not None:
                instance.last_known_error = error
                return error
        metrics = request["metrics"]
        if not metrics or not self.receiver:
            with self._lock:
                instance.last_known_error = ErrorCode.NONE
            return ErrorCode.NONE
        error, decoded = self._decode(instance_id, request["compression_type"], metrics)
        with self._lock:
            instance.last_known_error = error
            current = self._instances.get(instance_id)   # maybe re-evaluated meanwhile
            if decoded is not None and current is not None:
                record_push(current, decoded)
        return error

    def _validate_push(self, request: dict, instance: ClientInstance, now: float) -> int | None:
        """Kafka's ``validatePushRequest``: the first error, or None."""
        if instance.terminating:
            return self._log(ErrorCode.INVALID_REQUEST, instance,
                             "Client [%s] sent the previous request with state terminating "
                             "to TRUE, can not accept any requests after that")
        if not instance.maybe_update_push(now) and not request["terminating"]:
            return self._log(ErrorCode.THROTTLING_QUOTA_EXCEEDED, instance,
                             "Request from the client [%s] arrived before the next push "
                             "interval time")
        if request["subscription_id"] != instance.subscription_id:
            return self._log(ErrorCode.UNKNOWN_SUBSCRIPTION_ID, instance,
                             "Unknown client subscription id for the client [%s]")
        if not 0 <= request["compression_type"] <= 4:
            return self._log(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, instance,
                             "Unknown compression type [" + str(request["compression_type"])
                             + "] is received in telemetry request from [%s]")
        if len(request["metrics"]) > self.telemetry_max_bytes:
            return self._log(ErrorCode.TELEMETRY_TOO_LARGE, instance,
                             "Telemetry request from [%s] is larger than the maximum allowed "
                             f"size [{self.telemetry_max_bytes}]")
        return None

    def _decode(self, instance_id, compression_type: int, metrics: bytes):
        """(error code, decoded resource metrics or None): the exporter's work."""
        # The OTLP decoder is imported on the first push, not at broker start-up.
        from kafka_net.protocol.otlp import (
            OtlpDecodeError, TelemetryTooLargeError, decode_metrics_data, decompress_payload)
        try:
            data = decompress_payload(compression_type, metrics, self.telemetry_max_bytes)
            return ErrorCode.NONE, decode_metrics_data(data)
        except TelemetryTooLargeError as exc:
            error, why = ErrorCode.TELEMETRY_TOO_LARGE, str(exc)
        except OtlpDecodeError as exc:
            error, why = ErrorCode.INVALID_RECORD, str(exc)
        _refusals.log(logging.WARNING, ("export", error),
                      "Error exporting client metrics for client instance id %s: %s",
                      kafka_uuid_text(instance_id), escape(why))
        return error, None

    @staticmethod
    def _log(error: int, instance: ClientInstance, message: str) -> int:
        _refusals.log(logging.DEBUG, ("push", error), message,
                      kafka_uuid_text(instance.instance_id))
        return error

    @staticmethod
    def _refused(error: int, instance_id: uuid.UUID, message: str) -> dict:
        _refusals.log(logging.DEBUG, ("get", error), message, kafka_uuid_text(instance_id))
        return error_body(error)

    # -- the instance cache --------------------------------------------------------------------

    def _instance(self, instance_id: uuid.UUID, attributes: dict, now: float,
                  connection_id: str | None = None) -> ClientInstance:
        """Kafka's ``clientInstance``: found, created, or re-evaluated after a
        subscription change; its expiry pushed back.  Called holding the lock."""
        instance = self._instances.get(instance_id)
        if instance is None:
            attrs = dict(attributes, client_instance_id=kafka_uuid_text(instance_id))
            instance = self._evaluate(instance_id, attrs)
            self._add(instance, connection_id)
            while len(self._instances) > self.cache_max_size:
                self._forget(self._instances.popitem(last=False)[1])
        elif instance.subscription_version < self._version:
            # A new instance, as Kafka makes one: no request times (the client gets
            # its new subscription at once), but the metrics it pushed stay.
            fresh = self._evaluate(instance_id, instance.attributes)
            fresh.series = instance.series
            self._forget(instance)
            instance = fresh
            self._add(instance, connection_id)
        self._instances.move_to_end(instance_id)
        instance.expires_at_ms = now + max(self.cache_expiry_ms, 3 * instance.push_interval_ms)
        return instance

    def _evaluate(self, instance_id: uuid.UUID, attributes: dict) -> ClientInstance:
        """Kafka's ``createClientInstance``: the matching subscriptions combined."""
        interval, metrics, everything = INTERVAL_MS_DEFAULT, [], False
        for subscription in self._subscriptions.values():
            if subscription.matches(attributes):
                everything = everything or ALL_SUBSCRIBED_METRICS in subscription.metrics
                metrics += [m for m in subscription.metrics if m not in metrics]
                interval = min(interval, subscription.interval_ms)
        if everything:
            metrics = [ALL_SUBSCRIBED_METRICS]
        metrics = java_hash_set_order(metrics)
        return ClientInstance(instance_id, attributes,
                              subscription_id(metrics, interval, instance_id),
                              self._version, metrics, interval)

    def _expire(self, now: float, always: bool = False) -> None:
        """Drop the instances whose expiry passed (Kafka's ExpirationTimerTask): on a
        request at most once a second (a scan of up to 16384 instances), on a scrape
        always."""
        if not always and now < self._next_sweep_ms:
            return
        self._next_sweep_ms = now + SWEEP_INTERVAL_MS
        gone = [i for i, inst in self._instances.items() if inst.expires_at_ms <= now]
        for instance_id in gone:
            self._forget(self._instances.pop(instance_id))

    def _add(self, instance: ClientInstance, connection_id: str | None) -> None:
        # Kafka's createClientInstanceAndUpdateCache: the instance belongs to the
        # connection of the request that (re)created it.
        self._instances[instance.instance_id] = instance
        if connection_id is not None:
            instance.connection_id = connection_id
            self._connections[connection_id] = instance.instance_id

    def _forget(self, instance: ClientInstance) -> None:
        """Drop ``instance``'s connection mapping (it left _instances)."""
        if instance.connection_id is not None and \
                self._connections.get(instance.connection_id) == instance.instance_id:
            del self._connections[instance.connection_id]

    def connection_disconnect_listener(self) -> "_ClientConnectionDisconnectListener":
        """What the SocketServer's Processors call when a connection closes."""
        return self._disconnect_listener

    def remove_connection(self, connection_id: str) -> bool:
        """Drop the instance ``connection_id`` created, with its pushed metrics
        (Kafka's ClientConnectionDisconnectListener); whether there was one."""
        with self._lock:
            instance_id = self._connections.pop(connection_id, None)
            if instance_id is None:
                return False
            self._instances.pop(instance_id, None)
            return True

    def instance_count(self) -> int:
        with self._lock:
            self._expire(self.clock(), always=True)
            return len(self._instances)

    def instance(self, instance_id: uuid.UUID) -> ClientInstance | None:
        with self._lock:
            return self._instances.get(instance_id)

    def pushed_series(self) -> list[tuple[dict[str, str], dict]]:
        """Each live instance's labels and pushed series (expired ones dropped first)."""
        with self._lock:
            self._expire(self.clock(), always=True)
            return [(_instance_labels(inst), dict(inst.series))
                    for inst in self._instances.values() if inst.series]


class _ClientConnectionDisconnectListener:
    """A ConnectionDisconnectListener (network/connection_disconnect_listener.py),
    run on a Processor thread: a dict test when the connection created nothing."""

    def __init__(self, manager: ClientMetricsManager) -> None:
        self._manager = manager

    def on_disconnect(self, connection_id: str) -> None:
        if connection_id in self._manager._connections:   # no lock for the usual miss
            if self._manager.remove_connection(connection_id):
                log.debug("Removed the client instance of connection %s: it closed",
                          connection_id)


def error_body(error: int) -> dict:
    """GetTelemetrySubscriptions' error response (Kafka's getErrorResponse)."""
    return {"throttle_time_ms": 0, "error_code": error, "client_instance_id": ZERO_UUID,
            "subscription_id": 0, "accepted_compression_types": [], "push_interval_ms": 0,
            "telemetry_max_bytes": 0, "delta_temporality": False, "requested_metrics": []}


def client_attributes(request) -> dict[str, str | None]:
    """What subscriptions match on (Kafka's ClientMetricsInstanceMetadata), from a
    network Request."""
    address = request.client_address
    return {"client_id": request.header.client_id,
            "client_software_name": request.client_software[0],
            "client_software_version": request.client_software[1],
            "client_source_address": address[0] if address else None,
            "client_source_port": str(address[1]) if address and len(address) > 1 else None}


def _instance_labels(instance: ClientInstance) -> dict[str, str]:
    a = instance.attributes
    return {"client_instance_id": a["client_instance_id"],
            "client_id": a.get("client_id") or "",
            "client_software_name": a.get("client_software_name") or "",
            "client_software_version": a.get("client_software_version") or ""}


# -- what a push leaves behind (for /metrics) ------------------------------------------------

@dataclass
class Series:
    """One pushed series: a family (OTLP metric) and its value(s) now."""

    kind: str                 # counter, gauge, histogram, summary
    description: str
    value: float = 0.0        # counter, gauge
    count: float = 0.0        # histogram, summary
    sum: float = 0.0
    bounds: tuple = ()        # histogram: explicit bounds
    buckets: list = field(default_factory=list)   # histogram: per-bucket counts
    quantiles: tuple = ()     # summary: (quantile, value)


def record_push(instance: ClientInstance, resources: list[ResourceMetrics]) -> None:
    """Fold a push into the instance's series: gauges and cumulative (or
    unspecified) values replace the last one, deltas (KIP-714 asks clients for
    delta temporality) add up into the running totals Prometheus expects.  An
    instance keeps at most MAX_SERIES_PER_INSTANCE series: a client that makes up
    new attribute values on every push cannot grow the broker's memory without
    bound (the rest are dropped, with a rate-limited log line)."""
    from kafka_net.protocol.otlp import attribute_text   # see _decode
    before = len(instance.series)
    for resource in resources:
        base = {str(k): attribute_text(v) for k, v in resource.attributes.items()}
        for scope in resource.scopes:
            for metric in scope.metrics:
                _record_metric(instance.series, metric, base)
    if len(instance.series) > MAX_SERIES_PER_INSTANCE:
        for key in list(instance.series)[max(before, MAX_SERIES_PER_INSTANCE):]:
            del instance.series[key]   # the newest keys: dicts keep insertion order
        _refusals.log(logging.WARNING, ("series", 0),
                      "Client instance %s pushed more than %d series; the new ones are "
                      "not kept", kafka_uuid_text(instance.instance_id),
                      MAX_SERIES_PER_INSTANCE)


def _record_metric(series: dict, metric, base: dict[str, str]) -> None:
    from kafka_net.protocol.otlp import DELTA, attribute_text   # see _decode
    kind = {"gauge": "gauge", "histogram": "histogram", "summary": "summary",
            "sum": "counter" if metric.monotonic else "gauge"}.get(metric.kind)
    if kind is None or not metric.name:
        return   # an exponential histogram, or no data: nothing Prometheus can show
    for point in metric.points:
        attrs = dict(base)
        attrs.update((str(k), attribute_text(v)) for k, v in point.attributes.items())
        key = (metric.name, kind, tuple(sorted(attrs.items())))
        old = series.get(key)
        delta = metric.temporality == DELTA
        if kind in ("gauge", "counter"):
            if point.value is None:
                continue
            value = float(point.value)
            if delta and metric.kind == "sum" and old is not None:
                value += old.value
            series[key] = Series(kind, metric.description, value=value)
        elif kind == "histogram":
            counts = list(point.bucket_counts)
            if len(counts) != len(point.explicit_bounds) + 1:
                continue   # malformed: OTLP wants one more bucket than bounds
            total, summed = float(point.count or 0), float(point.sum or 0.0)
            bounds = tuple(point.explicit_bounds)
            if delta and old is not None and old.bounds == bounds:
                counts = [a + b for a, b in zip(old.buckets, counts)]
                total, summed = total + old.count, summed + old.sum
            series[key] = Series(kind, metric.description, count=total, sum=summed,
                                 bounds=bounds, buckets=counts)
        else:
            series[key] = Series(kind, metric.description, count=float(point.count or 0),
                                 sum=float(point.sum or 0.0), quantiles=tuple(point.quantiles))


__all__ = ["ALL_SUBSCRIBED_METRICS", "ClientMetricsManager", "Series", "Subscription",
           "client_attributes", "error_body", "java_hash_set_order", "kafka_uuid_text",
           "subscription_id"]
