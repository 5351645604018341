"""The consumer's embedded protocol, as far as the broker reads it.

A consumer group's JoinGroup carries, per assignor, an opaque
``ConsumerProtocolSubscription`` (``ConsumerProtocolSubscription.json``):
an int16 version, then the subscribed topics, then fields later versions
added.  Like Kafka's ``ClassicGroup.computeSubscribedTopics`` the broker
reads only the v0 prefix every version starts with, which is enough to
know which topics a group consumes (OffsetDelete refuses those).

A classic member inside a consumer-protocol group (KIP-848's online
migration) needs more: the whole subscription (its owned partitions and
rack, ``ConsumerProtocolSubscription`` v0-3) and the assignment the broker
computed for it, written back as a ``ConsumerProtocolAssignment`` in the
version the member's subscription used (Kafka's ConsumerProtocol).
"""

from __future__ import annotations

from kafka_net.protocol.errors import InvalidRequestError
from dataclasses import dataclass

from kafka_net.protocol.primitives import Reader, Writer
from kafka_net.protocol.schema import BYTES, INT32, STRING, Array, Field, Struct

PROTOCOL_TYPE = "consumer"   # ConsumerProtocol.PROTOCOL_TYPE

_SUBSCRIPTION_V0_PREFIX = Struct(Field("topics", Array(STRING)))
_TOPIC_PARTITIONS = Array(Struct(Field("topic", STRING), Field("partitions", Array(INT32))))
# ConsumerProtocolSubscription.json / ConsumerProtocolAssignment.json, v0-3 (not
# flexible; a later version's bytes start with these fields).
_SUBSCRIPTION = Struct(
    Field("topics", Array(STRING)),
    Field("user_data", BYTES, nullable="0+", default=None),
    Field("owned_partitions", _TOPIC_PARTITIONS, versions="1+", default=list),
    Field("generation_id", INT32, versions="2+", default=-1),
    Field("rack_id", STRING, versions="3+", nullable="3+", default=None))
_ASSIGNMENT = Struct(
    Field("assigned_partitions", _TOPIC_PARTITIONS),
    Field("user_data", BYTES, nullable="0+", default=None))
MAX_VERSION = 3


class MalformedConsumerProtocol(ValueError):
    """The embedded protocol's bytes do not parse (Kafka's SchemaException)."""


@dataclass(frozen=True)
class Subscription:
    """A classic consumer's JoinGroup metadata (ConsumerProtocolSubscription): its topics,
    the partitions it owns, its rack."""

    version: int
    topics: list[str]
    owned_partitions: dict[str, set[int]]
    rack_id: str | None


def _version(reader: Reader) -> int:
    version = reader.int16()
    if version < 0:
        raise MalformedConsumerProtocol(f"Unsupported consumer protocol version {version}")
    return version


def subscribed_topics(metadata: bytes) -> list[str] | None:
    """The topics of one member's subscription, or None if it does not parse."""
    reader = Reader(metadata)
    try:
        reader.int16()   # the version: every version starts with v0's fields
        topics = _SUBSCRIPTION_V0_PREFIX.read_struct(reader, 0, False)["topics"]
    except (InvalidRequestError, ValueError):
        return None
    return None if topics is None else list(topics)


def decode_subscription(metadata: bytes) -> Subscription:
    """A member's whole subscription; raises MalformedConsumerProtocol."""
    reader = Reader(metadata)
    try:
        version = _version(reader)
        value = _SUBSCRIPTION.read_struct(reader, min(version, MAX_VERSION), False)
    except (InvalidRequestError, ValueError) as exc:
        raise MalformedConsumerProtocol(str(exc)) from exc
    owned: dict[str, set[int]] = {}
    for tp in value["owned_partitions"] or ():
        owned.setdefault(tp["topic"], set()).update(tp["partitions"] or ())
    return Subscription(version, list(value["topics"] or ()), owned, value["rack_id"])


def subscription_version(metadata: bytes) -> int:
    """The version a member's subscription was written in (its assignment's)."""
    try:
        return _version(Reader(metadata))
    except (InvalidRequestError, ValueError) as exc:
        raise MalformedConsumerProtocol(str(exc)) from exc


def decode_assignment(data: bytes) -> dict[str, set[int]]:
    """A member's assigned partitions by topic name; empty bytes: none (a member
    that never synced).  Raises MalformedConsumerProtocol."""
    if not data:
        return {}
    reader = Reader(data)
    try:
        version = _version(reader)
        value = _ASSIGNMENT.read_struct(reader, min(version, MAX_VERSION), False)
    except (InvalidRequestError, ValueError) as exc:
        raise MalformedConsumerProtocol(str(exc)) from exc
    out: dict[str, set[int]] = {}
    for tp in value["assigned_partitions"] or ():
        out.setdefault(tp["topic"], set()).update(tp["partitions"] or ())
    return out


def encode_assignment(partitions: dict[str, set[int]], version: int) -> bytes:
    """A ConsumerProtocolAssignment (no user data) in ``version`` (capped at 3)."""
    version = min(max(version, 0), MAX_VERSION)
    writer = Writer()
    writer.int16(version)
    _ASSIGNMENT.write_struct(writer, {"assigned_partitions": [
        {"topic": topic, "partitions": sorted(parts)}
        for topic, parts in sorted(partitions.items()) if parts]}, version, False)
    return writer.getvalue()


def encode_subscription(topics: list[str], owned: dict[str, set[int]] | None = None,
                        version: int = 1, rack_id: str | None = None) -> bytes:
    """A ConsumerProtocolSubscription (a converted group's classic members)."""
    version = min(max(version, 0), MAX_VERSION)
    writer = Writer()
    writer.int16(version)
    _SUBSCRIPTION.write_struct(writer, {
        "topics": list(topics), "user_data": None,
        "owned_partitions": [{"topic": t, "partitions": sorted(p)}
                             for t, p in sorted((owned or {}).items()) if p],
        "generation_id": -1, "rack_id": rack_id}, version, False)
    return writer.getvalue()
