"""One group id, one group type (Kafka 4.2's GroupMetadataManager), on a real
server over raw sockets.

A group id held by a classic, consumer (KIP-848), streams (KIP-1071) or share
(KIP-932) group answers every request of another type as Kafka does: a
heartbeat of another type GROUP_ID_NOT_FOUND "Group X is not a <type> group.",
JoinGroup INCONSISTENT_GROUP_PROTOCOL, OffsetCommit and TxnOffsetCommit on a
share group GROUP_ID_NOT_FOUND (ShareGroup.validateOffsetCommit), OffsetFetch
on it no offsets, each describe API GROUP_ID_NOT_FOUND for another type's id;
ListGroups reports the group once, with its type, and DeleteGroups deletes
whichever type holds the id, which then frees it for any type.

Pairs: share vs classic, share vs consumer, share vs streams, streams vs
classic, streams vs consumer (consumer vs classic is in tests/server/group).
Rules kept: loopback only, every wait bounded, no assertion on time.
"""

from __future__ import annotations

import itertools
import threading

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.support import RawClient, make_config, request_body, server_fixture

E = ErrorCode
TOPIC = "kinds"
# No initial rebalance delays: a classic member's JoinGroup is answered at once.
server = server_fixture(lambda: make_config(group_initial_rebalance_delay_ms=0,
                                            group_streams_initial_rebalance_delay_ms=0),
                        scope="module")
_ids = itertools.count()


@pytest.fixture(scope="module")
def client(server):
    with RawClient(server.bound_port()) as c:
        body = call(c, ApiKey.CREATE_TOPICS, 7, topics=[
            {"name": TOPIC, "num_partitions": 2, "replication_factor": 1,
             "assignments": [], "configs": []}], timeout_ms=5000)
        assert body["topics"][0]["error_code"] == E.NONE, body
        yield c


def call(client, api_key, version, **fields) -> dict:
    return client.call(api_key, version, request_body(api_key, version, **fields))


# -- one request of each type ----------------------------------------------------------------

def join_classic(client, group) -> dict:
    """JoinGroup v5 with the consumer protocol, joining again with the member id a
    MEMBER_ID_REQUIRED answer gives (KIP-394), as a client does."""
    def join(member_id):
        return call(client, ApiKey.JOIN_GROUP, 5, group_id=group, session_timeout_ms=10000,
                    rebalance_timeout_ms=10000, member_id=member_id, group_instance_id=None,
                    protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}])
    body = join("")
    if body["error_code"] == E.MEMBER_ID_REQUIRED:
        body = join(body["member_id"])
    return body


def consumer_heartbeat(client, group, member="c1") -> dict:
    return call(client, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
                member_epoch=0, instance_id=None, rack_id=None, rebalance_timeout_ms=10000,
                subscribed_topic_names=[TOPIC], subscribed_topic_regex=None,
                server_assignor=None, topic_partitions=[])


def streams_heartbeat(client, group, member="s1") -> dict:
    topology = {"epoch": 1, "subtopologies": [
        {"subtopology_id": "0", "source_topics": [TOPIC], "source_topic_regex": [],
         "state_changelog_topics": [], "repartition_sink_topics": [],
         "repartition_source_topics": [], "copartition_groups": []}]}
    return call(client, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, group_id=group, member_id=member,
                member_epoch=0, endpoint_information_epoch=0, instance_id=None,
                rack_id=None, rebalance_timeout_ms=10000, topology=topology,
                active_tasks=[], standby_tasks=[], warmup_tasks=[], process_id="p",
                user_endpoint=None, client_tags=[], task_offsets=[], task_end_offsets=[],
                shutdown_application=False)


def share_heartbeat(client, group, member="sh1", epoch=0) -> dict:
    return call(client, ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
                member_epoch=epoch, rack_id=None,
                subscribed_topic_names=[TOPIC] if epoch == 0 else None)


HOLD = {  # how each type takes an id: a live member
    "classic": lambda c, g: join_classic(c, g),
    "consumer": consumer_heartbeat,
    "streams": streams_heartbeat,
    "share": share_heartbeat,
}

HEARTBEAT = {  # (request, the message of a refusal)
    "consumer": (consumer_heartbeat, "Group {} is not a consumer group."),
    "streams": (streams_heartbeat, "Group {} is not a streams group."),
    "share": (share_heartbeat, "Group {} is not a share group."),
}

DESCRIBE = {  # api key, version, the message for another type's id
    "classic": (ApiKey.DESCRIBE_GROUPS, 6, "Group {} is not a classic group."),
    "consumer": (ApiKey.CONSUMER_GROUP_DESCRIBE, 1, "Group {} is not a consumer group."),
    "streams": (ApiKey.STREAMS_GROUP_DESCRIBE, 0, "Group {} is not a streams group."),
    "share": (ApiKey.SHARE_GROUP_DESCRIBE, 1, "Group {} is not a share group."),
}


def describe(client, kind, group) -> dict:
    api_key, version, _ = DESCRIBE[kind]
    if kind == "classic":
        fields = dict(groups=[group], include_authorized_operations=False)
    else:
        fields = dict(group_ids=[group], include_authorized_operations=False)
    [described] = call(client, api_key, version, **fields)["groups"]
    return described


def listed(client, group) -> list[tuple[str, str]]:
    body = call(client, ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=[])
    return [(g["group_type"], g["protocol_type"]) for g in body["groups"]
            if g["group_id"] == group]


def held(client, kind: str) -> str:
    group = f"{kind}-{next(_ids)}"
    body = HOLD[kind](client, group)
    assert body["error_code"] == E.NONE, body
    return group


def leave(client, kind: str, group: str, answer: dict) -> None:
    """The member ``held`` made leaves, so that the group is empty."""
    if kind == "classic":
        body = call(client, ApiKey.LEAVE_GROUP, 3, group_id=group,
                    members=[{"member_id": answer["member_id"], "group_instance_id": None}])
        assert body["error_code"] == E.NONE, body
        return
    if kind == "streams":
        body = call(client, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, group_id=group, member_id="s1",
                    member_epoch=-1, endpoint_information_epoch=0, instance_id=None,
                    rack_id=None, rebalance_timeout_ms=-1, topology=None, active_tasks=None,
                    standby_tasks=None, warmup_tasks=None, process_id=None,
                    user_endpoint=None, client_tags=None, task_offsets=None,
                    task_end_offsets=None, shutdown_application=False)
    elif kind == "consumer":
        body = call(client, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id="c1",
                    member_epoch=-1, instance_id=None, rack_id=None, rebalance_timeout_ms=-1,
                    subscribed_topic_names=None, subscribed_topic_regex=None,
                    server_assignor=None, topic_partitions=None)
    else:
        body = share_heartbeat(client, group, epoch=-1)
    assert body["error_code"] == E.NONE, body


PAIRS = [("share", "classic"), ("share", "consumer"), ("share", "streams"),
         ("streams", "classic"), ("streams", "consumer")]
BOTH_WAYS = [(a, b) for pair in PAIRS for a, b in (pair, pair[::-1])]


# -- the tests -------------------------------------------------------------------------------

@pytest.mark.parametrize("holder, other", [p for p in BOTH_WAYS if p[1] != "classic"])
def test_a_heartbeat_of_another_type_is_group_id_not_found(client, holder, other):
    group = held(client, holder)
    request, message = HEARTBEAT[other]
    body = request(client, group)
    assert (body["error_code"], body["error_message"]) == (
        E.GROUP_ID_NOT_FOUND, message.format(group))
    assert listed(client, group)[0][0] == holder   # nothing of the other type was made


@pytest.mark.parametrize("holder", ["share", "streams"])
def test_join_group_on_a_share_or_streams_group_is_inconsistent_group_protocol(client, holder):
    group = held(client, holder)
    body = join_classic(client, group)
    assert (body["error_code"], body["member_id"]) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    assert [kind for kind, _ in listed(client, group)] == [holder]


@pytest.mark.parametrize("holder", ["share", "streams"])
def test_classic_heartbeat_sync_and_leave_know_no_such_member(client, holder):
    """Kafka's classicGroupHeartbeat/Sync/Leave: a non-classic group has no classic
    member (UNKNOWN_MEMBER_ID)."""
    group = held(client, holder)
    beat = call(client, ApiKey.HEARTBEAT, 4, group_id=group, generation_id=1,
                member_id="m", group_instance_id=None)
    sync = call(client, ApiKey.SYNC_GROUP, 5, group_id=group, generation_id=1, member_id="m",
                group_instance_id=None, protocol_type="consumer", protocol_name="range",
                assignments=[])
    left = call(client, ApiKey.LEAVE_GROUP, 3, group_id=group,
                members=[{"member_id": "m", "group_instance_id": None}])
    assert beat["error_code"] == sync["error_code"] == E.UNKNOWN_MEMBER_ID
    assert left["members"][0]["error_code"] == E.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("holder, other", BOTH_WAYS)
def test_each_describe_api_answers_its_own_type_only(client, holder, other):
    group = held(client, holder)
    _, _, message = DESCRIBE[other]
    answer = describe(client, other, group)
    assert (answer["error_code"], answer["error_message"]) == (
        E.GROUP_ID_NOT_FOUND, message.format(group))
    assert describe(client, holder, group)["error_code"] == E.NONE


@pytest.mark.parametrize("holder", ["consumer", "streams", "share"])
def test_describe_groups_before_v6_answers_another_types_id_dead(client, holder):
    group = held(client, holder)
    [answer] = call(client, ApiKey.DESCRIBE_GROUPS, 5, groups=[group],
                    include_authorized_operations=False)["groups"]
    assert (answer["error_code"], answer["group_state"], answer["members"]) == (
        E.NONE, "Dead", [])


@pytest.mark.parametrize("kind", ["classic", "consumer", "streams", "share"])
def test_an_unknown_id_is_not_found_by_every_describe_api(client, kind):
    answer = describe(client, kind, "nobody-here")
    assert answer["error_code"] == E.GROUP_ID_NOT_FOUND
    assert answer["error_message"] == "Group nobody-here not found."


def commit(client, group, generation=-1, member="") -> list[int]:
    body = call(client, ApiKey.OFFSET_COMMIT, 9, group_id=group,
                generation_id_or_member_epoch=generation, member_id=member,
                group_instance_id=None, topics=[{"name": TOPIC, "partitions": [
                    {"partition_index": 0, "committed_offset": 5,
                     "committed_leader_epoch": -1, "committed_metadata": ""}]}])
    return [p["error_code"] for t in body["topics"] for p in t["partitions"]]


@pytest.mark.parametrize("generation", [-1, 1])
def test_offset_commit_on_a_share_group_is_group_id_not_found(client, generation):
    group = held(client, "share")
    assert commit(client, group, generation, "sh1") == [E.GROUP_ID_NOT_FOUND]
    # Nothing was stored, and no classic group made: OffsetFetch finds nothing
    # (Kafka answers a share group's id as an unknown group's).
    body = call(client, ApiKey.OFFSET_FETCH, 9, groups=[
        {"group_id": group, "member_id": None, "member_epoch": -1,
         "topics": [{"name": TOPIC, "partition_indexes": [0]}]}], require_stable=False)
    [answer] = body["groups"]
    assert answer["error_code"] == E.NONE
    assert answer["topics"][0]["partitions"][0]["committed_offset"] == -1
    deleted = call(client, ApiKey.OFFSET_DELETE, 0, group_id=group, topics=[
        {"name": TOPIC, "partitions": [{"partition_index": 0}]}])
    assert deleted["error_code"] == E.GROUP_ID_NOT_FOUND   # "... is not a consumer group."
    assert listed(client, group) == [("share", "share")]


def test_txn_offset_commit_on_a_share_group_is_group_id_not_found(client):
    group = held(client, "share")
    init = call(client, ApiKey.INIT_PRODUCER_ID, 4, transactional_id=f"tx-{group}",
                transaction_timeout_ms=60000)
    assert init["error_code"] == E.NONE, init
    pid, epoch = init["producer_id"], init["producer_epoch"]
    added = call(client, ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id=f"tx-{group}",
                 producer_id=pid, producer_epoch=epoch, group_id=group)
    assert added["error_code"] == E.NONE, added
    body = call(client, ApiKey.TXN_OFFSET_COMMIT, 3, transactional_id=f"tx-{group}",
                group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=-1,
                member_id="", group_instance_id=None, topics=[{"name": TOPIC, "partitions": [
                    {"partition_index": 0, "committed_offset": 5,
                     "committed_leader_epoch": -1, "committed_metadata": ""}]}])
    assert body["topics"][0]["partitions"][0]["error_code"] == E.GROUP_ID_NOT_FOUND
    ended = call(client, ApiKey.END_TXN, 3, transactional_id=f"tx-{group}", producer_id=pid,
                 producer_epoch=epoch, committed=True)
    assert ended["error_code"] == E.NONE, ended
    assert listed(client, group) == [("share", "share")]


def test_a_share_heartbeat_on_an_offsets_only_classic_group_is_refused(client):
    """Kafka converts an empty classic group for a consumer or streams join, never
    for a share group."""
    group = f"simple-{next(_ids)}"
    assert commit(client, group) == [E.NONE]
    body = share_heartbeat(client, group)
    assert (body["error_code"], body["error_message"]) == (
        E.GROUP_ID_NOT_FOUND, f"Group {group} is not a share group.")


@pytest.mark.parametrize("holder", ["classic", "consumer", "streams", "share"])
def test_list_groups_reports_the_id_once_with_its_type(client, holder):
    group = held(client, holder)
    for _, request in ((k, HOLD[k]) for k in HOLD if k != holder):
        request(client, group)   # all refused
    protocol = {"classic": "consumer", "consumer": "consumer", "streams": "consumer",
                "share": "share"}[holder]
    assert listed(client, group) == [(holder, protocol)]


@pytest.mark.parametrize("holder, other", BOTH_WAYS)
def test_delete_groups_deletes_whichever_type_holds_the_id_then_it_is_free(
        client, holder, other):
    group = f"{holder}-{next(_ids)}"
    answer = HOLD[holder](client, group)
    assert answer["error_code"] == E.NONE, answer
    body = call(client, ApiKey.DELETE_GROUPS, 2, groups_names=[group])
    assert body["results"][0]["error_code"] == E.NON_EMPTY_GROUP
    leave(client, holder, group, answer)
    body = call(client, ApiKey.DELETE_GROUPS, 2, groups_names=[group])
    assert body["results"][0]["error_code"] == E.NONE
    assert listed(client, group) == []
    assert HOLD[other](client, group)["error_code"] == E.NONE
    assert listed(client, group)[0][0] == other



def test_a_commit_racing_a_share_join_for_a_new_id_leaves_one_type(server, client,
                                                                    monkeypatch):
    """A "simple" consumer commits for a new id right after a share join found the id
    free: the check and the creation are one step (GroupRegistry.id_claim), so
    the commit is refused and the id stays the share group's, not both."""
    group = f"race-{next(_ids)}"
    share = server.apis.group_coordinator.share
    check, raced, committed = share._taken_by_other_kind, [], []

    def checked_then_raced(group_id: str) -> bool:
        taken = check(group_id)
        if not raced:
            def other_connection():
                with RawClient(server.bound_port()) as own:
                    committed.append(commit(own, group))
            raced.append(threading.Thread(target=other_connection))
            raced[0].start()
            raced[0].join(1.0)   # it ends here only if nothing makes it wait for the claim
        return taken
    monkeypatch.setattr(share, "_taken_by_other_kind", checked_then_raced)
    joined = share_heartbeat(client, group)
    raced[0].join(10)
    assert not raced[0].is_alive()
    assert (joined["error_code"], committed) == (E.NONE, [[E.GROUP_ID_NOT_FOUND]])
    assert listed(client, group) == [("share", "share")]
