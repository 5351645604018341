"""Pairing checks bodies with the generated walkers (``walk_request_body`` /
``walk_response_body``); the decoders (``check_request_body`` /
``check_response_body``) stay the reference.  For each body, valid or broken
(mutated, cut short, bytes after its end, records that are no record batch),
both must give the same verdict: the same BodyProblem (check, words, fault
offset), or the same values pairing reads (a request's acks and timeouts, a
response's error codes) and the same reason a body was not checked.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafka_net.capture.pairing_checks import (
    REQUEST_VALUES, BodyProblem, check_request_body, check_response_body, error_codes,
    walk_request_body, walk_response_body)
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import encode_response_header, response_header_version
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.records.building import build_batch
from kafka_net.testing import message_values

# Every version of the APIs whose values pairing reads, the newest of every other.
_DEEP = {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.API_VERSIONS, ApiKey.JOIN_GROUP, ApiKey.METADATA}
CASES = [(key, version, side)
         for key, message in sorted(MESSAGES.items())
         for side in ("request", "response")
         for version in range(getattr(message, side).valid.low,
                              getattr(message, side).valid.high + 1)
         if key in _DEEP or version == getattr(message, side).valid.high]
IDS = [f"{ApiKey(k).name}-v{v}-{side}" for k, v, side in CASES]
SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEAD = b"\x00\x01\x00\x02\x00\x00\x00\x07\x00\x01c"   # a request header the body follows


def verdict(fn, *args):
    try:
        return ("ok", fn(*args))
    except BodyProblem as exc:
        return ("problem", exc.check, str(exc), exc.offset)
    except InvalidRequestError as exc:
        return ("invalid", str(exc))


def request_values(result):
    """The decoder's body cut to what pairing reads from a walked one."""
    if result[0] != "ok" or result[1][0] is None:
        return result
    body, why = result[1]
    return ("ok", ({k: v for k, v in body.items() if k in REQUEST_VALUES}, why))


def response_values(result):
    if result[0] != "ok":
        return result
    body, why = result[1]
    codes = None if body is None else sorted(error_codes(body))
    return ("ok", (codes, why))


def assert_same(key: int, version: int, side: str, payload: bytes) -> None:
    if side == "request":
        want = request_values(verdict(check_request_body, payload, len(HEAD), key, version))
        got = verdict(walk_request_body, payload, len(HEAD), key, version)
    else:
        want = response_values(verdict(check_response_body, payload, key, version))
        got = verdict(walk_response_body, payload, key, version)
        if got[0] == "ok" and got[1][0] is not None:
            got = ("ok", (sorted(got[1][0]), got[1][1]))
    assert got == want, payload.hex()


def frame(key: int, version: int, side: str, body: bytes) -> bytes:
    if side == "request":
        return HEAD + body
    flexible = MESSAGES[key].response.flexible
    return encode_response_header(7, response_header_version(key, version, flexible)) + body


@pytest.mark.parametrize("key, version, side", CASES, ids=IDS)
def test_walked_bodies_get_the_decoders_verdict(key, version, side):
    schema = getattr(MESSAGES[key], side)

    @SETTINGS
    @given(data=st.data())
    def check(data):
        value = data.draw(message_values(schema, version), label="value")
        wire = frame(key, version, side, schema.encode(value, version))
        assert_same(key, version, side, wire)
        assert_same(key, version, side, wire + data.draw(st.binary(min_size=1, max_size=3)))
        broken = bytearray(wire)
        start = len(HEAD) if side == "request" else 0    # the request header stays whole
        for _ in range(data.draw(st.integers(0, 3), label="mutations")):
            if len(broken) > start:
                i = data.draw(st.integers(start, len(broken) - 1), label="at")
                broken[i] = data.draw(st.integers(0, 255), label="byte")
        cut = data.draw(st.integers(start, len(broken)), label="cut")
        assert_same(key, version, side, bytes(broken[:cut]))
    check()


BATCH = build_batch([(b"k", b"v" * 20)], base_offset=0)


def _produce(version: int, records: bytes) -> bytes:
    schema = MESSAGES[ApiKey.PRODUCE].request
    value = schema.defaults() | {"acks": 0, "timeout_ms": 1500, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": records}]}]}
    return HEAD + schema.encode(value, version)


def _fetched(version: int, records: bytes) -> bytes:
    schema = MESSAGES[ApiKey.FETCH].response
    value = schema.defaults() | {"responses": [
        {"topic": "t", "partitions": [{"partition_index": 0, "error_code": 1,
                                       "records": records}]}]}
    return frame(ApiKey.FETCH, version, "response", schema.encode(value, version))


@pytest.mark.parametrize("version", [3, 8, 9, 11])
@pytest.mark.parametrize("records", [BATCH, BATCH[:-1], BATCH[:20] + b"\xff" + BATCH[21:]],
                         ids=["valid", "cut", "bad-crc"])
def test_produce_records_are_verified_alike(version, records):
    payload = _produce(version, records)
    assert_same(ApiKey.PRODUCE, version, "request", payload)
    if records is BATCH:
        assert walk_request_body(payload, len(HEAD), ApiKey.PRODUCE, version)[0] == {
            "acks": 0, "timeout_ms": 1500}


@pytest.mark.parametrize("version", [4, 12, 16])
@pytest.mark.parametrize("records", [BATCH, BATCH + BATCH[:30], BATCH[:20] + b"\xff" + BATCH[21:]],
                         ids=["valid", "partial-tail", "bad-crc"])
def test_fetched_records_are_verified_alike(version, records):
    payload = _fetched(version, records)
    assert_same(ApiKey.FETCH, version, "response", payload)


def test_api_versions_answered_at_v0_is_read_at_v0():
    """KIP-511: a v3 request the broker does not serve gets a v0 body."""
    schema = MESSAGES[ApiKey.API_VERSIONS].response
    body = schema.encode({"error_code": 35, "api_keys": [
        {"api_key": 18, "min_version": 0, "max_version": 2}]}, 0)
    payload = b"\x00\x00\x00\x07" + body
    assert walk_response_body(payload, ApiKey.API_VERSIONS, 3) == ([35], None)
    assert_same(ApiKey.API_VERSIONS, 3, "response", payload)
    assert walk_response_body(payload, ApiKey.API_VERSIONS, 99) == ([35], None)


def test_unknown_versions_are_not_walked():
    assert walk_request_body(HEAD, len(HEAD), ApiKey.PRODUCE, 99) == (None, "unknown version")
    assert walk_response_body(b"\x00\x00\x00\x07", ApiKey.PRODUCE, 99) == (
        None, "unknown version")
    assert walk_response_body(b"\x00\x00\x00\x07", 9999, 0) == (None, "unknown API (no schema)")
