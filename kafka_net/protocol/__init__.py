"""The Kafka wire protocol, sans-IO: bytes in, requests out; responses out as bytes.

Nothing in this package imports ``socket``, ``selectors``, ``threading`` or
``queue`` (``tests/test_layering.py`` enforces it), so the Processor threads,
the benchmark's reference server, the tests and the Spark jobs all share it.

Reading order for newcomers: :mod:`.primitives` (integers, varints),
:mod:`.wire_types` (field types), :mod:`.fields` (the parts a message is
declared from), :mod:`.codegen` (schemas compiled into the functions that run
per message), :mod:`.schema` (messages as data, keeping their compiled
codecs), :mod:`.framing` (size prefix),
:mod:`.headers` (header versions), :mod:`.codec` (the accept/refuse choke
point), then one API in :mod:`.messages`.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.codec import (
    ParsedRequest, decode_response, encode_request, encode_response, parse_request)
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.errors import (
    InvalidReceiveError, InvalidRequestError, UnsupportedVersionError)
from kafka_net.protocol.framing import FrameDecoder, encode_frame
from kafka_net.protocol.headers import RequestHeader

__all__ = [
    "ApiKey", "ErrorCode", "FrameDecoder", "InvalidReceiveError", "InvalidRequestError",
    "ParsedRequest", "RequestHeader", "UnsupportedVersionError", "decode_response",
    "encode_frame", "encode_request", "encode_response", "parse_request",
]
