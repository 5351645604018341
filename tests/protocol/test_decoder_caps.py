"""Kafka 4.4's decoder caps: an array of more than 1,000,000 elements and a
tagged-field section of more than 10,000 fields are refused before anything is
allocated for them, by both decoders (generated and interpreted) and by the
request header's reader.  The counts sit in frames that carry enough bytes to
pass the older "a count above the bytes left" check, so only the cap refuses."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.codec import parse_request
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import encode_uvarint
from kafka_net.protocol.schema import MAX_ARRAY_ELEMENTS, MAX_TAGGED_FIELDS, Versions

DESCRIBE_LOG_DIRS = MESSAGES[ApiKey.DESCRIBE_LOG_DIRS].request


def topics_array(count: int, flexible: bool) -> bytes:
    """DescribeLogDirs' topics: ``count`` then padding enough for the bytes-left check."""
    head = encode_uvarint(count + 1) if flexible else count.to_bytes(4, "big")
    return head + bytes(count + 8)


def tags(count: int) -> bytes:
    """A tagged-field section of ``count`` empty fields with tags 100, 101, ...
    (unknown to every schema, so a reader skips them)."""
    return encode_uvarint(count) + b"".join(
        encode_uvarint(100 + i) + b"\x00" for i in range(count))


@pytest.mark.parametrize("version", [1, 2])   # classic int32 and compact counts
@pytest.mark.parametrize("decode", ["decode", "decode_interpreted"])
def test_an_array_over_a_million_elements_is_refused(version, decode):
    with pytest.raises(InvalidRequestError, match="over the limit of 1000000"):
        getattr(DESCRIBE_LOG_DIRS, decode)(topics_array(MAX_ARRAY_ELEMENTS + 1,
                                                        version >= 2), version)


@pytest.mark.parametrize("decode", ["decode", "decode_interpreted"])
def test_an_array_at_the_limit_is_read_up_to_its_bytes(decode):
    # A million elements pass the cap; this frame then runs out of bytes for them,
    # which is the ordinary short-message answer, not the cap's.
    with pytest.raises(InvalidRequestError) as err:
        getattr(DESCRIBE_LOG_DIRS, decode)(topics_array(MAX_ARRAY_ELEMENTS, False), 1)
    assert "over the limit" not in str(err.value)


@pytest.mark.parametrize("decode", ["decode", "decode_interpreted"])
def test_a_tagged_section_over_ten_thousand_fields_is_refused(decode):
    body = encode_uvarint(0) + tags(MAX_TAGGED_FIELDS + 1)   # topics null, then the tags
    with pytest.raises(InvalidRequestError, match="over the limit of 10000"):
        getattr(DESCRIBE_LOG_DIRS, decode)(body, 2)


@pytest.mark.parametrize("decode", ["decode", "decode_interpreted"])
def test_ten_thousand_unknown_tagged_fields_are_skipped(decode):
    body = encode_uvarint(0) + tags(MAX_TAGGED_FIELDS)
    assert getattr(DESCRIBE_LOG_DIRS, decode)(body, 2)["topics"] is None


def test_a_request_header_with_too_many_tagged_fields_is_refused():
    frame = (int(ApiKey.DESCRIBE_LOG_DIRS).to_bytes(2, "big") + (2).to_bytes(2, "big")
             + (7).to_bytes(4, "big") + (1).to_bytes(2, "big") + b"c"
             + tags(MAX_TAGGED_FIELDS + 1) + encode_uvarint(1) + b"\x00")
    with pytest.raises(InvalidRequestError, match="over the limit of 10000"):
        parse_request(frame, {ApiKey.DESCRIBE_LOG_DIRS: Versions(1, 5)})
