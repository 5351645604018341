"""Compiled codecs: one schema at one version, turned into straight-line Python once.

:mod:`kafka_net.protocol.schema` says what a message looks like; interpreting
that field by field for every message costs a type dispatch per field.  This
module instead writes, for each (schema, version, encode or decode), the
Python a person would write by hand for exactly that layout, compiles it at
first use, and keeps it.  Print one to see what a schema means on the wire::

    python -m kafka_net.protocol.codegen ApiVersions 3 --response --encode

gives (abridged)::

    def encode_ApiVersionsResponse_v3(value, buf):
        # error_code: int16
        buf += S_h.pack(value.get('error_code', 0))
        # api_keys: [struct], compact array
        v1 = value.get('api_keys', _c1)
        ...
        n2 = len(v1)
        if n2 < 127: buf.append(n2 + 1)            # compact length: N+1 as uvarint
        else: buf += _uvarint(n2 + 1)
        for e3 in v1:
            # api_key, min_version, max_version (int16 x3), then tagged fields: none
            buf += S_hhhx.pack(e3.get('api_key', 0), ...)
        ...

Reading such a function answers the usual wire questions directly:

* Adjacent fixed-width fields become one ``struct.Struct`` (``>hhh``: three
  big-endian int16s); an ``x`` at its end is the empty tagged-field section
  (one 0 byte) of a flexible struct that has no tagged fields.
* Classic versions prefix strings with an int16 length and bytes and arrays
  with an int32 one (-1 = null); flexible versions (KIP-482) use an unsigned
  varint of N+1 (0 = null), written with a one-byte fast path.
* A field absent at the version is not there at all: the encoder never looks
  at it, the decoder fills in its default.  A tagged field is written only
  when it differs from its default, into the section that ends each flexible
  struct; the decoder skips tags it does not know.

The interpreter stays as the reference (``Schema.encode_interpreted`` /
``decode_interpreted``); ``tests/protocol/test_codegen.py`` checks that both
agree, byte for byte and error class for error class, on every message.
Bounds: a decoder checks lengths itself, and a fixed-width read or a varint
that runs past the end (``struct.error`` / ``IndexError``) is turned into
:class:`InvalidRequestError` at the top of the generated function.
"""

from __future__ import annotations

import copy
import struct
import sys
import uuid as _uuid
from typing import Callable

from kafka_net.protocol import schema as s
from kafka_net.protocol.codegen_emit import Decoder, Encoder, Source
from kafka_net.protocol.errors import InvalidRequestError
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


def _skip_tags(buf, p: int) -> int:
    """Skip a tagged-field section none of whose tags this struct knows."""
    count, p = _read_uvarint(buf, p)
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


_RUNTIME = {
    "InvalidRequestError": InvalidRequestError, "struct": struct, "_UUID": _uuid.UUID,
    "_uvarint": encode_uvarint, "_read_uvarint": _read_uvarint, "_tag_header": _tag_header,
    "_skip_tags": _skip_tags, "_short": _short, "_bad_length": _bad_length,
    "_truncated": _truncated, "_pack": struct.pack, "_unpack_from": struct.unpack_from,
    "_deepcopy": copy.deepcopy, "_MISSING": object(),
}


# --- compiling and the cache's public face ---------------------------------------------

def source(schema: s.Schema, version: int, direction: str) -> tuple[str, dict, str]:
    """Generated source for ``direction`` ("encode" or "decode"): (text, namespace, name)."""
    src = Source(_RUNTIME)
    kind = Encoder if direction == "encode" else Decoder
    name = kind(src, schema, version).build()
    return src.text(), src.names, name


def compile_codec(schema: s.Schema, version: int, direction: str) -> Callable:
    text, namespace, name = source(schema, version, direction)
    code = compile(text, f"<{direction} {schema.name} v{version}>", "exec")
    exec(code, namespace)  # our own generated text, from our own schema data
    return namespace[name]


def _find_api(text: str):
    from kafka_net.protocol.api_keys import ApiKey
    from kafka_net.protocol.messages import MESSAGES
    if text.lstrip("-").isdigit():
        key = int(text)
    else:
        wanted = text.replace("_", "").replace("-", "").lower()
        matches = [k for k in ApiKey if k.name.replace("_", "").lower() == wanted]
        if not matches:
            raise SystemExit(f"unknown API {text!r}")
        key = matches[0]
    if key not in MESSAGES:
        raise SystemExit(f"no schema for API key {key}")
    return MESSAGES[key]


def main(argv: list[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(
        prog="python -m kafka_net.protocol.codegen",
        description="Print the generated encoder or decoder of one message version.")
    parser.add_argument("api", help="API name (ApiVersions, api_versions) or key (18)")
    parser.add_argument("version", type=int)
    side = parser.add_mutually_exclusive_group()
    side.add_argument("--request", dest="side", action="store_const", const="request")
    side.add_argument("--response", dest="side", action="store_const", const="response")
    way = parser.add_mutually_exclusive_group()
    way.add_argument("--encode", dest="direction", action="store_const", const="encode")
    way.add_argument("--decode", dest="direction", action="store_const", const="decode")
    args = parser.parse_args(argv)
    schema = getattr(_find_api(args.api), args.side or "request")
    if args.version not in schema.valid:
        raise SystemExit(f"{schema.name} has no version {args.version} (valid {schema.valid})")
    sys.stdout.write(source(schema, args.version, args.direction or "decode")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
