"""Request and response headers, and the rules that pick their versions.

Request header: v0 only for ControlledShutdown v0, v2 for flexible API
versions (including too-new versions of an API whose flexible range is
open-ended), v1 otherwise.  Response header: v1 for flexible versions, v0
otherwise, and always v0 for ApiVersions (KIP-511).
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import (
    RequestHeader, decode_request_header, decode_response_header, encode_request_header,
    encode_response_header, peek_request_header, request_header_version,
    response_header_version)
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.schema import NO_VERSIONS, Versions

FAST = settings(max_examples=300, deadline=None)

API_VERSIONS_FLEX = MESSAGES[ApiKey.API_VERSIONS].request.flexible   # 3+
METADATA_FLEX = MESSAGES[ApiKey.METADATA].request.flexible           # 9+
CONTROLLED_SHUTDOWN_FLEX = Versions(3, None)  # ControlledShutdownRequest.json: "3+"


# --- request header version ---------------------------------------------------------

@pytest.mark.parametrize("api_key, version, flexible, expected", [
    (ApiKey.CONTROLLED_SHUTDOWN, 0, CONTROLLED_SHUTDOWN_FLEX, 0),  # the one v0 user
    (ApiKey.CONTROLLED_SHUTDOWN, 1, CONTROLLED_SHUTDOWN_FLEX, 1),
    (ApiKey.CONTROLLED_SHUTDOWN, 3, CONTROLLED_SHUTDOWN_FLEX, 2),
    (ApiKey.API_VERSIONS, 0, API_VERSIONS_FLEX, 1),
    (ApiKey.API_VERSIONS, 2, API_VERSIONS_FLEX, 1),
    (ApiKey.API_VERSIONS, 3, API_VERSIONS_FLEX, 2),
    (ApiKey.API_VERSIONS, 4, API_VERSIONS_FLEX, 2),
    (ApiKey.API_VERSIONS, 9, API_VERSIONS_FLEX, 2),     # too new, open-ended flex: still 2
    (ApiKey.API_VERSIONS, 2**15 - 1, API_VERSIONS_FLEX, 2),
    (ApiKey.METADATA, 0, METADATA_FLEX, 1),
    (ApiKey.METADATA, 8, METADATA_FLEX, 1),
    (ApiKey.METADATA, 9, METADATA_FLEX, 2),
    (ApiKey.METADATA, 13, METADATA_FLEX, 2),            # newer than we serve
    (ApiKey.METADATA, 0, Versions(3, 5), 1),           # a closed flexible range...
    (ApiKey.METADATA, 6, Versions(3, 5), 1),           # ...does not extend upwards
    (ApiKey.SASL_HANDSHAKE, 1, NO_VERSIONS, 1),          # never flexible
])
def test_request_header_version(api_key, version, flexible, expected):
    assert request_header_version(api_key, version, flexible) == expected


def test_controlled_shutdown_v0_rule_is_specific_to_that_key():
    # Version 0 of any other API uses header v1.
    for key in ApiKey:
        if key != ApiKey.CONTROLLED_SHUTDOWN:
            assert request_header_version(key, 0, Versions(0, None)) == 2
            assert request_header_version(key, 0, NO_VERSIONS) == 1


# --- response header version ----------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5, 127])
def test_api_versions_response_header_is_always_v0(version):
    assert response_header_version(ApiKey.API_VERSIONS, version, API_VERSIONS_FLEX) == 0


@pytest.mark.parametrize("version, expected", [(0, 0), (8, 0), (9, 1), (12, 1), (13, 1)])
def test_metadata_response_header_follows_flexible_versions(version, expected):
    assert response_header_version(ApiKey.METADATA, version, METADATA_FLEX) == expected


def test_encode_response_header():
    assert encode_response_header(7, 0) == b"\x00\x00\x00\x07"          # correlation_id
    assert encode_response_header(7, 1) == b"\x00\x00\x00\x07" b"\x00"  # + empty tags
    assert encode_response_header(-1, 0) == b"\xff\xff\xff\xff"


def test_decode_response_header_skips_tags():
    payload = (b"\x00\x00\x01\x00"    # correlation_id 256
               b"\x01\x05\x02\xaa\xbb"  # one tagged field: tag 5, 2 bytes
               b"BODY")
    assert decode_response_header(payload, 1) == (256, 9)
    assert decode_response_header(payload, 0) == (256, 4)
    with pytest.raises(InvalidRequestError):
        decode_response_header(b"\x00\x00\x01", 0)
    with pytest.raises(InvalidRequestError):
        decode_response_header(b"\x00\x00\x01\x00", 1)  # tag section missing


# --- request header bytes ---------------------------------------------------------------

def test_peek_reads_fixed_first_eight_bytes():
    frame = b"\x00\x12" b"\x00\x09" b"\x00\x00\x00\x2a" b"whatever follows"
    assert peek_request_header(frame) == (18, 9, 42)
    for n in range(8):
        with pytest.raises(InvalidRequestError, match="Error parsing request header"):
            peek_request_header(frame[:n])


def test_decode_header_v1():
    frame = (b"\x00\x03"        # api_key 3 (Metadata)
             b"\x00\x01"        # api_version 1
             b"\x00\x00\x00\x05"  # correlation_id 5
             b"\x00\x03abc"     # client_id: int16 length 3, "abc"
             b"BODY")
    header, offset = decode_request_header(frame, METADATA_FLEX)
    assert header == RequestHeader(3, 1, 5, "abc", 1)
    assert frame[offset:] == b"BODY"


def test_decode_header_v1_null_client_id_reads_as_empty():
    frame = b"\x00\x03\x00\x01\x00\x00\x00\x05" b"\xff\xff"  # client_id null
    header, offset = decode_request_header(frame, METADATA_FLEX)
    assert header.client_id == "" and offset == 10


def test_decode_header_v2_keeps_classic_client_id_and_skips_tags():
    frame = (b"\x00\x12\x00\x03\x00\x00\x00\x01"  # ApiVersions v3, correlation 1
             b"\x00\x02id"                        # client_id: int16 length, NOT compact
             b"\x02"                              # two tagged fields (unknown to us):
             b"\x00\x01\xff"                      #   tag 0, 1 byte
             b"\x04\x00"                          #   tag 4, empty
             b"BODY")
    header, offset = decode_request_header(frame, API_VERSIONS_FLEX)
    assert header == RequestHeader(18, 3, 1, "id", 2)
    assert frame[offset:] == b"BODY"


def test_decode_header_v0_has_no_client_id():
    frame = b"\x00\x07\x00\x00\x00\x00\x00\x09" b"\x00\x05abcde"
    header, offset = decode_request_header(frame, CONTROLLED_SHUTDOWN_FLEX)
    assert header == RequestHeader(7, 0, 9, "", 0)
    assert offset == 8


@pytest.mark.parametrize("frame", [
    b"\x00\x03\x00\x01\x00\x00\x00\x05",                   # no client_id length at all
    b"\x00\x03\x00\x01\x00\x00\x00\x05\x00",               # half a length
    b"\x00\x03\x00\x01\x00\x00\x00\x05\x00\x05abc",        # 5 announced, 3 present
    b"\x00\x03\x00\x01\x00\x00\x00\x05\xff\xfe",           # length -2
    b"\x00\x03\x00\x01\x00\x00\x00\x05\x00\x01\xff",       # not UTF-8
    b"\x00\x03\x00\x09\x00\x00\x00\x05\x00\x00",           # v2 header: tag section missing
    b"\x00\x03\x00\x09\x00\x00\x00\x05\x00\x00\x01\x00\x05",  # tag of 5 bytes, none there
])
def test_bad_request_header_is_invalid_request(frame):
    with pytest.raises(InvalidRequestError):
        decode_request_header(frame, METADATA_FLEX)


@FAST
@given(api_key=st.sampled_from([ApiKey.API_VERSIONS, ApiKey.METADATA]),
       api_version=st.integers(-(2**15), 2**15 - 1),
       correlation_id=st.integers(-(2**31), 2**31 - 1),
       client_id=st.none() | st.text(max_size=20),
       body=st.binary(max_size=8))
def test_request_header_round_trip(api_key, api_version, correlation_id, client_id, body):
    flexible = MESSAGES[api_key].request.flexible
    version = request_header_version(api_key, api_version, flexible)
    head = encode_request_header(
        RequestHeader(api_key, api_version, correlation_id, client_id, version))
    header, offset = decode_request_header(head + body, flexible)
    assert header == RequestHeader(api_key, api_version, correlation_id,
                                   client_id or "", version)
    assert offset == len(head)


@FAST
@given(data=st.binary(max_size=40))
def test_arbitrary_header_bytes_parse_or_invalid_request(data):
    try:
        header, offset = decode_request_header(data, METADATA_FLEX)
    except InvalidRequestError:
        return
    assert 8 <= offset <= len(data)
    assert header.header_version in (1, 2)


def test_peek_client_id_reads_a_v1_header_and_is_lenient():
    from kafka_net.protocol.headers import peek_client_id

    header = struct.pack(">hhih", 18, 3, 7, 5) + b"hello"
    assert peek_client_id(header) == "hello"
    assert peek_client_id(struct.pack(">hhih", 18, 3, 7, -1)) is None    # null client id
    assert peek_client_id(header[:12]) is None                            # cut short
    assert peek_client_id(b"\x00" * 9) is None
    assert peek_client_id(struct.pack(">hhih", 18, 3, 7, 2) + b"\xff\xfe") == "\ufffd\ufffd"


# -- the lenient peek of captured frames (capture tools, the conformance job) ------------

def test_peek_frame_header_reads_what_is_there_and_never_raises():
    from kafka_net.protocol.headers import (
        PeekedHeader, peek_frame_header, peek_response_correlation_id)
    request = struct.pack(">hhih", 3, 12, 77, 4) + b"abcd" + b"body"
    assert peek_frame_header(request, True) == PeekedHeader(3, 12, 77, "abcd")
    assert peek_frame_header(request[:9], True) == PeekedHeader(3, 12, 77, None)  # id cut
    assert peek_frame_header(struct.pack(">hhih", 3, 12, 77, -1), True) == \
        PeekedHeader(3, 12, 77, None)
    assert peek_frame_header(request[:7], True) == PeekedHeader(None, None, None, None)
    response = struct.pack(">i", -5) + b"\x00rest"
    assert peek_frame_header(response, False) == PeekedHeader(None, None, -5, None)
    assert peek_frame_header(b"\x00\x01\x02", False) == PeekedHeader(None, None, None, None)
    assert peek_response_correlation_id(response) == -5
    assert peek_response_correlation_id(b"") is None
