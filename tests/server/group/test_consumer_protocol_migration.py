"""KIP-848's online migration between the classic and consumer protocols, in
process: a ConsumerGroupHeartbeat joining a classic group converts it (policy
permitting), classic members are then served inside the consumer group
(JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit, the broker's assignor,
the cooperative revocation rule, their own session timeout), and the last
consumer-protocol member leaving converts the group back.  Restarts and real
clients: tests/integration/test_consumer_migration*.py.
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.consumer_protocol import decode_assignment, encode_assignment, \
    encode_subscription
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import LONG, Broker, Deferred, make_broker, wait_until
from tests.server.group.test_consumer_protocol import assigned, hb

ALL = [0, 1, 2, 3]


def start(**config) -> Broker:
    b = (make_broker(**config) if config else Broker()).start()
    b.create_topic("t", 4)
    return b


@pytest.fixture
def b():
    broker = start()
    try:
        yield broker
    finally:
        broker.stop()


def join(b, member_id="", owned=None, group="g", protocol="range", protocol_type="consumer",
         session=LONG, instance=None, rebalance=LONG) -> dict:
    """A JoinGroup's answer (a classic group's parked one waited for)."""
    return answer(b.call(ApiKey.JOIN_GROUP, 5, group_id=group, session_timeout_ms=session,
                         rebalance_timeout_ms=rebalance, member_id=member_id,
                         group_instance_id=instance, protocol_type=protocol_type, protocols=[
                             {"name": protocol,
                              "metadata": encode_subscription(["t"], owned)}]))


def answer(response) -> dict:
    return response.body() if isinstance(response, Deferred) else response


def joined(b, owned=None, **kw) -> dict:
    """A new classic member's two JoinGroups (KIP-394's MEMBER_ID_REQUIRED first)."""
    first = join(b, owned=owned, **kw)
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    answer = join(b, first["member_id"], owned, **kw)
    assert answer["error_code"] == ErrorCode.NONE
    return answer


def sync(b, member_id, generation, assignments=(), group="g") -> dict:
    return answer(b.call(ApiKey.SYNC_GROUP, 3, group_id=group, generation_id=generation,
                         member_id=member_id, assignments=list(assignments)))


def heartbeat(b, member_id, generation, group="g") -> int:
    return b.call(ApiKey.HEARTBEAT, 3, group_id=group, generation_id=generation,
                  member_id=member_id)["error_code"]


def classic_group(b) -> tuple[str, int]:
    """A Stable classic group g whose one member owns t-0..3."""
    a = joined(b)
    member, generation = a["member_id"], a["generation_id"]
    answer = sync(b, member, generation, [{"member_id": member, "assignment":
                                           encode_assignment({"t": set(ALL)}, 1)}])
    assert answer["error_code"] == ErrorCode.NONE
    return member, generation


def describe(b, group="g") -> dict:
    """ConsumerGroupDescribe v1 (its members' member_type: 0 classic, 1 consumer)."""
    return b.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                  include_authorized_operations=False)["groups"][0]


def partitions(answer) -> list[int]:
    return sorted(decode_assignment(answer["assignment"]).get("t", ()))


def commit(b, member_id, generation, version=8) -> int:
    return b.call(ApiKey.OFFSET_COMMIT, version, group_id="g",
                  generation_id_or_member_epoch=generation, member_id=member_id, topics=[
                      {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                    "committed_metadata": None}]}]
                  )["topics"][0]["partitions"][0]["error_code"]


def test_a_heartbeat_upgrades_a_classic_group_and_the_classic_member_revokes_first(b):
    a, generation = classic_group(b)
    c = hb(b, "m-c", group="g")
    assert c["error_code"] == ErrorCode.NONE
    # The classic member keeps t-0..3 at epoch = its generation; c waits for them.
    assert (c["member_epoch"], assigned(b, c)) == (generation + 1, {})
    group = describe(b, "g")
    assert (group["group_state"], group["group_epoch"]) == ("Reconciling", generation + 1)
    members = {m["member_id"]: m for m in group["members"]}
    assert members[a]["member_type"] == 0 and members["m-c"]["member_type"] == 1
    assert [tp["partitions"] for tp in members[a]["assignment"]["topic_partitions"]] == [ALL]
    assert commit(b, a, generation) == ErrorCode.NONE   # its generation still counts

    assert heartbeat(b, a, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    again = join(b, a, owned={"t": set(ALL)})            # cooperative: still owns them
    assert (again["error_code"], again["generation_id"], again["leader"],
            again["protocol_name"], again["members"]) == (
        ErrorCode.NONE, generation, "", "range", [])
    kept = partitions(sync(b, a, generation))
    assert len(kept) == 2                                # two to revoke first
    assert heartbeat(b, a, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    # Not freed yet: c still waits.
    assert assigned(b, hb(b, "m-c", c["member_epoch"], {}, group="g")) in (None, {})

    done = join(b, a, owned={"t": set(kept)})
    assert done["generation_id"] == generation + 1
    assert partitions(sync(b, a, generation + 1)) == kept
    assert heartbeat(b, a, generation + 1) == ErrorCode.NONE
    gained = assigned(b, hb(b, "m-c", c["member_epoch"], {}, group="g"))["t"]
    assert sorted(gained + kept) == ALL
    assert describe(b, "g")["group_state"] == "Stable"
    assert commit(b, a, generation) == ErrorCode.ILLEGAL_GENERATION
    assert commit(b, a, generation + 1) == ErrorCode.NONE
    assert commit(b, "m-c", c["member_epoch"], version=9) == ErrorCode.NONE



@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_without_upgrade_in_the_policy_a_classic_group_stays_classic(policy):
    b = start(group_consumer_migration_policy=policy)
    try:
        a, generation = classic_group(b)
        answer = hb(b, "m-c", group="g")
        assert (answer["error_code"], answer["error_message"]) == (
            ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
        assert heartbeat(b, a, generation) == ErrorCode.NONE
        assert describe(b, "g")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    finally:
        b.stop()


def test_a_group_of_another_protocol_type_is_not_upgraded(b):
    first = join(b, protocol_type="connect")
    answer = join(b, first["member_id"], protocol_type="connect")
    sync(b, answer["member_id"], answer["generation_id"])
    assert hb(b, "m-c", group="g")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_classic_member_joins_a_consumer_group(b):
    hb(b, "m-c", group="g")
    assert join(b, protocol_type="connect")["error_code"] == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    a = joined(b)
    assert (a["generation_id"], a["protocol_name"], a["leader"]) == (2, "range", "")
    assert partitions(sync(b, a["member_id"], 2)) == []   # c still owns everything
    # Another classic member must share a protocol with the classic ones.
    assert join(b, protocol="roundrobin")["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert sync(b, a["member_id"], 2, group="g")["error_code"] == ErrorCode.NONE
    assert sync(b, a["member_id"], 1)["error_code"] == ErrorCode.ILLEGAL_GENERATION
    assert b.call(ApiKey.SYNC_GROUP, 5, group_id="g", generation_id=2, member_id=a["member_id"],
                  protocol_type="consumer", protocol_name="roundrobin",
                  assignments=[])["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # A consumer-protocol heartbeat cannot use a classic member's id, nor the reverse.
    assert hb(b, a["member_id"], 2, None, group="g")["error_code"] == \
        ErrorCode.UNKNOWN_MEMBER_ID
    assert heartbeat(b, "m-c", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    # c gives up half; a picks them up at its next rejoin.
    c = hb(b, "m-c", 1, {"t": ALL}, group="g")
    kept = assigned(b, c)["t"]
    assert c["member_epoch"] == 1 and len(kept) == 2
    assert hb(b, "m-c", 1, {"t": kept}, group="g")["member_epoch"] == 2
    assert heartbeat(b, a["member_id"], 2) == ErrorCode.REBALANCE_IN_PROGRESS
    again = join(b, a["member_id"])
    assert sorted(partitions(sync(b, a["member_id"], again["generation_id"])) + kept) == ALL


def test_a_classic_member_leaves_and_its_partitions_move(b):
    hb(b, "m-c", group="g")
    a = joined(b)["member_id"]
    assert b.call(ApiKey.LEAVE_GROUP, 3, group_id="g", members=[
        {"member_id": a, "group_instance_id": None}])["members"][0]["error_code"] == 0
    group = describe(b, "g")
    assert [m["member_id"] for m in group["members"]] == ["m-c"]
    assert heartbeat(b, a, 2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_silent_classic_member_is_fenced_after_its_own_session_timeout(b):
    hb(b, "m-c", group="g")
    joined(b, session=200)
    assert wait_until(lambda: len(describe(b, "g")["members"]) == 1)
    assert describe(b, "g")["members"][0]["member_id"] == "m-c"


def test_the_last_consumer_protocol_member_leaving_downgrades_the_group(b):
    a, generation = classic_group(b)
    c = hb(b, "m-c", group="g")
    assert hb(b, "m-c", -1, None, group="g")["error_code"] == ErrorCode.NONE
    assert describe(b, "g")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    described = b.call(ApiKey.DESCRIBE_GROUPS, 5, groups=["g"])["groups"][0]
    assert (described["group_state"], described["protocol_type"]) == (
        "PreparingRebalance", "consumer")
    # The classic member rejoins the classic group's rebalance and keeps t-0..3.
    assert heartbeat(b, a, c["member_epoch"]) == ErrorCode.REBALANCE_IN_PROGRESS
    again = join(b, a, owned={"t": set(ALL)})
    assert again["error_code"] == ErrorCode.NONE and again["leader"] == a
    assert again["generation_id"] == c["member_epoch"] + 1


def test_policy_upgrade_keeps_the_group_a_consumer_group_when_the_last_one_leaves():
    b = start(group_consumer_migration_policy="upgrade")
    try:
        classic_group(b)
        hb(b, "m-c", group="g")
        hb(b, "m-c", -1, None, group="g")
        group = describe(b, "g")
        assert group["error_code"] == ErrorCode.NONE
        assert [m["member_type"] for m in group["members"]] == [0]
    finally:
        b.stop()


def test_a_classic_join_to_an_empty_consumer_group_makes_it_classic(b):
    hb(b, "m-c", group="g")
    hb(b, "m-c", -1, None, group="g")
    assert describe(b, "g")["group_state"] == "Empty"
    a = joined(b)
    assert a["leader"] == a["member_id"]          # a classic group's rebalance
    assert describe(b, "g")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_classic_member_told_to_rejoin_is_fenced_after_its_rebalance_timeout(b):
    hb(b, "m-c", group="g")
    a = joined(b, rebalance=300)["member_id"]
    hb(b, "m-d", group="g")                                # a new epoch: a must rejoin
    assert heartbeat(b, a, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert wait_until(lambda: a not in {m["member_id"] for m in describe(b)["members"]})
    assert heartbeat(b, a, 2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_static_classic_member_restarting_takes_its_place(b):
    hb(b, "m-c", group="g")
    first = join(b, instance="i-a")                        # static: no MEMBER_ID_REQUIRED
    assert first["error_code"] == ErrorCode.NONE
    old = first["member_id"]
    epoch = describe(b)["group_epoch"]
    again = join(b, instance="i-a")                        # a restarted instance
    assert again["error_code"] == ErrorCode.NONE and again["member_id"] != old
    members = {m["member_id"]: m for m in describe(b)["members"]}
    assert old not in members and members[again["member_id"]]["instance_id"] == "i-a"
    assert describe(b)["group_epoch"] == epoch             # no new rebalance for it
    assert join(b, old, instance="i-a")["error_code"] == ErrorCode.FENCED_INSTANCE_ID
    assert b.call(ApiKey.LEAVE_GROUP, 3, group_id="g", members=[
        {"member_id": "", "group_instance_id": "i-a"}])["members"][0]["error_code"] == 0
    assert [m["member_id"] for m in describe(b)["members"]] == ["m-c"]


def test_a_classic_member_that_never_syncs_is_fenced_after_its_rebalance_timeout(b):
    hb(b, "m-c", group="g")
    a = joined(b, rebalance=300)["member_id"]
    assert wait_until(lambda: a not in {m["member_id"] for m in describe(b)["members"]})
    synced = joined(b, rebalance=300)                   # one that syncs stays
    assert sync(b, synced["member_id"], synced["generation_id"])["error_code"] == 0
    # Past its rebalance timeout (bounded wait; it passes only if nobody is fenced).
    assert not wait_until(lambda: len(describe(b)["members"]) != 2, timeout=0.6)


def test_the_last_consumer_static_member_restarted_as_classic_downgrades_without_rebalance(b):
    hb(b, "m-k", group="g", instance="i-k")
    a = joined(b)
    hb(b, "m-k", 1, {"t": ALL}, group="g", instance="i-k")
    epoch = describe(b)["group_epoch"]
    k = join(b, instance="i-k")                   # i-k restarted with the classic protocol
    assert k["error_code"] == ErrorCode.NONE
    assert describe(b)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    described = b.call(ApiKey.DESCRIBE_GROUPS, 5, groups=["g"])["groups"][0]
    assert described["group_state"] == "Stable"   # no rebalance
    assert sorted(m["member_id"] for m in described["members"]) == sorted(
        [a["member_id"], k["member_id"]])
    taken = partitions(sync(b, k["member_id"], epoch))
    assert taken and len(taken) == 2              # the replaced member's target
    assert heartbeat(b, k["member_id"], epoch) == ErrorCode.NONE


def test_a_malformed_subscription_gets_kafkas_answer_and_changes_nothing(b):
    hb(b, "m-c", group="g")
    epoch = describe(b)["group_epoch"]
    bad = b.call(ApiKey.JOIN_GROUP, 5, group_id="g", session_timeout_ms=LONG,
                 rebalance_timeout_ms=LONG, member_id="x-1", group_instance_id=None,
                 protocol_type="consumer", protocols=[{"name": "range", "metadata": b"\x00"}])
    assert bad["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
    group = describe(b)
    assert [m["member_id"] for m in group["members"]] == ["m-c"]
    assert group["group_epoch"] == epoch


def test_an_upgrade_mid_rebalance_tells_the_parked_join_to_rejoin(b):
    a, generation = classic_group(b)
    first = join(b)
    parked = b.call(ApiKey.JOIN_GROUP, 5, group_id="g", session_timeout_ms=LONG,
                    rebalance_timeout_ms=LONG, member_id=first["member_id"],
                    group_instance_id=None, protocol_type="consumer", protocols=[
                        {"name": "range", "metadata": encode_subscription(["t"])}])
    assert isinstance(parked, Deferred)                # waits for a to rejoin
    assert hb(b, "m-c", group="g")["error_code"] == ErrorCode.NONE
    assert parked.body()["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    # Every classic member came over, the joining one with no assignment yet (as
    # Kafka's fromClassicGroup); its rejoin is served by the consumer group.
    assert sorted(m["member_id"] for m in describe(b)["members"]) == sorted(
        [a, first["member_id"], "m-c"])
    again = join(b, first["member_id"])
    assert again["error_code"] == ErrorCode.NONE and again["leader"] == ""
    assert len(describe(b)["members"]) == 3
