"""The OTLP MetricsData reader (kafka_net/protocol/otlp.py): what it reads from
bytes written field by field (tests/otlp_support.py), and that no input makes it
raise anything but OtlpDecodeError (Hypothesis)."""

from __future__ import annotations

import gzip
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.protocol.otlp import (
    CUMULATIVE, DELTA, MAX_DEPTH, OtlpDecodeError, TelemetryTooLargeError, attribute_text,
    decode_metrics_data, decompress_payload)
from tests.otlp_support import (
    FIXED64, VARINT, any_value, double, gauge, histogram, length, metrics_data,
    number_point, sum_metric, summary, tag, varint)


def test_every_kind_of_metric_and_attribute_is_read():
    data = metrics_data(
        gauge("g", number_point(1.5, {"node.id": 1, "ok": True, "ratio": 0.5}),
              description="a gauge"),
        sum_metric("c", number_point(-3), temporality=CUMULATIVE),
        histogram("h", 3, 6.0, [1, 1, 1], [1.0, 2.0], attrs={"topic": "t"}),
        summary("s", 2, 3.0, [(0.5, 1.0)]),
        resource={"list": [1, "a"], "map": {"k": b"\x01"}}, scope="librdkafka")
    [resource] = decode_metrics_data(data)
    assert resource.attributes == {"list": [1, "a"], "map": {"k": b"\x01"}}
    [scope] = resource.scopes
    assert scope.name == "librdkafka"
    g, c, h, s = scope.metrics
    assert (g.name, g.kind, g.description, g.points[0].value, g.points[0].attributes) == (
        "g", "gauge", "a gauge", 1.5, {"node.id": 1, "ok": True, "ratio": 0.5})
    assert (c.kind, c.temporality, c.monotonic, c.points[0].value) == (
        "sum", CUMULATIVE, True, -3)
    assert (h.kind, h.temporality, h.points[0].count, h.points[0].sum,
            h.points[0].bucket_counts, h.points[0].explicit_bounds,
            h.points[0].attributes) == (
        "histogram", DELTA, 3, 6.0, [1, 1, 1], [1.0, 2.0], {"topic": "t"})
    assert (s.kind, s.points[0].count, s.points[0].quantiles) == ("summary", 2, [(0.5, 1.0)])


def test_unknown_fields_are_skipped_and_repeated_numbers_read_unpacked():
    point = tag(4, FIXED64) + struct.pack("<Q", 5) + tag(6, FIXED64) + \
        struct.pack("<Q", 7) + tag(7, FIXED64) + struct.pack("<d", 1.0) + \
        tag(99, VARINT) + varint(1) + length(98, b"ignored") + tag(97, 5) + b"\0\0\0\0"
    metric = length(1, b"h") + length(9, length(1, point)) + tag(50, VARINT) + varint(3)
    data = length(1, length(2, length(2, metric))) + tag(9, VARINT) + varint(1)
    [h] = decode_metrics_data(data)[0].scopes[0].metrics
    assert (h.points[0].count, h.points[0].bucket_counts, h.points[0].explicit_bounds) == (
        5, [7], [1.0])


@pytest.mark.parametrize("data,why", [
    (b"\x0a", "truncated varint"),
    (b"\x0a\x05ab", "past the message's end"),
    (b"\x0b", "wire type 3"),
    (b"\x00", "field number 0"),
    (b"\x09" + bytes(7), "truncated 64-bit"),
    (b"\x80" * 11, "longer than 10 bytes"),
    (tag(1, VARINT) + varint(1), "wire type 0, expected 2"),
    (length(1, length(2, length(2, length(1, b"\xff\xfe")))), "not UTF-8"),
])
def test_malformed_input_is_one_defined_error(data, why):
    with pytest.raises(OtlpDecodeError, match=why):
        decode_metrics_data(data)


def test_attribute_nesting_is_bounded():
    value = any_value("x")
    for _ in range(MAX_DEPTH + 1):
        value = length(5, length(1, value))
    data = length(1, length(1, length(1, length(1, b"k") + length(2, value))))
    with pytest.raises(OtlpDecodeError, match="nested deeper"):
        decode_metrics_data(data)


def test_attribute_text():
    assert [attribute_text(v) for v in ("s", True, 3, 0.5, None, b"\x01", [1, "a"], {"k": 1})] \
        == ["s", "true", "3", "0.5", "", "01", "[1,a]", "{k=1}"]


def test_decompress_payload_bounds_and_errors():
    assert decompress_payload(0, b"abc", 3) == b"abc"
    with pytest.raises(TelemetryTooLargeError):
        decompress_payload(0, b"abcd", 3)
    with pytest.raises(TelemetryTooLargeError):
        decompress_payload(1, gzip.compress(bytes(1000)), 999)
    with pytest.raises(OtlpDecodeError):
        decompress_payload(1, b"not gzip", 100)
    with pytest.raises(OtlpDecodeError):
        decompress_payload(9, b"x", 100)


# -- Hypothesis: nothing but OtlpDecodeError --------------------------------------------

def _fields():
    """Protobuf-shaped bytes: valid tags and lengths around random content, which
    reaches deeper into the reader than uniformly random bytes do."""
    leaf = st.one_of(
        st.binary(max_size=24),
        st.builds(lambda n, v: tag(n, VARINT) + varint(v), st.integers(1, 14),
                  st.integers(0, 2**64 - 1)),
        st.builds(lambda n, v: double(n, v), st.integers(1, 14), st.floats()),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(length, st.integers(1, 14), inner),
            st.builds(lambda parts: b"".join(parts), st.lists(inner, max_size=4))),
        max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=256), _fields()))
def test_no_input_raises_anything_but_otlp_decode_error(data):
    try:
        decode_metrics_data(data)
    except OtlpDecodeError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=128), st.integers(-1, 6), st.integers(0, 4096))
def test_no_payload_raises_anything_but_the_two_defined_errors(data, codec, limit):
    try:
        decompress_payload(codec, data, limit)
    except (OtlpDecodeError, TelemetryTooLargeError):
        pass


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=8), st.floats(allow_nan=False)), max_size=5))
def test_gauges_written_are_read_back(points):
    data = metrics_data(*(gauge(name, number_point(value)) for name, value in points))
    decoded = decode_metrics_data(data)[0].scopes[0].metrics
    assert [(m.name, m.points[0].value) for m in decoded] == points


def test_the_number_of_metrics_and_points_is_bounded():
    empty_points = gauge("g", *([b""] * 10))
    assert len(decode_metrics_data(metrics_data(empty_points), max_items=11)[0]
               .scopes[0].metrics[0].points) == 10
    with pytest.raises(OtlpDecodeError, match="more metrics and data points"):
        decode_metrics_data(metrics_data(empty_points), max_items=10)
