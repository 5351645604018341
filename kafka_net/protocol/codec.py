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

from dataclasses import dataclass
from typing import Mapping

from kafka_net.protocol.api_keys import ApiKey, api_name
from kafka_net.protocol.errors import InvalidRequestError, UnsupportedVersionError
from kafka_net.protocol.framing import encode_frame, finish_frame
from kafka_net.protocol.headers import (
    RequestHeader, decode_response_header, encode_request_header, encode_response_header,
    peek_request_header, read_request_header, request_header_version,
    response_header_version)
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.schema import Versions

_API_VERSIONS = int(ApiKey.API_VERSIONS)
_SIZE_PLACEHOLDER = bytes(4)  # the frame's int32 size, filled in once the body is written


@dataclass(slots=True)
class ParsedRequest:
    header: RequestHeader
    body: dict | None          # None only when unsupported_version is set
    body_size: int             # bytes after the header (Kafka's RequestBytes)
    unsupported_version: bool = False


def parse_request(frame: bytes, supported: Mapping[int, Versions],
                  routes: dict | None = None) -> ParsedRequest:
    """Decode one frame payload, refusing anything the broker would close on.

    ``routes``, if given, is a cache owned by the caller and valid for this one
    ``supported`` table: (api_key, api_version) of a request that passed every
    check -> (its header version, its body decoder).  The next request of that
    key and version then skips the lookups and range checks it already passed
    (a request's every other check, its header and body, is still made).
    """
    api_key, api_version, correlation_id = peek_request_header(frame)
    if routes is not None:
        route = routes.get((api_key, api_version))
        if route is not None:
            header_version, decoder = route
            header, offset = _read_header(frame, api_key, api_version, correlation_id,
                                          None, header_version)
            return ParsedRequest(header, _decode_body(decoder, frame, offset, api_key,
                                                      api_version), len(frame) - offset)
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
        routes[(api_key, api_version)] = (header.header_version, decoder)
    return ParsedRequest(header, body, len(frame) - offset)


def _read_header(frame: bytes, api_key: int, api_version: int, correlation_id: int,
                 flexible: Versions | None, version: int | None = None):
    try:
        return read_request_header(frame, api_key, api_version, correlation_id, flexible,
                                   version)
    except InvalidRequestError as exc:
        raise InvalidRequestError(
            f"Error parsing request header. Our best guess of the apiKey is: {api_key} "
            f"({exc})") from None


def _decode_body(decoder, frame: bytes, offset: int, api_key: int, api_version: int) -> dict:
    try:
        return decoder(frame, offset)[0]  # no copy of the frame's tail
    except InvalidRequestError as exc:
        raise InvalidRequestError(
            f"Error getting request for apiKey: {api_name(api_key)}, "
            f"apiVersion: {api_version}: {exc}") from None


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict) -> bytes:
    """A complete response frame (size prefix, header, body), built in one buffer."""
    schema = MESSAGES[api_key].response
    buf = bytearray(_SIZE_PLACEHOLDER)
    buf += encode_response_header(
        correlation_id, response_header_version(api_key, api_version, schema.flexible))
    schema.encode_into(buf, body, api_version)
    return finish_frame(buf)


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
