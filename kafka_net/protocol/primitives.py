"""Kafka's primitive wire types: a Reader over received bytes and a Writer for sends.

Every multi-byte integer is big-endian.  Flexible versions (KIP-482) add
variable-length integers:

* unsigned varint: 7 bits per byte, least significant group first, the high bit
  set on every byte but the last (lengths, tag numbers, tagged-field sizes);
* signed varint / varlong: the same after ZigZag encoding, so that small
  negative numbers stay short (record fields inside a RecordBatch).

The signed and unsigned forms are written as separate functions on purpose:
deriving one from the other hides which one a field uses.

A :class:`Reader` that runs out of bytes raises :class:`InvalidRequestError`,
the codec's only error for peer input.
"""

from __future__ import annotations

import struct
import uuid as _uuid

from kafka_net.protocol.errors import InvalidRequestError

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")

# An unsigned varint carrying a 32-bit value needs at most 5 bytes, a 64-bit one 10.
_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10


class Reader:
    """Reads primitives from a bytes-like object, advancing ``pos``."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, n: int) -> int:
        """Reserve ``n`` bytes and return their start offset."""
        start = self.pos
        if n < 0 or start + n > self.end:
            raise InvalidRequestError(
                f"need {n} bytes at offset {start}, only {self.end - start} left"
            )
        self.pos = start + n
        return start

    def _unpack(self, st: struct.Struct):
        return st.unpack_from(self.buf, self._take(st.size))[0]

    def int8(self) -> int:
        return self._unpack(_INT8)

    def int16(self) -> int:
        return self._unpack(_INT16)

    def uint16(self) -> int:
        return self._unpack(_UINT16)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def uint32(self) -> int:
        return self._unpack(_UINT32)

    def int64(self) -> int:
        return self._unpack(_INT64)

    def float64(self) -> float:
        return self._unpack(_FLOAT64)

    def boolean(self) -> bool:
        return self._unpack(_INT8) != 0

    def raw(self, n: int) -> bytes:
        start = self._take(n)
        return bytes(self.buf[start:start + n])

    def uvarint(self, max_bytes: int = _MAX_VARINT_BYTES) -> int:
        # 5 bytes carry 35 bits and 10 bytes 70, more than the 32 / 64 the type
        # holds: a last byte with the extra bits set is refused (Kafka's Java
        # reader silently truncates them), so varint() stays a signed int32.
        bits = 32 if max_bytes <= _MAX_VARINT_BYTES else 64
        value = shift = 0
        for _ in range(max_bytes):
            byte = self.buf[self._take(1)]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value >> bits:
                    raise InvalidRequestError(f"varint {value} does not fit {bits} bits")
                return value
            shift += 7
        raise InvalidRequestError(f"varint longer than {max_bytes} bytes")

    def uvarlong(self) -> int:
        return self.uvarint(_MAX_VARLONG_BYTES)

    def varint(self) -> int:
        return _zigzag_decode(self.uvarint(_MAX_VARINT_BYTES))

    def varlong(self) -> int:
        return _zigzag_decode(self.uvarint(_MAX_VARLONG_BYTES))

    def uuid(self) -> _uuid.UUID:
        return _uuid.UUID(bytes=self.raw(16))


class Writer:
    """Accumulates an encoded message in a bytearray (a new one, or ``buf``)."""

    __slots__ = ("buf",)

    def __init__(self, buf: bytearray | None = None) -> None:
        self.buf = bytearray() if buf is None else buf

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def int8(self, v: int) -> None:
        self.buf += _INT8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _INT16.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _UINT16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _INT32.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _UINT32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _INT64.pack(v)

    def float64(self, v: float) -> None:
        self.buf += _FLOAT64.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.buf += data

    def uvarint(self, v: int) -> None:
        if v < 0:
            raise ValueError(f"unsigned varint cannot hold {v}")
        self.buf += encode_uvarint(v)

    def varint(self, v: int) -> None:
        self.buf += encode_uvarint(_zigzag_encode(v, 32))

    def varlong(self, v: int) -> None:
        self.buf += encode_uvarint(_zigzag_encode(v, 64))

    def uuid(self, v: _uuid.UUID) -> None:
        self.buf += v.bytes


def encode_uvarint(v: int) -> bytes:
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _zigzag_encode(v: int, bits: int) -> int:
    # Maps 0, -1, 1, -2, ... to 0, 1, 2, 3, ...; Python's >> is arithmetic,
    # so (v >> (bits - 1)) is all ones for negatives and zero otherwise.
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= v <= hi:
        raise ValueError(f"{v} does not fit a signed {bits}-bit varint")
    return ((v << 1) ^ (v >> (bits - 1))) & ((1 << bits) - 1)


def _zigzag_decode(n: int) -> int:
    return (n >> 1) ^ -(n & 1)
