"""The consumer group protocol (KIP-848) through the API layer: ConsumerGroupHeartbeat
and ConsumerGroupDescribe, encoded and decoded as on the wire.

A step-by-step rebalance is spelt out the way Kafka's GroupMetadataManagerTest
does it: every heartbeat's answer (epoch and assignment) is asserted, so the
revoke-before-assign rule is visible: a partition moves to its new owner only
after a heartbeat of the old owner says it no longer has it.
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import LONG, Broker, make_broker, wait_until

HB, DESCRIBE = ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE


@pytest.fixture
def b():
    broker = Broker().start()
    broker.create_topic("t", 4)
    try:
        yield broker
    finally:
        broker.stop()


JOINING = object()


def hb(b, member_id="", epoch=0, owned=(), topics=JOINING, group="cg", instance=None,
       rto=JOINING, assignor=None, version=1) -> dict:
    """One heartbeat; ``owned``: {topic name: partitions}, or None for "unchanged".
    A join (epoch 0) sends the subscription and rebalance timeout; later
    heartbeats send them as null/-1 (unchanged), as clients do."""
    if topics is JOINING:
        topics = ("t",) if epoch == 0 else None
    if rto is JOINING:
        rto = LONG if epoch == 0 else -1
    if owned is not None:
        owned = [{"topic_id": b.metadata_cache.topic(t).topic_id, "partitions": sorted(ps)}
                 for t, ps in dict(owned).items()]
    return b.call(HB, version, group_id=group, member_id=member_id, member_epoch=epoch,
                  instance_id=instance, rebalance_timeout_ms=rto,
                  subscribed_topic_names=None if topics is None else list(topics),
                  server_assignor=assignor, topic_partitions=owned)


def assigned(b, answer) -> dict | None:
    """An answer's assignment as {topic name: [partitions]} (None: not sent)."""
    if answer["assignment"] is None:
        return None
    return {b.metadata_cache.topic_by_id(tp["topic_id"]).name: tp["partitions"]
            for tp in answer["assignment"]["topic_partitions"]}


def describe(b, group="cg") -> dict:
    return b.call(DESCRIBE, 0, group_ids=[group], include_authorized_operations=False
                  )["groups"][0]


def test_a_first_member_gets_every_partition(b):
    a = hb(b, "m-a")
    assert a["error_code"] == ErrorCode.NONE
    assert (a["member_id"], a["member_epoch"], a["heartbeat_interval_ms"]) == ("m-a", 1, 5000)
    assert assigned(b, a) == {"t": [0, 1, 2, 3]}
    group = describe(b)
    assert (group["group_state"], group["group_epoch"], group["assignment_epoch"],
            group["assignor_name"]) == ("Stable", 1, 1, "uniform")


def test_v0_member_ids_are_made_by_the_coordinator(b):
    a = hb(b, "", version=0)
    assert a["error_code"] == ErrorCode.NONE and len(a["member_id"]) >= 22


def test_partitions_move_only_after_the_old_owner_revokes_them(b):
    hb(b, "m-a")
    joined = hb(b, "m-b")
    # b is at the new epoch but gets nothing yet: a still owns everything.
    assert (joined["member_epoch"], assigned(b, joined)) == (2, {})
    assert describe(b)["group_state"] == "Reconciling"

    a = hb(b, "m-a", 1, {"t": [0, 1, 2, 3]})
    # a must give up two partitions first, and stays at epoch 1 meanwhile.
    assert a["member_epoch"] == 1
    kept = assigned(b, a)["t"]
    assert len(kept) == 2
    assert assigned(b, hb(b, "m-b", 2, {"t": []})) is None    # still nothing to add

    a = hb(b, "m-a", 1, {"t": kept})                          # revoked
    assert (a["member_epoch"], assigned(b, a)) == (2, None)   # same partitions: not resent
    got = hb(b, "m-b", 2, {"t": []})
    assert assigned(b, got) == {"t": sorted(set(range(4)) - set(kept))}
    group = describe(b)
    assert (group["group_state"], group["group_epoch"], group["assignment_epoch"]) == \
        ("Stable", 2, 2)
    members = {m["member_id"]: m for m in group["members"]}
    assert {p for m in members.values() for tp in m["assignment"]["topic_partitions"]
            for p in tp["partitions"]} == {0, 1, 2, 3}
    assert members["m-a"]["assignment"] == members["m-a"]["target_assignment"]
    assert members["m-a"]["assignment"]["topic_partitions"][0]["topic_name"] == "t"


def test_a_leaving_member_hands_its_partitions_to_the_others(b):
    hb(b, "m-a")
    hb(b, "m-b")
    kept = assigned(b, hb(b, "m-a", 1, {"t": [0, 1, 2, 3]}))["t"]
    hb(b, "m-a", 1, {"t": kept})
    other = assigned(b, hb(b, "m-b", 2, {"t": []}))["t"]
    left = hb(b, "m-b", -1, None)
    assert (left["error_code"], left["member_epoch"]) == (ErrorCode.NONE, -1)
    a = hb(b, "m-a", 2, {"t": kept})
    assert (a["member_epoch"], assigned(b, a)) == (3, {"t": sorted(kept + other)})


def test_epoch_and_member_errors_carry_kafka_messages(b):
    hb(b, "m-a")
    ahead = hb(b, "m-a", 7, None)
    assert ahead["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    assert ahead["error_message"].startswith(
        "The consumer group member has a greater member epoch (7)")
    assert hb(b, "m-x", 1, None)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(b, "m-x", 1, None, group="nope")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize("fields, message", [
    (dict(member_id=""), "MemberId can't be empty."),   # v1: the client makes it (KIP-1082)
    (dict(group=""), "GroupId can't be empty."),
    (dict(rto=-1), "RebalanceTimeoutMs must be provided in first request."),
    (dict(owned=None), "TopicPartitions must be empty when (re-)joining."),
    (dict(topics=None), "Either SubscribedTopicNames or SubscribedTopicRegex must be "
                        "non-null when (re-)joining."),
    (dict(epoch=-3), "MemberEpoch is invalid."),
    (dict(instance=""), "InstanceId can't be empty."),
])
def test_invalid_requests(b, fields, message):
    answer = hb(b, **{"member_id": "m", **fields})
    assert (answer["error_code"], answer["error_message"]) == (ErrorCode.INVALID_REQUEST, message)


def test_unknown_assignor(b):
    answer = hb(b, "m", assignor="sticky")
    assert answer["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert answer["error_message"] == ("ServerAssignor sticky is not supported. "
                                       "Supported assignors: uniform, range.")


def test_the_range_assignor_when_members_ask_for_it(b):
    hb(b, "m-a", assignor="range")
    assert describe(b)["assignor_name"] == "range"


def test_a_restarted_static_member_takes_its_partitions_back_without_a_rebalance(b):
    hb(b, "m-a", instance="i-a")
    hb(b, "m-b", instance="i-b")
    kept = assigned(b, hb(b, "m-a", 1, {"t": [0, 1, 2, 3]}, instance="i-a"))["t"]
    hb(b, "m-a", 1, {"t": kept}, instance="i-a")
    hb(b, "m-b", 2, {"t": []}, instance="i-b")
    epoch = describe(b)["group_epoch"]

    assert hb(b, "m-a", -2, None, instance="i-a")["member_epoch"] == -2
    # Another process with the same instance id while a is still in: refused.
    assert hb(b, "m-b", 2, None, instance="i-a")["error_code"] == ErrorCode.FENCED_INSTANCE_ID
    back = hb(b, "m-a2", instance="i-a")
    assert back["error_code"] == ErrorCode.NONE
    assert (back["member_epoch"], assigned(b, back)) == (epoch, {"t": kept})
    assert describe(b)["group_epoch"] == epoch          # nobody else was rebalanced
    assert hb(b, "m-a", 2, None, instance="i-a")["error_code"] == \
        ErrorCode.FENCED_INSTANCE_ID                     # the old member id is fenced
    dup = hb(b, "m-a3", instance="i-a")
    assert dup["error_code"] == ErrorCode.UNRELEASED_INSTANCE_ID


def test_a_silent_member_is_fenced_after_its_session():
    b = make_broker(group_consumer_session_timeout_ms=200).start()
    try:
        b.create_topic("t", 2)
        hb(b, "m-a")
        wait_until(lambda: describe(b)["group_state"] == "Empty", timeout=10)
        assert hb(b, "m-a", 1, None)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    finally:
        b.stop()


def test_a_member_that_does_not_revoke_in_time_is_fenced(b):
    hb(b, "m-a")
    hb(b, "m-b")
    hb(b, "m-a", 1, {"t": [0, 1, 2, 3]}, rto=200)   # told to revoke two; never does
    wait_until(lambda: len(describe(b)["members"]) == 1, timeout=10)
    got = hb(b, "m-b", 2, {"t": []})
    assert assigned(b, got) == {"t": [0, 1, 2, 3]}


def test_offset_commits_carry_the_member_epoch(b):
    hb(b, "m-a")

    def commit(member, epoch):
        body = b.call(ApiKey.OFFSET_COMMIT, 9, group_id="cg", generation_id_or_member_epoch=epoch,
                      member_id=member, topics=[{"name": "t", "partitions": [
                          {"partition_index": 0, "committed_offset": 5,
                           "committed_metadata": None}]}])
        return body["topics"][0]["partitions"][0]["error_code"]

    assert commit("m-a", 1) == ErrorCode.NONE
    assert commit("m-a", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit("m-x", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("", -1) == ErrorCode.UNKNOWN_MEMBER_ID     # not while it has members
    fetched = b.call(ApiKey.OFFSET_FETCH, 9, groups=[{"group_id": "cg", "topics": None}])
    assert fetched["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 5


def test_the_two_protocols_share_one_namespace(b):
    hb(b, "m-a")
    # A classic member of another protocol type cannot join (one of type "consumer"
    # can: KIP-848's online migration, test_consumer_protocol_migration.py).
    join = b.call(ApiKey.JOIN_GROUP, 5, group_id="cg", session_timeout_ms=LONG,
                  rebalance_timeout_ms=LONG, member_id="", protocol_type="connect",
                  protocols=[{"name": "range", "metadata": b""}])
    assert join["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert b.call(ApiKey.DESCRIBE_GROUPS, 5, groups=["cg"])["groups"][0]["group_state"] == "Dead"
    listed = b.call(ApiKey.LIST_GROUPS, 5, types_filter=["consumer"])["groups"]
    assert [(g["group_id"], g["group_type"], g["group_state"], g["protocol_type"])
            for g in listed] == [("cg", "consumer", "Stable", "consumer")]
    assert b.call(ApiKey.LIST_GROUPS, 5, types_filter=["classic"])["groups"] == []


def test_a_classic_group_with_members_is_not_a_consumer_group(rich):
    # Its members' embedded protocol (b"m") does not parse: no online upgrade.
    answer = hb(rich, "m-a", group="g")
    assert answer["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert answer["error_message"] == ("Cannot upgrade the classic group g to consumer group "
                                       "because the embedded consumer protocol is malformed.")
    described = describe(rich, "g")   # Kafka's GroupMetadataManager.consumerGroup
    assert (described["error_code"], described["error_message"]) == \
        (ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")


def test_delete_groups_and_offset_delete_see_consumer_protocol_members(b):
    hb(b, "m-a", topics=("t",))
    b.create_topic("other", 1)
    commit = b.call(ApiKey.OFFSET_COMMIT, 9, group_id="cg", generation_id_or_member_epoch=1,
                    member_id="m-a", topics=[
                        {"name": n, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                    "committed_metadata": None}]}
                        for n in ("t", "other")])
    assert [t["partitions"][0]["error_code"] for t in commit["topics"]] == [0, 0]
    deleted = b.call(ApiKey.DELETE_GROUPS, 2, groups_names=["cg"])["results"][0]
    assert deleted["error_code"] == ErrorCode.NON_EMPTY_GROUP

    offsets = b.call(ApiKey.OFFSET_DELETE, 0, group_id="cg", topics=[
        {"name": n, "partitions": [{"partition_index": 0}]} for n in ("t", "other")])
    assert [(t["name"], t["partitions"][0]["error_code"]) for t in offsets["topics"]] == [
        ("t", ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC), ("other", ErrorCode.NONE)]

    hb(b, "m-a", -1, None)
    deleted = b.call(ApiKey.DELETE_GROUPS, 2, groups_names=["cg"])["results"][0]
    assert deleted["error_code"] == ErrorCode.NONE
    assert describe(b)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
