"""Primitive wire types: fixed-width integers, varints, UUIDs.

Example tests spell out the expected bytes by hand (one comment per field) so
that a reader can check them against the Kafka protocol guide without running
anything; the Hypothesis tests then cover the whole value range.
"""

from __future__ import annotations

import math
import struct
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.primitives import Reader, Writer, encode_uvarint

FAST = settings(max_examples=200, deadline=None)

INT8 = (-(2**7), 2**7 - 1)
INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def written(method: str, value) -> bytes:
    w = Writer()
    getattr(w, method)(value)
    return w.getvalue()


def read_all(method: str, data: bytes):
    """Read one value and insist that it consumed exactly ``data``."""
    r = Reader(data)
    value = getattr(r, method)()
    assert r.remaining() == 0, f"{method} left {r.remaining()} bytes unread"
    return value


# --- fixed-width: hand-written bytes ---------------------------------------------

@pytest.mark.parametrize("method, value, wire", [
    ("int8", 0, b"\x00"),
    ("int8", -1, b"\xff"),                                  # two's complement
    ("int8", 127, b"\x7f"),
    ("int8", -128, b"\x80"),
    ("int16", 0x0102, b"\x01\x02"),                         # big-endian: high byte first
    ("int16", -2, b"\xff\xfe"),
    ("uint16", 0xFFFF, b"\xff\xff"),                        # same bytes as int16 -1
    ("int32", 1, b"\x00\x00\x00\x01"),
    ("int32", -(2**31), b"\x80\x00\x00\x00"),
    ("uint32", 0xDEADBEEF, b"\xde\xad\xbe\xef"),
    ("int64", -1, b"\xff" * 8),
    ("int64", 2**40, b"\x00\x00\x01\x00\x00\x00\x00\x00"),  # 2**40 = byte 2 (from 0) is 0x01
    ("float64", 1.0, b"\x3f\xf0\x00\x00\x00\x00\x00\x00"),  # IEEE 754: sign 0, exp 0x3ff
    ("float64", -2.5, b"\xc0\x04\x00\x00\x00\x00\x00\x00"),
    ("boolean", True, b"\x01"),
    ("boolean", False, b"\x00"),
])
def test_fixed_width_bytes(method, value, wire):
    assert written(method, value) == wire
    assert read_all(method, wire) == value


def test_boolean_reads_any_nonzero_byte_as_true():
    # Kafka reads a boolean as "byte != 0"; 0x02 is not an error.
    assert read_all("boolean", b"\x02") is True
    assert read_all("boolean", b"\xff") is True


# --- varints: hand-written bytes -------------------------------------------------

@pytest.mark.parametrize("value, wire", [
    (0, b"\x00"),
    (1, b"\x01"),
    (127, b"\x7f"),                          # largest one-byte value
    (128, b"\x80\x01"),                      # low 7 bits 0 + continuation, then 1
    (300, b"\xac\x02"),                      # 300 = 0b10_0101100: 0x2c|0x80, then 0x02
    (16384, b"\x80\x80\x01"),                # 2**14
    (2**32 - 1, b"\xff\xff\xff\xff\x0f"),    # 4 x 7 bits + the top 4 bits
])
def test_uvarint_bytes(value, wire):
    assert written("uvarint", value) == wire
    assert encode_uvarint(value) == wire
    assert read_all("uvarint", wire) == value


@pytest.mark.parametrize("value, wire", [
    (0, b"\x00"),                            # zigzag: 0 -> 0
    (-1, b"\x01"),                           # -1 -> 1
    (1, b"\x02"),                            #  1 -> 2
    (-2, b"\x03"),                           # -2 -> 3
    (63, b"\x7e"),                           # 63 -> 126, still one byte
    (-64, b"\x7f"),                          # -64 -> 127, the last one-byte value
    (64, b"\x80\x01"),                       # 64 -> 128, two bytes
    (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),    # int32 max -> 2**32 - 2
    (-(2**31), b"\xff\xff\xff\xff\x0f"),     # int32 min -> 2**32 - 1
])
def test_varint_bytes(value, wire):
    assert written("varint", value) == wire
    assert read_all("varint", wire) == value


@pytest.mark.parametrize("value, wire", [
    (0, b"\x00"),
    (-1, b"\x01"),
    (2**31, b"\x80\x80\x80\x80\x10"),             # one past int32 max: zigzag 2**32
    (-(2**63), b"\xff" * 9 + b"\x01"),            # int64 min -> 2**64 - 1: 9 x 7 bits + 1 bit
    (2**63 - 1, b"\xfe" + b"\xff" * 8 + b"\x01"),  # int64 max -> 2**64 - 2
])
def test_varlong_bytes(value, wire):
    assert written("varlong", value) == wire
    assert read_all("varlong", wire) == value


def test_uuid_bytes():
    u = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    wire = bytes.fromhex("00112233445566778899aabbccddeeff")  # 16 raw bytes, no length
    assert written("uuid", u) == wire
    assert read_all("uuid", wire) == u


def test_reader_advances_and_starts_at_pos():
    data = b"\xaa\x00\x07\x00\x00\x00\x2a\x05"
    r = Reader(data, pos=1)          # skip the 0xaa
    assert r.int16() == 7            # 00 07
    assert r.int32() == 42           # 00 00 00 2a
    assert r.remaining() == 1
    assert r.raw(1) == b"\x05"
    assert r.pos == len(data) and r.remaining() == 0


@pytest.mark.parametrize("buf_type", [bytes, bytearray, memoryview])
def test_reader_accepts_bytes_like(buf_type):
    r = Reader(buf_type(b"\x00\x01\xac\x02"))
    assert r.int16() == 1
    assert r.uvarint() == 300


# --- writer refuses values it cannot represent -----------------------------------

def test_writer_refuses_out_of_range_varints():
    with pytest.raises(ValueError):
        Writer().uvarint(-1)
    with pytest.raises(ValueError):
        Writer().varint(2**31)
    with pytest.raises(ValueError):
        Writer().varint(-(2**31) - 1)
    with pytest.raises(ValueError):
        Writer().varlong(2**63)


# --- bad input: always InvalidRequestError ---------------------------------------

@pytest.mark.parametrize("method", ["uvarint", "varint"])
def test_overlong_varint_rejected(method):
    # Six bytes all saying "more follows": a 32-bit varint has at most 5 bytes.
    with pytest.raises(InvalidRequestError, match="longer than 5"):
        getattr(Reader(b"\x80" * 6 + b"\x00"), method)()
    # Five continuation bytes then a terminator is already one byte too many.
    with pytest.raises(InvalidRequestError):
        getattr(Reader(b"\x80" * 5 + b"\x00"), method)()


@pytest.mark.parametrize("method", ["uvarlong", "varlong"])
def test_overlong_varlong_rejected(method):
    # A 64-bit varint has at most 10 bytes.
    with pytest.raises(InvalidRequestError, match="longer than 10"):
        getattr(Reader(b"\x80" * 10 + b"\x00"), method)()
    assert getattr(Reader(b"\x80" * 9 + b"\x00"), method)() == 0  # 10 bytes: allowed


@pytest.mark.parametrize("method, wire", [
    # A fifth byte above 0x0f would set bits 32..34: not a 32-bit value.
    ("uvarint", b"\xff\xff\xff\xff\x1f"),
    ("varint", b"\xff\xff\xff\xff\x7f"),
    # A tenth byte above 0x01 would set bits 64+.
    ("uvarlong", b"\xff" * 9 + b"\x02"),
    ("varlong", b"\xff" * 9 + b"\x7f"),
])
def test_varint_wider_than_its_type_rejected(method, wire):
    with pytest.raises(InvalidRequestError):
        getattr(Reader(wire), method)()


@pytest.mark.parametrize("method, size", [
    ("int8", 1), ("int16", 2), ("uint16", 2), ("int32", 4), ("uint32", 4),
    ("int64", 8), ("float64", 8), ("boolean", 1), ("uuid", 16),
])
def test_truncated_fixed_width_raises_invalid_request(method, size):
    for n in range(size):
        r = Reader(b"\x01" * n)
        with pytest.raises(InvalidRequestError):
            getattr(r, method)()


@pytest.mark.parametrize("method", ["uvarint", "varint", "uvarlong", "varlong"])
@pytest.mark.parametrize("wire", [b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"])
def test_truncated_varint_raises_invalid_request(method, wire):
    with pytest.raises(InvalidRequestError):
        getattr(Reader(wire), method)()


def test_raw_beyond_end_or_negative_raises_invalid_request():
    with pytest.raises(InvalidRequestError):
        Reader(b"abc").raw(4)
    with pytest.raises(InvalidRequestError):
        Reader(b"abc").raw(-1)
    r = Reader(b"abc")
    assert r.raw(3) == b"abc"
    assert r.raw(0) == b""


READ_METHODS = ["int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
                "boolean", "uvarint", "uvarlong", "varint", "varlong", "uuid"]


@FAST
@given(data=st.binary(max_size=24), method=st.sampled_from(READ_METHODS))
def test_any_bytes_read_or_invalid_request(data, method):
    r = Reader(data)
    try:
        value = getattr(r, method)()
    except InvalidRequestError:
        return
    assert 0 < r.pos <= len(data)
    # Whatever was read must be a value of the declared type.
    if method == "varint":
        assert INT32[0] <= value <= INT32[1]
    elif method == "varlong":
        assert INT64[0] <= value <= INT64[1]
    elif method == "uvarint":
        assert 0 <= value < 2**32
    elif method == "uvarlong":
        assert 0 <= value < 2**64


# --- round trips -------------------------------------------------------------------

INT_CASES = [
    ("int8", st.integers(*INT8)),
    ("int16", st.integers(*INT16)),
    ("int32", st.integers(*INT32)),
    ("int64", st.integers(*INT64)),
    ("uint16", st.integers(0, 2**16 - 1)),
    ("uint32", st.integers(0, 2**32 - 1)),
    ("uvarint", st.integers(0, 2**32 - 1)),
    ("varint", st.integers(*INT32)),
    ("varlong", st.integers(*INT64)),
]
FIXED_SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "uint32": 4}


@pytest.mark.parametrize("method, strategy", INT_CASES, ids=[c[0] for c in INT_CASES])
def test_integer_round_trip(method, strategy):
    @FAST
    @given(value=strategy, suffix=st.binary(max_size=4))
    def check(value, suffix):
        wire = written(method, value)
        if method in FIXED_SIZE:
            assert len(wire) == FIXED_SIZE[method]
        # A value followed by other bytes: the reader must stop exactly at its end.
        r = Reader(wire + suffix)
        assert getattr(r, method)() == value
        assert r.pos == len(wire)
    check()


@FAST
@given(value=st.integers(0, 2**32 - 1))
def test_uvarint_length_is_minimal(value):
    wire = written("uvarint", value)
    assert len(wire) == max(1, math.ceil(value.bit_length() / 7))
    assert all(b & 0x80 for b in wire[:-1]) and not wire[-1] & 0x80


@FAST
@given(value=st.floats(allow_nan=True, allow_infinity=True))
def test_float64_round_trip(value):
    back = read_all("float64", written("float64", value))
    if math.isnan(value):
        assert math.isnan(back)
    else:
        assert back == value and math.copysign(1, back) == math.copysign(1, value)
    assert struct.pack(">d", back) == written("float64", value)


@FAST
@given(value=st.booleans())
def test_bool_round_trip(value):
    assert read_all("boolean", written("boolean", value)) is value


@FAST
@given(value=st.uuids(version=None) | st.just(uuid.UUID(int=0)))
def test_uuid_round_trip(value):
    assert read_all("uuid", written("uuid", value)) == value
