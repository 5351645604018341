"""OffsetDelete (47): per-partition errors, GROUP_SUBSCRIBED_TO_TOPIC, group errors."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import join_stable, leave, subscription
from tests.server.handlers.test_delete_groups import commit, committed


def offset_delete(broker, group: str, *topics) -> tuple[int, dict]:
    """topics: (name, [partitions]); (top error, {(topic, partition): error})."""
    body = broker.call(ApiKey.OFFSET_DELETE, 0, group_id=group, topics=[
        {"name": n, "partitions": [{"partition_index": p} for p in ps]} for n, ps in topics])
    return body["error_code"], {(t["name"], p["partition_index"]): p["error_code"]
                                for t in body["topics"] for p in t["partitions"]}


def test_an_empty_group_deletes_and_unknown_partitions_are_named(group_broker):
    commit(group_broker, "simple", 7)
    assert offset_delete(group_broker, "simple", ("t", [0, 1, 5]), ("missing", [0])) == (
        ErrorCode.NONE, {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE,
                         ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
    assert committed(group_broker, "simple") == -1


def test_a_consumer_group_keeps_the_offsets_of_topics_it_consumes(group_broker):
    group_broker.create_topic("u", 1)
    member, generation = join_stable(group_broker, "c", subscription("t"))
    commit(group_broker, "c", 4, member, generation)
    body = group_broker.call(ApiKey.OFFSET_COMMIT, 8, group_id="c", member_id=member,
                             generation_id_or_member_epoch=generation, topics=[
                                 {"name": "u", "partitions": [
                                     {"partition_index": 0, "committed_offset": 9}]}])
    assert body["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    assert offset_delete(group_broker, "c", ("t", [0, 1]), ("u", [0])) == (
        ErrorCode.NONE, {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
                         ("t", 1): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
                         ("u", 0): ErrorCode.NONE})
    assert committed(group_broker, "c") == 4
    fetched = group_broker.call(ApiKey.OFFSET_FETCH, 7, group_id="c", topics=[
        {"name": "u", "partition_indexes": [0]}])
    assert fetched["topics"][0]["partitions"][0]["committed_offset"] == -1
    # Once the member has left, the group is Empty and subscribed to nothing.
    leave(group_broker, "c", member)
    assert offset_delete(group_broker, "c", ("t", [0])) == (
        ErrorCode.NONE, {("t", 0): ErrorCode.NONE})
    assert committed(group_broker, "c") == -1


def test_unparseable_subscriptions_count_as_subscribed(group_broker):
    # Group g's metadata is b"m": Kafka cannot tell, so it protects every topic.
    assert offset_delete(group_broker, "g", ("t", [0])) == (
        ErrorCode.NONE, {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC})
    assert committed(group_broker, "g") == 2


def test_group_level_errors(group_broker):
    join_stable(group_broker, "connect", b"whatever", protocol_type="connect")
    assert offset_delete(group_broker, "connect", ("t", [0])) == (ErrorCode.NON_EMPTY_GROUP, {})
    assert offset_delete(group_broker, "ghost", ("t", [0])) == (
        ErrorCode.GROUP_ID_NOT_FOUND, {})
    assert offset_delete(group_broker, "", ("t", [0])) == (ErrorCode.INVALID_GROUP_ID, {})
