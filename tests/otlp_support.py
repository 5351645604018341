"""A small OTLP MetricsData protobuf writer for the tests: what a KIP-714 client
pushes, built field by field (metrics.proto's numbers), so the reader in
kafka_net/protocol/otlp.py is checked against bytes it did not write."""

from __future__ import annotations

import struct

VARINT, FIXED64, LEN = 0, 1, 2
DELTA, CUMULATIVE = 1, 2


def varint(value: int) -> bytes:
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def length(number: int, payload: bytes) -> bytes:
    return tag(number, LEN) + varint(len(payload)) + payload


def fixed64(number: int, value: int) -> bytes:
    return tag(number, FIXED64) + struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF)


def double(number: int, value: float) -> bytes:
    return tag(number, FIXED64) + struct.pack("<d", value)


def any_value(value) -> bytes:
    if isinstance(value, str):
        return length(1, value.encode())
    if isinstance(value, bool):
        return tag(2, VARINT) + varint(int(value))
    if isinstance(value, int):
        return tag(3, VARINT) + varint(value)
    if isinstance(value, float):
        return double(4, value)
    if isinstance(value, list):
        return length(5, b"".join(length(1, any_value(v)) for v in value))
    if isinstance(value, dict):
        return length(6, b"".join(length(1, key_value(k, v)) for k, v in value.items()))
    return length(7, bytes(value))


def key_value(key: str, value) -> bytes:
    return length(1, key.encode()) + length(2, any_value(value))


def attributes(number: int, attrs: dict | None) -> bytes:
    return b"".join(length(number, key_value(k, v)) for k, v in (attrs or {}).items())


def number_point(value, attrs: dict | None = None, time_ns: int = 1_700_000_000_000_000_000
                 ) -> bytes:
    body = fixed64(2, time_ns - 1) + fixed64(3, time_ns) + attributes(7, attrs)
    return body + (double(4, value) if isinstance(value, float) else fixed64(6, value))


def gauge(name: str, *points: bytes, description: str = "") -> bytes:
    return _metric(name, description, length(5, b"".join(length(1, p) for p in points)))


def sum_metric(name: str, *points: bytes, monotonic: bool = True,
               temporality: int = DELTA) -> bytes:
    data = b"".join(length(1, p) for p in points) + tag(2, VARINT) + varint(temporality) + \
        tag(3, VARINT) + varint(int(monotonic))
    return _metric(name, "", length(7, data))


def histogram(name: str, count: int, total: float, buckets: list[int], bounds: list[float],
              attrs: dict | None = None, temporality: int = DELTA) -> bytes:
    point = fixed64(3, 1) + fixed64(4, count) + double(5, total) + attributes(9, attrs) + \
        length(6, b"".join(struct.pack("<Q", b) for b in buckets)) + \
        length(7, b"".join(struct.pack("<d", b) for b in bounds))
    return _metric(name, "", length(9, length(1, point) + tag(2, VARINT) + varint(temporality)))


def summary(name: str, count: int, total: float, quantiles: list[tuple[float, float]]) -> bytes:
    point = fixed64(4, count) + double(5, total) + b"".join(
        length(6, double(1, q) + double(2, v)) for q, v in quantiles)
    return _metric(name, "", length(11, length(1, point)))


def _metric(name: str, description: str, data: bytes) -> bytes:
    return length(1, name.encode()) + (length(2, description.encode()) if description
                                        else b"") + data


def metrics_data(*metrics: bytes, resource: dict | None = None, scope: str = "test") -> bytes:
    scope_metrics = length(1, length(1, scope.encode())) + b"".join(
        length(2, m) for m in metrics)
    resource_metrics = length(1, attributes(1, resource)) + length(2, scope_metrics)
    return length(1, resource_metrics)
