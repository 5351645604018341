"""Whole requests and responses: frame payload in, header + body out, and back.

This is the one choke point where a request is accepted or refused, in
Kafka's order (``SocketServer.parseRequestHeader`` then ``RequestContext.parseRequest``):

1. Fewer than 8 bytes, or an API key Kafka does not define
   -> ``Error parsing request header``, close.
2. An API this broker does not serve -> ``... which is not enabled``, close.
3. A header that does not parse -> close.
4. A version outside the served range -> close; **except ApiVersions**, which
   is answered with a v0 UNSUPPORTED_VERSION body (the request body is not
   parsed, since we cannot know its layout).
5. A body that does not parse -> ``Error getting request for apiKey``, close.
   Trailing bytes after a well-formed body are ignored, as Kafka does.

Every refusal is an :class:`InvalidRequestError` whose message is the reason
the Processor logs when it closes the connection.
"""

from __future__ import annotations

import struct
from typing import Mapping, NamedTuple

from kafka_net.protocol import readable
from kafka_net.protocol.api_keys import ApiKey, api_name
from kafka_net.protocol.chunked import ChunkBuffer, ChunkedFrame, chunk_frame, region_bytes
from kafka_net.protocol.errors import InvalidRequestError, UnsupportedVersionError
from kafka_net.protocol.framing import encode_frame
from kafka_net.protocol.headers import (
    HEADER_PEEK, RequestHeader, decode_response_header, encode_request_header,
    peek_request_header, read_request_header, request_header_version,
    response_header_version)
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.schema import RECORDS, Array, Struct, Versions

_API_VERSIONS = int(ApiKey.API_VERSIONS)


class ParsedRequest(NamedTuple):
    """Immutable; a named tuple, so that the hot path can build it with one C call
    (``tuple.__new__``) instead of a generated ``__init__``."""

    header: RequestHeader
    body: dict | None          # None only when unsupported_version is set
    body_size: int             # bytes after the header (Kafka's RequestBytes)
    unsupported_version: bool = False


_new_tuple = tuple.__new__
_NO_ROUTES: dict = {}


def parse_request(frame: bytes, supported: Mapping[int, Versions],
                  routes: dict | None = None) -> ParsedRequest:
    """Decode one frame payload, refusing anything the broker would close on.

    ``routes``, if given, is a cache owned by the caller and valid for this one
    ``supported`` table: api_key -> api_version of a request that passed every
    check -> (its header version, its body decoder).  By key, then version, not
    by an (api_key, api_version) tuple: the Processors share it, and on
    free-threaded CPython 3.13 a lookup by a new, equal tuple in a dict another
    thread filled spins in the dict's lock (docs/design.md, "Free threading");
    small ints are immortal and need no reference count.  The next request of that
    key and version then skips the lookups and range checks it already passed
    (a request's every other check, its header and body, is still made).
    """
    if routes is not None and len(frame) >= 8:
        api_key, api_version, correlation_id = HEADER_PEEK.unpack_from(frame, 0)
        route = routes.get(api_key, _NO_ROUTES).get(api_version)
        if route is not None:
            # The common case, written out: every request of a connection after
            # its first takes it, and each call saved is ~0.1 µs on the GIL.
            try:
                header, offset = read_request_header(frame, api_key, api_version,
                                                     correlation_id, None, route[0])
            except InvalidRequestError as exc:
                raise _header_error(api_key, exc) from None
            try:
                body = route[1](frame, offset)[0]  # no copy of the frame's tail
            except InvalidRequestError as exc:
                raise _body_error(api_key, api_version, exc) from None
            return _new_tuple(ParsedRequest, (header, body, len(frame) - offset, False))
    else:
        api_key, api_version, correlation_id = peek_request_header(frame)
    message = MESSAGES.get(api_key)
    served = supported.get(api_key)
    if message is None or served is None:
        if api_key not in ApiKey._value2member_map_:
            raise InvalidRequestError(
                f"Error parsing request header. Unexpected api key: {api_key}")
        raise InvalidRequestError(
            f"Received request api key {api_name(api_key)} with version {api_version} "
            "which is not enabled")
    schema = message.request
    header, offset = _read_header(frame, api_key, api_version, correlation_id,
                                  schema.flexible)
    if api_version not in served:
        if api_key == _API_VERSIONS:
            return ParsedRequest(header, None, len(frame) - offset, unsupported_version=True)
        raise UnsupportedVersionError(
            f"Received request api key {api_name(api_key)} with version {api_version} "
            f"which is not enabled (supported {served})")
    decoder = schema.decoder(api_version)   # served versions are valid ones (tested)
    body = _decode_body(decoder, frame, offset, api_key, api_version)
    if routes is not None:
        routes.setdefault(api_key, {})[api_version] = (header.header_version, decoder)
    return ParsedRequest(header, body, len(frame) - offset)


def _read_header(frame: bytes, api_key: int, api_version: int, correlation_id: int,
                 flexible: Versions | None):
    try:
        return read_request_header(frame, api_key, api_version, correlation_id, flexible)
    except InvalidRequestError as exc:
        raise _header_error(api_key, exc) from None


def _header_error(api_key: int, exc: InvalidRequestError) -> InvalidRequestError:
    return InvalidRequestError(
        f"Error parsing request header. Our best guess of the apiKey is: {api_key} ({exc})")


def _decode_body(decoder, frame: bytes, offset: int, api_key: int, api_version: int) -> dict:
    try:
        return decoder(frame, offset)[0]  # no copy of the frame's tail
    except InvalidRequestError as exc:
        raise _body_error(api_key, api_version, exc) from None


def _body_error(api_key: int, api_version: int, exc: InvalidRequestError
                ) -> InvalidRequestError:
    return InvalidRequestError(
        f"Error getting request for apiKey: {api_name(api_key)}, "
        f"apiVersion: {api_version}: {exc}")


def encode_response(api_key: int, api_version: int, correlation_id: int,
                    body: dict) -> bytes | ChunkedFrame:
    """A complete response frame (size prefix, header, body), built in one buffer.

    A ``bytes`` frame, except where a records field holds a
    :class:`~kafka_net.protocol.chunked.Region` (a Fetch answered from segment
    files): then a :class:`~kafka_net.protocol.chunked.ChunkedFrame`, its bytes
    cut around the regions, which are never read here.
    """
    route = (_RESPONSE_ROUTES.get(api_key, _NO_ROUTES).get(api_version)
             or _response_route(api_key, api_version))
    buf = route[2](_SIZE_AND_CORRELATION_ID.pack(0, correlation_id))
    if route[1]:
        buf.append(0)   # response header v1: an empty tagged-field section
    route[0](body, buf)
    if buf.__class__ is bytearray or not buf.regions:
        _SIZE_AND_CORRELATION_ID.pack_into(buf, 0, len(buf) - 4, correlation_id)
        return bytes(buf)
    _SIZE_AND_CORRELATION_ID.pack_into(buf, 0, len(buf) - 4 + region_bytes(buf),
                                       correlation_id)
    return chunk_frame(buf)


# api_key -> api_version -> (the body's compiled encoder, whether the response header
# is v1, the buffer type to encode into): what encode_response would otherwise look up
# per response (the schema, its encoder, the header version), 0.4 µs of each.  Threads
# may race to fill it: each stores the same triple.  Keyed as parse_request's routes,
# for the same reason (free threading: a lookup by a new tuple key spins).
_RESPONSE_ROUTES: dict[int, dict[int, tuple]] = {}
_SIZE_AND_CORRELATION_ID = struct.Struct(">ii")


def _response_route(api_key: int, api_version: int) -> tuple:
    schema = MESSAGES[api_key].response
    encoder = schema.encoder(api_version)
    if encoder is None:
        raise ValueError(f"{schema.name} has no version {api_version} (valid {schema.valid})")
    # Only a response with a records field (Fetch) can carry regions: only it pays
    # for a ChunkBuffer.
    buffer_type = ChunkBuffer if _has_records(schema.struct) else bytearray
    route = (encoder, response_header_version(api_key, api_version, schema.flexible) >= 1,
             buffer_type)
    if not readable.READABLE:   # KAFKA_NET_READABLE: looked up again every time
        _RESPONSE_ROUTES.setdefault(api_key, {})[api_version] = route
    return route


def _has_records(struct_type) -> bool:
    for f in struct_type.fields:
        t = f.type.item if isinstance(f.type, Array) else f.type
        if t is RECORDS or (isinstance(t, Struct) and _has_records(t)):
            return True
    return False


# --- the client side, for tests, the load generator and capture tools -------------


def encode_request(api_key: int, api_version: int, correlation_id: int, body: dict,
                   client_id: str | None = "kafka-net") -> bytes:
    """A complete request frame, as a client would send it."""
    schema = MESSAGES[api_key].request
    header = RequestHeader(api_key, api_version, correlation_id, client_id,
                           request_header_version(api_key, api_version, schema.flexible))
    return encode_frame(encode_request_header(header) + schema.encode(body, api_version))


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[int, dict]:
    """Decode a response frame payload (no size prefix): (correlation_id, body)."""
    schema = MESSAGES[api_key].response
    correlation_id, offset = decode_response_header(
        payload, response_header_version(api_key, api_version, schema.flexible))
    return correlation_id, schema.decode(payload, api_version, offset)
