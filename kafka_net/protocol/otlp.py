"""OTLP ``MetricsData`` (opentelemetry-proto's metrics.proto), read from its protobuf bytes, sans-IO.

What a KIP-714 client pushes in PushTelemetry's ``metrics`` field (after
decompression): ``MetricsData`` -> ``ResourceMetrics`` -> ``ScopeMetrics``
-> ``Metric`` -> data points.  This reader knows the fields of that subset
by their numbers (opentelemetry-proto v1, frozen: OTLP is stable and
protobuf's wire format does not change):

=====================  ==========================================================
message                fields read (number: name)
=====================  ==========================================================
MetricsData            1 resource_metrics
ResourceMetrics        1 resource (1 attributes), 2 scope_metrics, 3 schema_url
ScopeMetrics           1 scope (1 name, 2 version, 3 attributes), 2 metrics
Metric                 1 name, 2 description, 3 unit, 5 gauge, 7 sum, 9 histogram,
                       10 exponential_histogram, 11 summary, 12 metadata
Sum / Histogram        1 data_points, 2 aggregation_temporality, 3 is_monotonic (Sum)
NumberDataPoint        7 attributes, 2/3 start/time (fixed64), 4 as_double, 6 as_int
HistogramDataPoint     9 attributes, 2/3 times, 4 count, 5 sum, 6 bucket_counts,
                       7 explicit_bounds, 11 min, 12 max
ExpHistogramDataPoint  1 attributes, 2/3 times, 4 count, 5 sum, 6 scale, 7 zero_count
SummaryDataPoint       7 attributes, 2/3 times, 4 count, 5 sum, 6 quantile_values
KeyValue / AnyValue    1 key, 2 value / 1 string, 2 bool, 3 int, 4 double,
                       5 array, 6 kvlist, 7 bytes
=====================  ==========================================================

Other fields are skipped by their wire type, as any protobuf reader skips
fields it does not know.  Repeated numbers are read packed or not.

Why hand-written and not opentelemetry-proto + protobuf: the two wheels are
about 1.9 MB installed (measured: protobuf 7.36.2 1.5 MB, opentelemetry-proto
1.45.2 0.4 MB) and protobuf's runtime checks its generated code's version
(a major release of one breaks the other), for a format that is five wire
types and some field numbers; and this reader's failure is one exception,
:class:`OtlpDecodeError`, for every bad input (a Hypothesis test checks it),
which a broker needs to answer a client's garbage with a defined error.

Bounds: AnyValue arrays and lists nest at most :data:`MAX_DEPTH` deep
(protobuf's own recursion limit is 100); at most :data:`MAX_ITEMS` metrics
and data points are read (memory, not bytes, is what a flood of tiny data
points costs); everything else is bounded by the input's length, which the
broker bounds by ``telemetry.max.bytes``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from kafka_net.protocol.records.compression import decompress
from kafka_net.protocol.records.framing import DecompressionLimitError, RecordError

MAX_DEPTH = 32
# Metrics and data points per payload: a data point can take 2 bytes on the wire
# and a few hundred in memory, so 1 MiB of empty ones would cost ~150 MB.  A Java
# client with per-partition metrics over thousands of partitions stays below.
MAX_ITEMS = 50_000
_DOUBLE = struct.Struct("<d")
_FIXED64 = struct.Struct("<Q")
_SFIXED64 = struct.Struct("<q")
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

# AggregationTemporality
TEMPORALITY_UNSPECIFIED, DELTA, CUMULATIVE = 0, 1, 2


class OtlpDecodeError(ValueError):
    """The bytes are not a MetricsData message."""


class TelemetryTooLargeError(Exception):
    """The payload decompresses to more than the limit (TELEMETRY_TOO_LARGE)."""


def decompress_payload(compression_type: int, data: bytes, limit: int) -> bytes:
    """PushTelemetry's ``metrics`` as the protobuf bytes, at most ``limit`` of them
    (a zstd bomb costs the limit, never what it would inflate to).  Raises
    :class:`TelemetryTooLargeError` past the limit, :class:`OtlpDecodeError` when
    the codec cannot read it or the type is unknown."""
    if compression_type == 0:
        if len(data) > limit:
            raise TelemetryTooLargeError(f"{len(data)} bytes, more than {limit}")
        return bytes(data)
    try:
        return decompress(compression_type, memoryview(data), limit)
    except DecompressionLimitError:
        raise TelemetryTooLargeError(f"decompresses to more than {limit} bytes") from None
    except RecordError as exc:
        raise OtlpDecodeError(f"cannot decompress (compression type {compression_type}): "
                              f"{exc}") from None


@dataclass(slots=True)
class DataPoint:
    """One data point: ``value`` for a gauge or sum; ``count`` / ``sum`` and
    the kind's own fields (buckets, quantiles) for the others."""

    attributes: dict[str, Any] = field(default_factory=dict)
    start_time_unix_nano: int = 0
    time_unix_nano: int = 0
    value: float | int | None = None
    count: int | None = None
    sum: float | None = None
    bucket_counts: list[int] = field(default_factory=list)
    explicit_bounds: list[float] = field(default_factory=list)
    quantiles: list[tuple[float, float]] = field(default_factory=list)
    scale: int | None = None


@dataclass(slots=True)
class Metric:
    """One OTLP metric and its data points."""

    name: str = ""
    description: str = ""
    unit: str = ""
    kind: str = ""   # gauge, sum, histogram, exponential_histogram, summary; "" if none
    temporality: int = TEMPORALITY_UNSPECIFIED
    monotonic: bool = False
    points: list[DataPoint] = field(default_factory=list)


@dataclass(slots=True)
class Scope:
    """An OTLP instrumentation scope and its metrics."""

    name: str = ""
    version: str = ""
    metrics: list[Metric] = field(default_factory=list)


@dataclass(slots=True)
class ResourceMetrics:
    """An OTLP resource (its attributes) and its scopes."""

    attributes: dict[str, Any] = field(default_factory=dict)
    scopes: list[Scope] = field(default_factory=list)


# -- the wire -----------------------------------------------------------------------------

def _varint(data: memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise OtlpDecodeError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise OtlpDecodeError("varint longer than 10 bytes")


def _fields(data: memoryview, start: int, end: int):
    """(field number, wire type, value) of each field in data[start:end]: an int
    for VARINT / FIXED64 / FIXED32, (start, end) for LEN."""
    pos = start
    while pos < end:
        tag, pos = _varint(data, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise OtlpDecodeError("field number 0")
        if wire == VARINT:
            value, pos = _varint(data, pos, end)
        elif wire == FIXED64:
            if pos + 8 > end:
                raise OtlpDecodeError("truncated 64-bit field")
            value, pos = _FIXED64.unpack_from(data, pos)[0], pos + 8
        elif wire == FIXED32:
            if pos + 4 > end:
                raise OtlpDecodeError("truncated 32-bit field")
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        elif wire == LEN:
            size, pos = _varint(data, pos, end)
            if size > end - pos:
                raise OtlpDecodeError(f"field {number}: length {size} past the message's end")
            value, pos = (pos, pos + size), pos + size
        else:
            raise OtlpDecodeError(f"field {number}: wire type {wire} (groups are not OTLP)")
        yield number, wire, value


def _expect(number: int, wire: int, expected: int) -> None:
    if wire != expected:
        raise OtlpDecodeError(f"field {number}: wire type {wire}, expected {expected}")


def _string(data: memoryview, span: tuple[int, int]) -> str:
    try:
        return bytes(data[span[0]:span[1]]).decode("utf-8")
    except UnicodeDecodeError:
        raise OtlpDecodeError("a string field is not UTF-8") from None


def _double(value: int) -> float:
    return _DOUBLE.unpack(_FIXED64.pack(value))[0]


def _signed64(value: int) -> int:
    return _SFIXED64.unpack(_FIXED64.pack(value))[0]


def _zigzag32(value: int) -> int:
    value &= 0xFFFFFFFF
    return (value >> 1) ^ -(value & 1)


def _repeated(data: memoryview, number: int, wire: int, value, scalar_wire: int,
              out: list, convert) -> None:
    """A repeated number, packed (LEN) or one element at a time."""
    if wire == scalar_wire:
        out.append(convert(value))
        return
    _expect(number, wire, LEN)
    start, end = value
    if scalar_wire == FIXED64:
        if (end - start) % 8:
            raise OtlpDecodeError(f"field {number}: packed length not a multiple of 8")
        out.extend(convert(v) for (v,) in _FIXED64.iter_unpack(data[start:end]))
    else:
        pos = start
        while pos < end:
            v, pos = _varint(data, pos, end)
            out.append(convert(v))


# -- the messages -------------------------------------------------------------------------

def decode_metrics_data(data: bytes | bytearray | memoryview,
                        max_items: int = MAX_ITEMS) -> list[ResourceMetrics]:
    """MetricsData's resource_metrics; raises :class:`OtlpDecodeError` (only), also
    past ``max_items`` metrics and data points together."""
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    budget = [max_items]
    out = []
    for number, wire, value in _fields(view, 0, len(view)):
        if number == 1:
            _expect(number, wire, LEN)
            out.append(_resource_metrics(view, *value, budget))
    return out


def _spend(budget: list) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise OtlpDecodeError("more metrics and data points than the reader takes")


def _resource_metrics(data, start, end, budget) -> ResourceMetrics:
    rm = ResourceMetrics()
    for number, wire, value in _fields(data, start, end):
        if number == 1:
            _expect(number, wire, LEN)
            for n, w, v in _fields(data, *value):
                if n == 1:
                    _key_value(data, n, w, v, rm.attributes, 0)
        elif number == 2:
            _expect(number, wire, LEN)
            rm.scopes.append(_scope_metrics(data, *value, budget))
    return rm


def _scope_metrics(data, start, end, budget) -> Scope:
    scope = Scope()
    for number, wire, value in _fields(data, start, end):
        if number == 1:
            _expect(number, wire, LEN)
            for n, w, v in _fields(data, *value):
                if n in (1, 2):
                    _expect(n, w, LEN)
                    text = _string(data, v)
                    if n == 1:
                        scope.name = text
                    else:
                        scope.version = text
        elif number == 2:
            _expect(number, wire, LEN)
            _spend(budget)
            scope.metrics.append(_metric(data, *value, budget))
    return scope


_KINDS = {5: "gauge", 7: "sum", 9: "histogram", 10: "exponential_histogram", 11: "summary"}


def _metric(data, start, end, budget) -> Metric:
    metric = Metric()
    for number, wire, value in _fields(data, start, end):
        if number in (1, 2, 3):
            _expect(number, wire, LEN)
            setattr(metric, ("name", "description", "unit")[number - 1], _string(data, value))
        elif number in _KINDS:
            _expect(number, wire, LEN)
            metric.kind = _KINDS[number]   # a oneof: the last one read wins, as protobuf's
            metric.points = []
            _data(data, number, *value, metric, budget)
    return metric


def _data(data, kind: int, start: int, end: int, metric: Metric, budget) -> None:
    """Gauge, Sum, Histogram, ExponentialHistogram or Summary."""
    for number, wire, value in _fields(data, start, end):
        if number == 1:
            _expect(number, wire, LEN)
            _spend(budget)
            metric.points.append(_point(data, *value, *_POINTS[kind]))
        elif number == 2 and kind != 5 and kind != 11:
            _expect(number, wire, VARINT)
            metric.temporality = value & 0xFFFFFFFF
        elif number == 3 and kind == 7:
            _expect(number, wire, VARINT)
            metric.monotonic = bool(value)


def _point(data, start: int, end: int, attributes: int, read_field) -> DataPoint:
    """A data point of any kind: its attributes (each kind has them at its own
    number), start and time (2 and 3 in every kind), the rest by ``read_field``."""
    point = DataPoint()
    for number, wire, value in _fields(data, start, end):
        if number == attributes:
            _key_value(data, number, wire, value, point.attributes, 0)
        elif number in (2, 3):
            _times(point, number, wire, value)
        else:
            read_field(data, point, number, wire, value)
    return point


def _number_field(data, point: DataPoint, number: int, wire: int, value) -> None:
    if number == 4:
        _expect(number, wire, FIXED64)
        point.value = _double(value)
    elif number == 6:
        _expect(number, wire, FIXED64)
        point.value = _signed64(value)


def _count_or_sum(point: DataPoint, number: int, wire: int, value) -> None:
    """count (4) and sum (5), at the same numbers in the three distribution kinds
    (HistogramDataPoint, ExponentialHistogramDataPoint, SummaryDataPoint)."""
    if number == 4:
        _expect(number, wire, FIXED64)
        point.count = value
    elif number == 5:
        _expect(number, wire, FIXED64)
        point.sum = _double(value)


def _histogram_field(data, point: DataPoint, number: int, wire: int, value) -> None:
    if number == 6:
        _repeated(data, number, wire, value, FIXED64, point.bucket_counts, int)
    elif number == 7:
        _repeated(data, number, wire, value, FIXED64, point.explicit_bounds, _double)
    else:
        _count_or_sum(point, number, wire, value)


def _exponential_field(data, point: DataPoint, number: int, wire: int, value) -> None:
    if number == 6:
        _expect(number, wire, VARINT)
        point.scale = _zigzag32(value)
    else:
        _count_or_sum(point, number, wire, value)


def _summary_field(data, point: DataPoint, number: int, wire: int, value) -> None:
    if number != 6:
        _count_or_sum(point, number, wire, value)
        return
    _expect(number, wire, LEN)
    q = v = 0.0
    for n, w, x in _fields(data, *value):
        if n in (1, 2):
            _expect(n, w, FIXED64)
            if n == 1:
                q = _double(x)
            else:
                v = _double(x)
    point.quantiles.append((q, v))


# A data point kind's attributes number and its other fields, by Metric's field.
_POINTS = {5: (7, _number_field), 7: (7, _number_field), 9: (9, _histogram_field),
           10: (1, _exponential_field), 11: (7, _summary_field)}


def _times(point: DataPoint, number: int, wire: int, value: int) -> None:
    _expect(number, wire, FIXED64)
    if number == 2:
        point.start_time_unix_nano = value
    else:
        point.time_unix_nano = value


def _key_value(data, number: int, wire: int, value, out: dict, depth: int) -> None:
    """A KeyValue field into ``out`` (a repeated key: the last value wins)."""
    _expect(number, wire, LEN)
    key, any_value = "", None
    for n, w, v in _fields(data, *value):
        if n == 1:
            _expect(n, w, LEN)
            key = _string(data, v)
        elif n == 2:
            _expect(n, w, LEN)
            any_value = _any_value(data, *v, depth + 1)
    out[key] = any_value


def _any_value(data, start: int, end: int, depth: int):
    if depth > MAX_DEPTH:
        raise OtlpDecodeError(f"attribute values nested deeper than {MAX_DEPTH}")
    result: Any = None
    for number, wire, value in _fields(data, start, end):
        if number == 1 or number == 7:
            _expect(number, wire, LEN)
            result = _string(data, value) if number == 1 \
                else bytes(data[value[0]:value[1]])
        elif number == 2:
            _expect(number, wire, VARINT)
            result = bool(value)
        elif number == 3:
            _expect(number, wire, VARINT)
            result = _signed64(value)
        elif number == 4:
            _expect(number, wire, FIXED64)
            result = _double(value)
        elif number == 5:
            _expect(number, wire, LEN)
            result = [_any_value(data, *v, depth + 1)
                      for n, w, v in _fields(data, *value) if n == 1 and _is_len(n, w)]
        elif number == 6:
            _expect(number, wire, LEN)
            result = {}
            for n, w, v in _fields(data, *value):
                if n == 1:
                    _key_value(data, n, w, v, result, depth + 1)
    return result


def _is_len(number: int, wire: int) -> bool:
    _expect(number, wire, LEN)
    return True


def attribute_text(value: Any) -> str:
    """An attribute value as a label value: strings as they are, the rest as
    OTLP's JSON mapping would print them (compactly)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return "[" + ",".join(attribute_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={attribute_text(v)}" for k, v in value.items()) + "}"
    return repr(value) if isinstance(value, float) else str(value)


__all__ = ["CUMULATIVE", "DELTA", "DataPoint", "Metric", "OtlpDecodeError",
           "ResourceMetrics", "Scope", "TelemetryTooLargeError", "attribute_text",
           "decode_metrics_data", "decompress_payload"]
