"""The consumer protocol's subscription, as far as the broker reads it (property-tested)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from kafka_net.protocol.consumer_protocol import subscribed_topics
from tests.server.handlers.conftest import subscription

TOPIC_NAMES = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=20)


@given(st.lists(TOPIC_NAMES, max_size=10), st.integers(0, 3))
def test_every_version_reads_back_its_topics(topics, version):
    assert subscribed_topics(subscription(*topics, version=version)) == topics


@given(st.binary(max_size=64))
def test_any_bytes_give_topics_or_none_never_an_exception(data):
    result = subscribed_topics(data)
    assert result is None or all(isinstance(t, str) for t in result)


def test_short_or_lying_metadata_is_unknown():
    assert subscribed_topics(b"") is None
    assert subscribed_topics(b"\x00\x01\x7f\xff\xff\xff") is None     # 2^31-1 topics in 0 bytes
    assert subscribed_topics(b"\x00\x01\x00\x00\x00\x01\xff\xff") is None   # a null topic
