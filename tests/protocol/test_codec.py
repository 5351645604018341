"""parse_request, the accept/refuse choke point, and whole request/response frames.

Refusals come in Kafka's order (SocketServer.parseRequestHeader, then
RequestContext.parseRequest), each an InvalidRequestError whose message is
what the Processor logs when it closes the connection.  The last section is a
differential test against kafka-python 3.0.12's own protocol classes.
"""

from __future__ import annotations

import importlib

import re
import struct
import uuid
import warnings

import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.protocol import (
    ApiKey, FrameDecoder, InvalidRequestError, ParsedRequest, UnsupportedVersionError,
    decode_response, encode_request, encode_response, parse_request)
from kafka_net.protocol.errors import InvalidReceiveError
from kafka_net.protocol.headers import RequestHeader
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.schema import ZERO_UUID, Versions
from kafka_net.testing import message_values

FAST = settings(max_examples=200, deadline=None)
SUPPORTED = {ApiKey.API_VERSIONS: Versions(0, 4), ApiKey.METADATA: Versions(0, 12)}
UNSUPPORTED_VERSION = 35


def head(api_key: int, version: int, correlation_id: int = 1) -> bytes:
    """The fixed first eight bytes of every request header."""
    return struct.pack(">hhi", api_key, version, correlation_id)


def payload(frame: bytes) -> bytes:
    """Strip the size prefix of a complete frame, checking it."""
    (size,) = struct.unpack(">i", frame[:4])
    assert size == len(frame) - 4
    return frame[4:]


# --- golden bytes ----------------------------------------------------------------------

API_VERSIONS_V3_REQUEST = (
    b"\x00\x00\x00\x1f"     # frame size: 31 bytes follow
    # request header v2 (ApiVersions v3 is flexible)
    b"\x00\x12"             # request_api_key: 18 (ApiVersions)
    b"\x00\x03"             # request_api_version: 3
    b"\x00\x00\x00\x2a"     # correlation_id: 42
    b"\x00\x03cli"          # client_id: int16 length 3 (classic even in header v2), "cli"
    b"\x00"                 # header tagged fields: none
    # body, flexible
    b"\x0akafka-net"        # client_software_name: compact string, length 9 + 1
    b"\x060.1.0"            # client_software_version: compact string, length 5 + 1
    b"\x00"                 # body tagged fields: none
)


def test_golden_api_versions_v3_request():
    body = {"client_software_name": "kafka-net", "client_software_version": "0.1.0"}
    assert encode_request(ApiKey.API_VERSIONS, 3, 42, body, client_id="cli") \
        == API_VERSIONS_V3_REQUEST
    parsed = parse_request(payload(API_VERSIONS_V3_REQUEST), SUPPORTED)
    assert parsed == ParsedRequest(RequestHeader(18, 3, 42, "cli", 2), body, 17)


def test_golden_api_versions_v3_response_has_header_v0():
    body = {"error_code": 0, "throttle_time_ms": 0,
            "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    assert encode_response(ApiKey.API_VERSIONS, 3, 42, body) == (
        b"\x00\x00\x00\x13"           # frame size: 19
        b"\x00\x00\x00\x2a"           # response header v0: correlation_id 42, NO tag byte
        b"\x00\x00"                   # error_code
        b"\x02"                       # api_keys: compact, 1 element
        b"\x00\x12\x00\x00\x00\x04"   #   18, min 0, max 4
        b"\x00"                       #   element tags
        b"\x00\x00\x00\x00"           # throttle_time_ms
        b"\x00"                       # body tags
    )


def test_golden_unsupported_version_answer_is_v0_body():
    # What the broker sends for an ApiVersions request newer than it speaks.
    body = {"error_code": UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    assert encode_response(ApiKey.API_VERSIONS, 0, 42, body) == (
        b"\x00\x00\x00\x10"           # frame size: 16
        b"\x00\x00\x00\x2a"           # response header v0
        b"\x00\x23"                   # error_code 35 UNSUPPORTED_VERSION
        b"\x00\x00\x00\x01"           # api_keys: int32 count 1
        b"\x00\x12\x00\x00\x00\x04"   #   18, min 0, max 4   (v0: no throttle time)
    )


def test_metadata_flexible_response_has_header_v1():
    body = MESSAGES[ApiKey.METADATA].response.defaults()
    v8 = payload(encode_response(ApiKey.METADATA, 8, 7, body))
    v9 = payload(encode_response(ApiKey.METADATA, 9, 7, body))
    assert v8[:4] == b"\x00\x00\x00\x07" and v8[4:8] == b"\x00\x00\x00\x00"  # throttle time
    assert v9[:5] == b"\x00\x00\x00\x07\x00"                 # correlation id + empty tags
    assert decode_response(ApiKey.METADATA, 9, v9) == (7, body)
    assert decode_response(ApiKey.METADATA, 8, v8) == (7, body)


def test_null_client_id_is_written_as_minus_one():
    frame = encode_request(ApiKey.METADATA, 1, 5, {"topics": None}, client_id=None)
    assert payload(frame) == (
        b"\x00\x03\x00\x01\x00\x00\x00\x05"   # Metadata v1, correlation 5
        b"\xff\xff"                           # client_id null
        b"\xff\xff\xff\xff")                  # topics null = all topics (v1+)
    assert parse_request(payload(frame), SUPPORTED).header.client_id == ""


# --- refusals, in Kafka's order ----------------------------------------------------------

@pytest.mark.parametrize("frame", [b"", b"\x00", head(18, 3)[:7]])
def test_fewer_than_eight_bytes(frame):
    with pytest.raises(InvalidRequestError, match="Error parsing request header"):
        parse_request(frame, SUPPORTED)


@pytest.mark.parametrize("api_key", [9999, -1, 94, 2**15 - 1])
def test_unknown_api_key(api_key):
    with pytest.raises(InvalidRequestError, match=f"Unexpected api key: {api_key}") as err:
        parse_request(head(api_key, 0) + b"\x00\x00", SUPPORTED)
    assert not isinstance(err.value, UnsupportedVersionError)


def test_known_but_not_served_api_key():
    with pytest.raises(InvalidRequestError,
                       match="Received request api key Vote with version 0 which is not enabled"):
        parse_request(head(ApiKey.VOTE, 0) + b"\x00\x00", SUPPORTED)


def test_key_we_can_decode_but_do_not_serve_is_not_enabled():
    only_api_versions = {ApiKey.API_VERSIONS: Versions(0, 4)}
    frame = payload(encode_request(ApiKey.METADATA, 1, 1, {"topics": None}))
    with pytest.raises(InvalidRequestError, match="Metadata with version 1 which is not enabled"):
        parse_request(frame, only_api_versions)
    assert parse_request(frame, SUPPORTED).body["topics"] is None


@pytest.mark.parametrize("api_key, version", [(ApiKey.API_VERSIONS, 3), (ApiKey.METADATA, 1),
                                              (ApiKey.API_VERSIONS, 9)])
def test_truncated_client_id(api_key, version):
    frame = head(api_key, version) + b"\x00\x09abc"   # 9 bytes announced, 3 present
    with pytest.raises(InvalidRequestError,
                       match=f"Error parsing request header. Our best guess of the apiKey is: {int(api_key)}"):
        parse_request(frame, SUPPORTED)


def test_routes_cache_only_what_passed_and_still_check_each_request():
    """With a routes cache the second request of a key and version skips the lookups,
    but its header and body are still read and refused like the first one's."""
    routes: dict = {}
    good = payload(encode_request(ApiKey.METADATA, 1, 7, {"topics": None}, client_id="c"))
    assert parse_request(good, SUPPORTED, routes) == parse_request(good, SUPPORTED)
    assert {(k, v) for k, by_version in routes.items() for v in by_version} == {(ApiKey.METADATA, 1)}
    assert parse_request(good, SUPPORTED, routes).header == RequestHeader(3, 1, 7, "c", 1)
    with pytest.raises(InvalidRequestError, match="Our best guess of the apiKey is: 3"):
        parse_request(head(ApiKey.METADATA, 1) + b"\x00\x09abc", SUPPORTED, routes)
    with pytest.raises(InvalidRequestError, match="Error getting request for apiKey: Metadata"):
        parse_request(good[:-2], SUPPORTED, routes)    # the topics array cut short
    # Refused or unsupported requests leave no route behind.
    too_new = head(ApiKey.API_VERSIONS, UNSUPPORTED_VERSION) + b"\x00\x00\x00"
    assert parse_request(too_new, SUPPORTED, routes).unsupported_version
    with pytest.raises(UnsupportedVersionError):
        parse_request(head(ApiKey.METADATA, 13) + b"\x00\x00\x00\x01\x00", SUPPORTED, routes)
    assert {(k, v) for k, by_version in routes.items() for v in by_version} == {(ApiKey.METADATA, 1)}


def test_unsupported_metadata_version():
    # Metadata v13 (Kafka 4.0; kafka-python's newest): a v2 header that parses, a version
    # we do not serve: close, no error response.
    frame = head(ApiKey.METADATA, 13) + b"\x00\x00" + b"\x00" + b"\x01\x00"
    with pytest.raises(UnsupportedVersionError,
                       match="Metadata with version 13 which is not enabled"):
        parse_request(frame, SUPPORTED)
    with pytest.raises(UnsupportedVersionError):
        parse_request(head(ApiKey.METADATA, -1) + b"\x00\x00" + b"\x00\x00\x00\x00", SUPPORTED)


def test_unsupported_version_below_served_range():
    frame = payload(encode_request(ApiKey.METADATA, 3, 1, {"topics": []}))
    with pytest.raises(UnsupportedVersionError):
        parse_request(frame, {ApiKey.METADATA: Versions(4, 12)})


def test_header_error_comes_before_version_error():
    # Kafka parses the header first: a broken header at an unsupported version is a
    # header error, not an UnsupportedVersionError.
    with pytest.raises(InvalidRequestError, match="Error parsing request header") as err:
        parse_request(head(ApiKey.METADATA, 13) + b"\x00\x05ab", SUPPORTED)
    assert not isinstance(err.value, UnsupportedVersionError)


def test_unknown_key_checked_before_header():
    with pytest.raises(InvalidRequestError, match="Unexpected api key"):
        parse_request(head(9999, 0) + b"\x00\x05ab", SUPPORTED)


@pytest.mark.parametrize("version", [5, 9, 2**15 - 1])
def test_too_new_api_versions_is_answered_not_refused(version):
    body = b"\x00\x01\x02garbage we cannot and must not parse"
    frame = head(ApiKey.API_VERSIONS, version, 77) + b"\x00\x01c" + b"\x00" + body
    parsed = parse_request(frame, SUPPORTED)
    assert parsed.unsupported_version is True
    assert parsed.body is None
    assert parsed.header == RequestHeader(18, version, 77, "c", 2)  # header v2: open-ended flex
    assert parsed.body_size == len(body)


def test_api_versions_below_served_range_is_answered_too():
    frame = payload(encode_request(ApiKey.API_VERSIONS, 1, 3, {}))
    parsed = parse_request(frame, {ApiKey.API_VERSIONS: Versions(2, 4)})
    assert parsed.unsupported_version and parsed.body is None
    assert parsed.header.correlation_id == 3


def test_api_versions_served_range_is_respected():
    frame = payload(encode_request(ApiKey.API_VERSIONS, 4, 3,
                                   {"client_software_name": "a", "client_software_version": "b"}))
    assert parse_request(frame, SUPPORTED).unsupported_version is False
    assert parse_request(frame, {ApiKey.API_VERSIONS: Versions(0, 3)}).unsupported_version


@pytest.mark.parametrize("api_key, version, body", [
    (ApiKey.API_VERSIONS, 3, {"client_software_name": "kafka-net", "client_software_version": "1"}),
    (ApiKey.METADATA, 12, {"topics": [{"name": "t", "topic_id": uuid.UUID(int=9)}]}),
    (ApiKey.METADATA, 0, {"topics": [{"name": "orders"}]}),
])
def test_truncated_body(api_key, version, body):
    frame = payload(encode_request(api_key, version, 1, body))
    header_len = len(frame) - parse_request(frame, SUPPORTED).body_size
    name = "ApiVersions" if api_key == ApiKey.API_VERSIONS else "Metadata"
    for cut in range(header_len, len(frame)):
        with pytest.raises(InvalidRequestError,
                           match=f"Error getting request for apiKey: {name}, apiVersion: {version}"):
            parse_request(frame[:cut], SUPPORTED)


def test_non_nullable_null_in_body_is_error_getting_request():
    frame = (head(ApiKey.METADATA, 5) + b"\x00\x00"        # header v1, client_id ""
             + b"\x00\x00\x00\x01" + b"\xff\xff"           # one topic, name null (v5: no)
             + b"\x01")                                    # allow_auto_topic_creation
    with pytest.raises(InvalidRequestError, match="Error getting request"):
        parse_request(frame, SUPPORTED)


def test_trailing_bytes_after_body_are_accepted():
    frame = payload(encode_request(ApiKey.METADATA, 4, 8, {"topics": [{"name": "a"}],
                                                            "allow_auto_topic_creation": False}))
    parsed = parse_request(frame + b"TRAILING", SUPPORTED)
    assert parsed.body["topics"] == [{"name": "a", "topic_id": ZERO_UUID}]
    assert parsed.body["allow_auto_topic_creation"] is False
    assert parsed.body_size == parse_request(frame, SUPPORTED).body_size + len(b"TRAILING")


def test_empty_api_versions_v0_body():
    frame = payload(encode_request(ApiKey.API_VERSIONS, 0, 1, {}))
    assert frame == head(18, 0, 1) + b"\x00\x09kafka-net"   # nothing after the header
    parsed = parse_request(frame, SUPPORTED)
    assert parsed.body == {"client_software_name": "", "client_software_version": ""}
    assert parsed.body_size == 0


def test_refusals_are_all_invalid_request_errors():
    assert issubclass(UnsupportedVersionError, InvalidRequestError)
    assert issubclass(InvalidReceiveError, InvalidRequestError)


# --- round trips through the whole codec ------------------------------------------------

CASES = [(k, v) for k in (ApiKey.API_VERSIONS, ApiKey.METADATA)
         for v in range(SUPPORTED[k].low, SUPPORTED[k].high + 1)]


@pytest.mark.parametrize("api_key, version", CASES, ids=[f"{k.name}-v{v}" for k, v in CASES])
def test_request_and_response_round_trip(api_key, version):
    msg = MESSAGES[api_key]

    @settings(max_examples=10, deadline=None)
    @given(req=message_values(msg.request, version), resp=message_values(msg.response, version),
           correlation_id=st.integers(-(2**31), 2**31 - 1),
           client_id=st.none() | st.text(max_size=10))
    def check(req, resp, correlation_id, client_id):
        frame = encode_request(api_key, version, correlation_id, req, client_id=client_id)
        parsed = parse_request(payload(frame), SUPPORTED)
        assert parsed.body == req
        assert parsed.header.correlation_id == correlation_id
        assert parsed.header.client_id == (client_id or "")
        out = encode_response(api_key, version, correlation_id, resp)
        assert decode_response(api_key, version, payload(out)) == (correlation_id, resp)
    check()


# --- arbitrary input never escapes as anything but InvalidRequestError ----------------

def _check_parse(frame: bytes) -> None:
    try:
        parsed = parse_request(frame, SUPPORTED)
    except InvalidRequestError:
        return
    assert isinstance(parsed, ParsedRequest)
    assert parsed.header.api_key in SUPPORTED
    assert (parsed.body is None) == parsed.unsupported_version
    assert 0 <= parsed.body_size <= len(frame) - 8


@FAST
@given(frame=st.binary(max_size=64))
def test_arbitrary_bytes_parse_or_invalid_request(frame):
    _check_parse(frame)


@FAST
@given(api_key=st.sampled_from([0, 3, 7, 18, 52, 9999, -1]),
       version=st.integers(-2, 16), tail=st.binary(max_size=64))
def test_plausible_headers_with_arbitrary_tails(api_key, version, tail):
    _check_parse(head(api_key, version) + tail)


@FAST
@given(data=st.data(), case=st.sampled_from(CASES))
def test_mutated_valid_requests_parse_or_invalid_request(data, case):
    api_key, version = case
    body = data.draw(message_values(MESSAGES[api_key].request, version))
    frame = bytearray(payload(encode_request(api_key, version, 1, body)))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(frame) - 1))
        frame[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    _check_parse(bytes(frame[:cut]))


# --- differential: kafka-python 3.0.12's own protocol classes ----------------------------
#
# kafka-python builds its message classes from copies of the upstream Kafka JSON
# schemas.  Its names are ours (snake_case) except that the two
# *_authorized_operations int32 fields become "authorized_operations" bit sets
# (None for Kafka's "omitted" value -2**31), and UUIDs appear as str in to_dict().

def _kafka_python():
    importlib.import_module("kafka")
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
    from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
    from kafka.protocol.schemas.load_json import load_json as _load_json

    def load_json(name):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # its importlib.resources use
            return _load_json(name)
    return {
        ApiKey.API_VERSIONS: (ApiVersionsRequest, ApiVersionsResponse),
        ApiKey.METADATA: (MetadataRequest, MetadataResponse),
    }, load_json


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _present(json_fields, version: int, flexible: bool):
    for jf in json_fields:
        if version not in Versions.parse(jf["versions"]):
            continue
        if "tag" in jf and not flexible:
            continue
        yield jf, _snake(jf["name"])


def _is_authorized_operations(jf: dict) -> bool:
    # The int32 bit fields, not the request's include_*_authorized_operations flags.
    return jf["name"].endswith("AuthorizedOperations") and jf["type"] == "int32"


def _sorted_bits(d):
    """kafka-python's to_dict() lists a bit set in set order; sort it to compare."""
    if isinstance(d, list):
        return [_sorted_bits(x) for x in d]
    if isinstance(d, dict):
        return {k: sorted(v) if k == "authorized_operations" and v is not None
                else _sorted_bits(v) for k, v in d.items()}
    return d


def _bits(value: int):
    return None if value == -(2**31) else sorted(i for i in range(32) if value >> i & 1)


def _to_kp_dict(json_fields, value: dict, version: int, flexible: bool) -> dict:
    """Our decoded dict -> what kafka-python's to_dict() gives for the same message."""
    out = {}
    for jf, name in _present(json_fields, version, flexible):
        v = value[name]
        if "fields" in jf and v is not None:
            v = [_to_kp_dict(jf["fields"], x, version, flexible) for x in v]
        elif jf["type"] == "uuid":
            v = str(v)
        if _is_authorized_operations(jf):
            name, v = "authorized_operations", _bits(v)
        out[name] = v
    return out


def _to_kp_kwargs(cls, json_fields, value: dict, version: int, flexible: bool) -> dict:
    """Our dict -> constructor keyword arguments for kafka-python's classes."""
    kwargs = {}
    for jf, name in _present(json_fields, version, flexible):
        v = value[name]
        if "fields" in jf and v is not None:
            item_cls = getattr(cls, jf["type"][2:])
            v = [item_cls(**_to_kp_kwargs(item_cls, jf["fields"], x, version, flexible))
                 for x in v]
        if _is_authorized_operations(jf):
            name, v = "authorized_operations", _bits(v)
            v = {31} if v is None else set(v)
        kwargs[name] = v
    return kwargs


def _kp_values(api_key: int, version: int, kind: str):
    """Our generated values, restricted to what kafka-python can represent/decode."""
    schema = getattr(MESSAGES[api_key], kind)
    values = message_values(schema, version)
    if api_key == ApiKey.API_VERSIONS and kind == "response" and version > 0:
        # kafka-python (like Kafka's Java client) re-reads any ApiVersions response
        # with a non-zero error code as v0 (the UNSUPPORTED_VERSION fallback).
        values = values.map(lambda v: {**v, "error_code": 0})
    return values


KP_CASES = [(k, v) for k in (ApiKey.API_VERSIONS, ApiKey.METADATA)
            for v in range(SUPPORTED[k].low, SUPPORTED[k].high + 1)]
KP_IDS = [f"{k.name}-v{v}" for k, v in KP_CASES]


@pytest.mark.parametrize("api_key, version", KP_CASES, ids=KP_IDS)
def test_kafka_python_requests_parse_here(api_key, version):
    classes, load_json = _kafka_python()
    req_cls = classes[api_key][0]
    json_fields = load_json(req_cls.name)["fields"]
    flexible = MESSAGES[api_key].request.is_flexible(version)

    @settings(max_examples=15, deadline=None)
    @given(body=_kp_values(api_key, version, "request"),
           correlation_id=st.integers(0, 2**31 - 1), client_id=st.text(max_size=10))
    def check(body, correlation_id, client_id):
        # kafka-python encodes, with its own header and size prefix...
        msg = req_cls[version](**_to_kp_kwargs(req_cls, json_fields, body, version, flexible))
        msg.with_header(correlation_id=correlation_id, client_id=client_id)
        wire = bytes(msg.encode(header=True, framed=True))
        # ...and we frame and parse it.
        dec = FrameDecoder()
        dec.receive_data(wire)
        frame = dec.next_frame()
        assert dec.buffered() == 0
        parsed = parse_request(frame, SUPPORTED)
        assert parsed.header == RequestHeader(api_key, version, correlation_id, client_id,
                                              2 if flexible else 1)
        assert parsed.body == body
        header_size = 8 + 2 + len(client_id.encode()) + (1 if flexible else 0)
        assert parsed.body_size == len(frame) - header_size
        # The other way: our encoding of the same request, read by kafka-python.
        ours = encode_request(api_key, version, correlation_id, body, client_id=client_id)
        back = req_cls.decode(ours, version=version, header=True, framed=True)
        assert back.to_dict() == _to_kp_dict(json_fields, body, version, flexible)
        assert back.header.correlation_id == correlation_id
        assert back.header.client_id == client_id
    check()


@pytest.mark.parametrize("api_key, version", KP_CASES, ids=KP_IDS)
def test_our_responses_decode_in_kafka_python(api_key, version):
    classes, load_json = _kafka_python()
    resp_cls = classes[api_key][1]
    json_fields = load_json(resp_cls.name)["fields"]
    flexible = MESSAGES[api_key].response.is_flexible(version)

    @settings(max_examples=15, deadline=None)
    @given(body=_kp_values(api_key, version, "response"),
           correlation_id=st.integers(0, 2**31 - 1))
    def check(body, correlation_id):
        wire = encode_response(api_key, version, correlation_id, body)
        back = resp_cls.decode(wire, version=version, header=True, framed=True)
        assert back.header.correlation_id == correlation_id
        assert _sorted_bits(back.to_dict()) == _to_kp_dict(json_fields, body, version, flexible)
        # And kafka-python's encoding of the same response decodes here.
        msg = resp_cls[version](**_to_kp_kwargs(resp_cls, json_fields, body, version, flexible))
        msg.with_header(correlation_id=correlation_id)
        theirs = bytes(msg.encode(header=True, framed=True))
        assert decode_response(api_key, version, payload(theirs)) == (correlation_id, body)
    check()


def test_kafka_python_first_api_versions_request_and_our_fallback_answer():
    # kafka-python's first request is ApiVersions at its newest version (v4).  If we
    # served only v0-v2 we would answer with a v0 UNSUPPORTED_VERSION body and a v0
    # header; kafka-python, still expecting v4, must read that and learn our range.
    classes, _ = _kafka_python()
    req_cls, resp_cls = classes[ApiKey.API_VERSIONS]
    req = req_cls[req_cls.max_version](client_software_name="kafka-python",
                                       client_software_version="3.0.12")
    req.with_header(correlation_id=11, client_id="kp")
    frame = payload(bytes(req.encode(header=True, framed=True)))
    parsed = parse_request(frame, {ApiKey.API_VERSIONS: Versions(0, 2)})
    assert parsed.unsupported_version and parsed.header.correlation_id == 11
    answer = encode_response(ApiKey.API_VERSIONS, 0, parsed.header.correlation_id, {
        "error_code": UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]})
    back = resp_cls.decode(answer, version=req_cls.max_version, header=True, framed=True)
    assert back.header.correlation_id == 11
    assert back.error_code == UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in back.api_keys] == [(18, 0, 2)]


def test_kafka_python_metadata_v13_is_refused_as_unsupported():
    # kafka-python knows Metadata v13 (Kafka 4.0); we serve up to v12.
    classes, _ = _kafka_python()
    req_cls = classes[ApiKey.METADATA][0]
    assert req_cls.max_version >= 13
    req = req_cls[13](topics=None, allow_auto_topic_creation=True,
                      include_topic_authorized_operations=False)
    req.with_header(correlation_id=5, client_id="kp")
    frame = payload(bytes(req.encode(header=True, framed=True)))
    with pytest.raises(UnsupportedVersionError, match="version 13"):
        parse_request(frame, SUPPORTED)
