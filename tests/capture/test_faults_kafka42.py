"""The fault tests of test_faults.py on Kafka 4.2 traffic shapes no public tool decodes.

A share consumer (ShareGroupHeartbeat, ShareFetch with acquired records,
ShareAcknowledge), a producer on Produce v13 (topics by id, KIP-516) and a
client pushing telemetry (GetTelemetrySubscriptions, PushTelemetry, KIP-714).
No installed client sends all of these, so the conversations are built here
from the message definitions themselves: :func:`example` fills every field a
message has at a version (one element per array, a real record batch where
records go), which keeps the test honest about the whole schema rather than
the fields someone remembered.  Each conversation is then cut into TCP
packets and put through the same faults and the same ground truth as the
recorded kafka-python traffic: recall 100%, no false positive, coverage
within 1%.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter

import pytest

from kafka_net.protocol import ApiKey
from kafka_net.protocol.codec import encode_request, encode_response
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.records.building import build_key_value_batch
from kafka_net.protocol.schema import Array, Struct
from kafka_net.protocol.wire_types import (
    BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, UINT16, UINT32, UUID)
from tests.capture.fault_proxy import REQUEST, RESPONSE, Conversation, KFrame, packetize
from tests.capture.test_faults import (
    assert_matches, assert_reordering_is_harmless, checked, clean_truth, lose_segments, snap,
    snapped)

TOPIC_ID = uuid.UUID("5c3e0f5e-2b43-4f1a-9d0e-6a2a7d1f0c42")
_SCALARS = {INT8: 1, INT16: 1, UINT16: 1, INT32: 1, UINT32: 1, INT64: 1, FLOAT64: 0.5,
            BOOL: True, UUID: TOPIC_ID, STRING: "kafka-net", BYTES: b"\x01\x02\x03"}


def _batch() -> bytes:
    return build_key_value_batch([(b"k%d" % i, b"value %d" % i) for i in range(3)],
                                 timestamp=1_700_000_000_000)


def example(struct: Struct, version: int) -> dict:
    """A value for every field the struct has at ``version`` (tagged ones left at
    their defaults, error codes 0 so that the answer is a success)."""
    out = {}
    for f in struct.fields:
        if version not in f.versions or f.tag is not None:
            continue
        out[f.name] = _value(f.name, f.type, version)
    return out


def _value(name: str, t, version: int):
    if isinstance(t, Struct):
        return example(t, version)
    if isinstance(t, Array):
        return [_value(name, t.item, version)]
    if t is RECORDS:
        return _batch()
    if name.endswith("error_code"):
        return 0
    if name == "acks":
        return -1
    return _SCALARS[t]


def exchange(api_key: int, version: int, corr: int) -> list[KFrame]:
    """One request and its response at ``version``, bodies from :func:`example`."""
    message = MESSAGES[api_key]
    request = encode_request(api_key, version, corr, example(message.request.struct, version),
                             client_id="kafka42-shapes")
    response = encode_response(api_key, version, corr, example(message.response.struct, version))
    return [KFrame(REQUEST, request, corr, api_key, version),
            KFrame(RESPONSE, bytes(response), corr, api_key, version)]


# (api_key, version) per conversation: the newest version Kafka 4.2 serves.
SHAPES = {
    "share consumer": [(ApiKey.API_VERSIONS, 4), (ApiKey.SHARE_GROUP_HEARTBEAT, 1),
                       (ApiKey.SHARE_FETCH, 1), (ApiKey.SHARE_FETCH, 1),
                       (ApiKey.SHARE_ACKNOWLEDGE, 1)],
    "producer v13": [(ApiKey.API_VERSIONS, 4), (ApiKey.METADATA, 13), (ApiKey.PRODUCE, 13),
                     (ApiKey.PRODUCE, 13)],
    "telemetry": [(ApiKey.API_VERSIONS, 4), (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0),
                  (ApiKey.PUSH_TELEMETRY, 0), (ApiKey.PUSH_TELEMETRY, 0)],
}


ROUNDS = 8   # each client repeats its exchanges: ~200 frames, so that 1% is a frame or two


@pytest.fixture(scope="module")
def conversations() -> list[Conversation]:
    convs = []
    for n, shape in enumerate(SHAPES.values()):
        frames = []
        for corr, (key, version) in enumerate(shape * ROUNDS, start=1):
            frames += exchange(key, version, corr)
        convs.append(Conversation(frames, 41000 + n))
    return convs


def test_every_shape_is_a_known_message_at_kafka_42(conversations):
    """The shapes are decodable in full (not header-only): the definitions know them."""
    for shape in SHAPES.values():
        for key, version in shape:
            assert version in MESSAGES[key].request.valid, (key, version)
            assert version in MESSAGES[key].response.valid, (key, version)
    found, states = checked([packetize(c) for c in conversations])
    assert found == set()
    assert states == Counter(checked=sum(len(c.frames) for c in conversations))


@pytest.mark.parametrize("seed,rate", [(1, 0.01), (3, 0.02), (5, 0.05)])
def test_segment_loss_on_42_shapes(conversations, seed, rate):
    captures, expected, states = lose_segments(conversations, random.Random(seed), rate,
                                               mss=60 + 20 * seed)
    found, got = checked(captures)
    assert_matches(found, got, expected, states)


def test_trailing_bytes_after_a_share_fetch_response(conversations):
    """Three stray bytes after a ShareFetch response body: one violation, on
    exactly that frame, and the rest of the conversation still checked."""
    conv = conversations[0]
    frames = list(conv.frames)
    at = next(i for i, f in enumerate(frames)
              if f.direction == RESPONSE and f.api_key == ApiKey.SHARE_FETCH)
    f = frames[at]
    data = bytearray(f.data + b"\x01\x00\x00")
    data[0:4] = (len(data) - 4).to_bytes(4, "big")
    frames[at] = KFrame(RESPONSE, bytes(data), f.corr, f.api_key, f.api_version)
    convs = [Conversation(frames, conv.client_port)] + conversations[1:]
    expected, states = clean_truth(convs)
    found, got = checked([packetize(c) for c in convs])
    extra = found - expected
    assert {(port, corr) for port, _, corr in extra} == {(conv.client_port, f.corr)}, found
    assert_matches(found - extra, got, expected, states)


def test_dropped_push_telemetry_response_then_fin(conversations):
    conv = conversations[2]
    frames = conv.frames[:-1]          # the last PushTelemetry response never came
    convs = conversations[:2] + [Conversation(frames, conv.client_port)]
    expected, states = clean_truth(convs)
    assert (conv.client_port, "unanswered_before_close", frames[-1].corr) in expected
    found, got = checked([packetize(c) for c in convs])
    assert_matches(found, got, expected, states)


def test_reordered_segments_on_42_shapes(conversations):
    assert_reordering_is_harmless(conversations, random.Random(11), mss=70)


def test_snaplen_cut_42_shapes_are_header_only(conversations):
    """tcpdump -s 150 (96 bytes of TCP payload): a frame with a cut packet is read
    by its header only; the rest are checked in full."""
    captures, expected, states = snap(conversations, 96)
    assert 0 < states["header_only"] < sum(states.values())
    found, got = checked(captures, lambda cap: snapped(cap, 96))
    assert_matches(found, got, expected, states)
