"""Compiled codecs: each schema, at each version, turned into straight-line Python once.

:mod:`kafka_net.protocol.schema` declares what a message looks like.  Walking
that declaration for every message costs a type dispatch per field, so this
module writes, for each (schema, version, encode or decode), the Python one
would write by hand for exactly that layout, compiles it at first use and
keeps it (``Schema.encode`` / ``decode``).  Print one to see what a schema
means on the wire::

    python -m kafka_net.protocol.generated ApiVersions 3 --response --encode

(API by name or key; ``--request`` / ``--response``, ``--decode`` /
``--encode``; default request decode) prints, abridged::

    def encode_ApiVersionsResponse_v3(value, buf):
        # error_code int16
        buf += S_h.pack(value.get('error_code', 0))
        # api_keys: [struct], compact
        v1 = value.get('api_keys', _c2)
        ...
        n3 = len(v1)
        if n3 < 127:  # compact length N+1 fits one uvarint byte
            buf.append(n3 + 1)
        else:
            buf += _uvarint(n3 + 1)
        for e4 in v1:
            # api_key int16, min_version int16, max_version int16, then no tagged fields
            buf += S_hhhx.pack(e4.get('api_key', 0), e4.get('min_version', 0), ...)
        # throttle_time_ms int32
        buf += S_i.pack(value.get('throttle_time_ms', 0))
        # tagged fields, in tag order, each only when not at its default
        tags5 = []
        v6 = value.get('supported_features', _MISSING)  # tag 0
        ...

How to read it:

* ``S_hhhx`` is ``struct.Struct(">hhhx")``: adjacent fixed-width fields are
  packed in one call, big-endian (``b`` int8, ``h`` int16, ``i`` int32,
  ``q`` int64, ``?`` bool, ``16s`` uuid).  A trailing ``x`` is a zero byte:
  the empty tagged-field section that ends every struct of a flexible
  version (KIP-482) when the struct has no tagged fields at that version.
* Lengths: classic versions write int16 (strings) or int32 (bytes, arrays)
  N, -1 for null; flexible versions write an unsigned varint N+1, 0 for null.
* A field that does not exist at the version is simply not there; a field
  missing from ``value`` is written as its default (``_c2`` is the ``[]``
  default of api_keys; constants live beside the code).
* A tagged field goes into the section only when it differs from its
  default.  Decoders read tags in order, skip unknown ones, and read each
  known one in place, refusing one that reads past its own size.

How a body is read is written once, in ``codegen_emit.BodyWalk``: the
decoders and the body walkers (:mod:`kafka_net.protocol.walker`) are its two
back-ends.  The decoders check every length against the bytes left; a
fixed-width read or a varint that runs off the end (``struct.error``,
``IndexError``) becomes :class:`InvalidRequestError` at the top of the
generated function, so peer bytes still only ever raise that.  The
interpreter stays as the reference (``Schema.encode_interpreted`` /
``decode_interpreted``), and ``tests/protocol/test_codegen.py`` checks that
both give the same bytes, the same dicts and the same refusals for every
message at every version.
"""
from __future__ import annotations

import copy
import linecache
import struct
import uuid as _uuid
from typing import Callable

from kafka_net.protocol.chunked import splice_records
from kafka_net.protocol.codegen_emit import Decoder, Encoder, Source
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.fields import (
    MAX_TAGGED_FIELDS, too_many_elements, too_many_tagged_fields)
from kafka_net.protocol.primitives import encode_uvarint

# --- run-time helpers the generated code calls (rare paths only) -----------------

def _read_uvarint(buf, p: int) -> tuple[int, int]:
    """An unsigned varint at ``p`` (at most 5 bytes, 32 bits): (value, next offset)."""
    value = shift = 0
    for _ in range(5):
        byte = buf[p]
        p += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if value >> 32:
                raise InvalidRequestError(f"varint {value} does not fit 32 bits")
            return value, p
        shift += 7
    raise InvalidRequestError("varint longer than 5 bytes")


def _tag_header(buf, p: int, last: int) -> tuple[int, int, int]:
    """One tagged field's tag and size, checked: (tag, size, offset of its data)."""
    tag, p = _read_uvarint(buf, p)
    size, p = _read_uvarint(buf, p)
    if tag <= last:
        raise InvalidRequestError(f"tagged fields out of order: {tag} after {last}")
    if p + size > len(buf):
        raise _short(size, p, len(buf))
    return tag, size, p


def _tag_count(buf, p: int) -> tuple[int, int]:
    """A tagged-field section's count, refused above the limit before any is read."""
    count, p = _read_uvarint(buf, p)
    if count > MAX_TAGGED_FIELDS:
        raise too_many_tagged_fields(count)
    return count, p


def _skip_tags(buf, p: int) -> int:
    """Skip a tagged-field section none of whose tags this struct knows."""
    count, p = _tag_count(buf, p)
    last = -1
    for _ in range(count):
        last, size, p = _tag_header(buf, p, last)
        p += size
    return p


def _short(n: int, p: int, end: int) -> InvalidRequestError:
    return InvalidRequestError(f"need {n} bytes at offset {p}, only {end - p} left")


def _bad_length(n: int, what: str) -> InvalidRequestError:
    if what == "array":
        return InvalidRequestError(f"null or negative array length {n}")
    return InvalidRequestError(f"null or negative length {n} for a non-nullable {what}")


def _truncated(exc: Exception) -> InvalidRequestError:
    return InvalidRequestError(f"message ends early ({exc})")


def _past_end(p: int, end: int) -> InvalidRequestError:
    return InvalidRequestError(f"message ends early (offset {p} past {end})")


_RUNTIME = {
    "InvalidRequestError": InvalidRequestError, "struct": struct, "_UUID": _uuid.UUID,
    "_uvarint": encode_uvarint, "_read_uvarint": _read_uvarint, "_tag_header": _tag_header,
    "_tag_count": _tag_count, "_too_many": too_many_elements,
    "_skip_tags": _skip_tags, "_short": _short, "_bad_length": _bad_length,
    "_truncated": _truncated, "_past_end": _past_end, "_pack": struct.pack,
    "_unpack_from": struct.unpack_from,
    "_deepcopy": copy.deepcopy, "_MISSING": object(), "_splice_records": splice_records,
}


# --- compiling and the cache's public face ---------------------------------------------

def source(schema, version: int, direction: str) -> tuple[str, dict, str]:
    """Generated source for ``direction`` ("encode" or "decode") of a
    :class:`~kafka_net.protocol.schema.Schema`: (text, namespace, name)."""
    src = Source(_RUNTIME)
    kind = Encoder if direction == "encode" else Decoder
    name = kind(src, schema, version).build()
    return src.text(), src.names, name


def compile_codec(schema, version: int, direction: str) -> Callable:
    text, namespace, name = source(schema, version, direction)
    filename = f"<{direction} {schema.name} v{version}>"
    # Registered so that tracebacks and debuggers show the generated lines.
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)  # our text, from our schema data
    return namespace[name]

