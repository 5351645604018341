"""The consumer's embedded protocol, as far as the broker reads it.

A consumer group's JoinGroup carries, per assignor, an opaque
``ConsumerProtocolSubscription`` (``ConsumerProtocolSubscription.json``):
an int16 version, then the subscribed topics, then fields later versions
added.  Like Kafka's ``ClassicGroup.computeSubscribedTopics`` the broker
reads only the v0 prefix every version starts with, which is enough to
know which topics a group consumes (OffsetDelete refuses those).
"""

from __future__ import annotations

from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.primitives import Reader
from kafka_net.protocol.schema import STRING, Array, Field, Struct

PROTOCOL_TYPE = "consumer"   # ConsumerProtocol.PROTOCOL_TYPE

_SUBSCRIPTION_V0_PREFIX = Struct(Field("topics", Array(STRING)))


def subscribed_topics(metadata: bytes) -> list[str] | None:
    """The topics of one member's subscription, or None if it does not parse."""
    reader = Reader(metadata)
    try:
        reader.int16()   # the version: every version starts with v0's fields
        topics = _SUBSCRIPTION_V0_PREFIX.read_struct(reader, 0, False)["topics"]
    except (InvalidRequestError, ValueError):
        return None
    return None if topics is None else list(topics)
