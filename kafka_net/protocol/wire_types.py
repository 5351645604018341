"""The wire types a schema field can have: fixed-width numbers, UUIDs, and
strings and bytes with their length prefixes (classic int16/int32, or
KIP-482's compact unsigned varint N+1 in flexible versions).  Arrays and
structs, which need a schema around them, are in :mod:`.schema`.
"""

from __future__ import annotations

import uuid as _uuid
from typing import Any

from kafka_net.protocol.chunked import splice_records
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.primitives import Reader, Writer


# A type knows how to read and write one value given two facts about where it
# sits: whether the enclosing message version is flexible (compact encodings),
# and whether this field may be null at this version.


class Type:
    name = "type"

    def read(self, r: Reader, flexible: bool, nullable: bool) -> Any:
        raise NotImplementedError

    def write(self, w: Writer, value: Any, flexible: bool, nullable: bool) -> None:
        raise NotImplementedError

    def default(self) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name.upper()


class _Fixed(Type):
    def __init__(self, name: str, reader: str, zero: Any) -> None:
        self.name, self._method, self._zero = name, reader, zero

    def read(self, r, flexible, nullable):
        return getattr(r, self._method)()

    def write(self, w, value, flexible, nullable):
        getattr(w, self._method)(value)

    def default(self):
        return self._zero


INT8 = _Fixed("int8", "int8", 0)
INT16 = _Fixed("int16", "int16", 0)
UINT16 = _Fixed("uint16", "uint16", 0)
INT32 = _Fixed("int32", "int32", 0)
UINT32 = _Fixed("uint32", "uint32", 0)
INT64 = _Fixed("int64", "int64", 0)
FLOAT64 = _Fixed("float64", "float64", 0.0)
BOOL = _Fixed("bool", "boolean", False)
UUID = _Fixed("uuid", "uuid", _uuid.UUID(int=0))
ZERO_UUID = _uuid.UUID(int=0)


def read_length(r: Reader, flexible: bool, classic_width: int) -> int:
    """Length prefix: -1 means null.  Compact lengths are stored as N+1."""
    if flexible:
        return r.uvarint() - 1
    return r.int16() if classic_width == 2 else r.int32()


def write_length(w: Writer, n: int, flexible: bool, classic_width: int) -> None:
    if flexible:
        w.uvarint(n + 1)
    elif classic_width == 2:
        w.int16(n)
    else:
        w.int32(n)


class _String(Type):
    name = "string"

    def read(self, r, flexible, nullable):
        n = read_length(r, flexible, 2)
        if n < 0:
            if nullable and n == -1:
                return None
            raise InvalidRequestError(f"null or negative length {n} for a non-nullable string")
        data = r.raw(n)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidRequestError(f"string is not UTF-8: {exc}") from None

    def write(self, w, value, flexible, nullable):
        if value is None:
            if not nullable:
                raise ValueError("null written to a non-nullable string")
            write_length(w, -1, flexible, 2)
            return
        data = value.encode("utf-8")
        if not flexible and len(data) > 0x7FFF:
            raise ValueError("string longer than 32767 bytes")
        write_length(w, len(data), flexible, 2)
        w.raw(data)

    def default(self):
        return ""


class _Bytes(Type):
    name = "bytes"

    def read(self, r, flexible, nullable):
        n = read_length(r, flexible, 4)
        if n < 0:
            if nullable and n == -1:
                return None
            raise InvalidRequestError(f"null or negative length {n} for non-nullable bytes")
        return r.raw(n)

    def write(self, w, value, flexible, nullable):
        if value is None:
            if not nullable:
                raise ValueError("null written to non-nullable bytes")
            write_length(w, -1, flexible, 4)
            return
        write_length(w, len(value), flexible, 4)
        w.raw(value)

    def default(self):
        return b""


STRING = _String()
BYTES = _Bytes()
class _Records(_Bytes):
    """Record batches travel as (nullable) bytes; the broker stores them as they
    came.  A value that is not bytes (a file Region of a Fetch from segment files)
    goes through :func:`~kafka_net.protocol.chunked.splice_records`, as in the
    generated encoders."""

    name = "records"

    def write(self, w, value, flexible, nullable):
        if value is None or value.__class__ is bytes:
            return super().write(w, value, flexible, nullable)
        write_length(w, len(value), flexible, 4)
        splice_records(w.buf, value)


RECORDS = _Records()
