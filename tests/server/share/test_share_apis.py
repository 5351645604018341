"""The share-group APIs through the API layer (KIP-932): ShareGroupHeartbeat,
ShareFetch and ShareAcknowledge with their sessions and errors,
ShareGroupDescribe, ListGroups' share groups, the offset admin APIs (90-92),
their authorization, and __share_group_state written and read back."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import decode_records
from kafka_net.protocol.share_records import decode_share_state_record
from kafka_net.server.authorizer import AclOperation as Op, ResourceType as RT
from kafka_net.server.internal_topics import SHARE_GROUP_STATE_TOPIC_NAME
from tests.server.conftest import Broker, Deferred, batch, fill, produce
from tests.server.handlers.test_acl_checks import grant, secured_broker
from tests.server.share.support import (
    ACCEPT, GAP, REJECT, RELEASE, RENEW, ShareMember, acquired, offsets, partition_answer, values)

E = ErrorCode


def make(**overrides) -> Broker:
    config = dataclasses.replace(ServerConfig(log_store="memory"), **overrides)
    b = fill(Broker(config).start())   # topics t (2 partitions, 3 records in t-0) and u
    b.apis.group_configs.set_group_key("sg", "share.auto.offset.reset", "earliest")
    return b


@pytest.fixture
def broker():
    b = make()
    try:
        yield b
    finally:
        b.stop()


def test_heartbeat_joins_assigns_every_member_and_leaves(broker):
    m1, m2 = ShareMember(broker, "sg", "m1"), ShareMember(broker, "sg", "m2")
    first = m1.join()
    t = m1.topic_id()
    assert (first["member_epoch"], first["heartbeat_interval_ms"]) == (1, 5000)
    assert m1.assignment == {t: [0, 1]}
    assert m2.join()["member_epoch"] == 2
    assert m1.heartbeat()["error_code"] == E.NONE
    # Two members, two partitions: one each (simple assignor).
    assert m1.heartbeat()["member_epoch"] == 2
    assert sorted([m1.assignment[t], m2.assignment[t]]) == [[0], [1]]
    # Three members on two partitions: partitions are shared, none left out.
    m3 = ShareMember(broker, "sg", "m3")
    m3.join()
    for m in (m1, m2):
        m.heartbeat()
    assert all(m.assignment[t] for m in (m1, m2, m3))
    assert m3.leave()["member_epoch"] == -1
    assert m3.heartbeat(3)["error_code"] == E.UNKNOWN_MEMBER_ID


def test_heartbeat_errors_are_kafkas(broker):
    m = ShareMember(broker, "sg", "m1")
    m.join()
    fenced = m.heartbeat(m.member_epoch + 5)
    assert fenced["error_code"] == E.FENCED_MEMBER_EPOCH
    assert "greater member epoch" in fenced["error_message"]
    invalid = broker.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id="sg", member_id="x",
                          member_epoch=0, rack_id=None, subscribed_topic_names=None)
    assert (invalid["error_code"], invalid["error_message"]) == (
        E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    nameless = broker.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id="", member_id="m",
                           member_epoch=0, rack_id=None, subscribed_topic_names=["t"])
    assert (nameless["error_code"], nameless["error_message"]) == (
        E.INVALID_REQUEST, "GroupId can't be empty.")
    # "g" is the rich broker's classic group: one namespace for every kind.
    taken = ShareMember(broker, "g", "m").heartbeat(0)
    assert (taken["error_code"], taken["error_message"]) == (
        E.GROUP_ID_NOT_FOUND, "Group g is not a share group.")
    broker.apis.features.set_levels({"share.version": 0})
    assert ShareMember(broker, "sg", "m9").heartbeat(0)["error_code"] == E.UNSUPPORTED_VERSION


def test_two_members_acquire_disjoint_records_and_acks_move_the_start(broker):
    m1, m2 = ShareMember(broker, "sg", "m1"), ShareMember(broker, "sg", "m2")
    m1.join(), m2.join()
    produce(broker, records=batch([b"d", b"e", b"f"]))     # t-0: offsets 0-5
    first = m1.fetch(max_records=2)
    assert offsets(first) == [0, 1] and first["acquisition_lock_timeout_ms"] == 30000
    assert values(first) == {0: b"a", 1: b"b"}
    second = m2.fetch(max_records=10)
    assert offsets(second) == [2, 3, 4, 5]
    assert m1.fetch()["responses"][0]["partitions"][0]["acquired_records"] == []
    # Piggybacked acknowledgements: accept 0, release 1; m2 accepts all but rejects 3.
    answer = m1.fetch(acks={("t", 0): [(0, 1, [ACCEPT, RELEASE])]})
    assert partition_answer(answer)["acknowledge_error_code"] == E.NONE
    assert acquired(answer) == {(m1.topic_id(), 0): [(1, 1, 2)]}   # released to itself
    done = m2.acknowledge({("t", 0): [(2, 5, [ACCEPT, REJECT, ACCEPT, ACCEPT])]})
    assert partition_answer(done)["error_code"] == E.NONE
    assert done["acquisition_lock_timeout_ms"] == 30000
    offsets_now = broker.share_coordinator.start_offsets("sg")
    assert offsets_now[(m1.topic_id(), 0)] == (1, 0)   # 1 is held by m1 again


def test_acknowledging_a_record_another_member_holds_is_invalid_record_state(broker):
    m1, m2 = ShareMember(broker, "sg", "m1"), ShareMember(broker, "sg", "m2")
    m1.join(), m2.join()
    assert offsets(m1.fetch()) == [0, 1, 2]
    m2.fetch()
    answer = m2.acknowledge({("t", 0): [(0, 0, [ACCEPT])]})
    assert partition_answer(answer)["error_code"] == E.INVALID_RECORD_STATE
    # Renew only with is_renew_ack (v2): then no record is fetched.
    bad = m1.acknowledge({("t", 0): [(0, 0, [RENEW])]})
    assert partition_answer(bad)["error_code"] == E.INVALID_REQUEST
    renewed = m1.fetch(acks={("t", 0): [(0, 2, [RENEW])]}, renew=True)
    assert partition_answer(renewed)["acknowledge_error_code"] == E.NONE
    assert offsets(renewed) == []


def test_share_session_epochs(broker):
    m = ShareMember(broker, "sg", "m1")
    m.join()
    missing = m.fetch(epoch=1)
    assert missing["error_code"] == E.SHARE_SESSION_NOT_FOUND
    assert m.fetch(epoch=0)["error_code"] == E.NONE
    assert m.fetch(epoch=5)["error_code"] == E.INVALID_SHARE_SESSION_EPOCH
    assert m.fetch()["error_code"] == E.NONE   # epoch 1, then 2
    assert m.acknowledge({}, epoch=0)["error_code"] == E.INVALID_SHARE_SESSION_EPOCH
    with_acks = m.fetch(epoch=0, acks={("t", 0): [(0, 0, [ACCEPT])]})
    assert with_acks["error_code"] == E.INVALID_REQUEST
    nameless = broker.call(ApiKey.SHARE_FETCH, 2, group_id="sg", member_id="",
                           share_session_epoch=0, max_wait_ms=0, min_bytes=1, max_bytes=1,
                           max_records=1, batch_size=1, is_renew_ack=False, topics=[],
                           forgotten_topics_data=[])
    assert nameless["error_code"] == E.INVALID_REQUEST


def test_closing_the_session_releases_what_the_member_holds(broker):
    m1, m2 = ShareMember(broker, "sg", "m1"), ShareMember(broker, "sg", "m2")
    m1.join(), m2.join()
    assert offsets(m1.fetch()) == [0, 1, 2]
    closed = m1.acknowledge({("t", 0): [(0, 0, [ACCEPT])]}, epoch=-1)
    assert partition_answer(closed)["error_code"] == E.NONE
    assert m1.fetch(epoch=1)["error_code"] == E.SHARE_SESSION_NOT_FOUND
    # Never handed to m1's application: that acquisition does not count (Kafka's
    # DeliveryCountOps.DECREASE), so m2 gets them as a first delivery.
    assert acquired(m2.fetch()) == {(m2.topic_id(), 0): [(1, 2, 1)]}


def test_a_session_fetches_its_partitions_and_forgets_on_request(broker):
    m = ShareMember(broker, "sg", "m1")
    m.join()
    produce(broker, partition=1, records=batch([b"p1"]))
    both = m.fetch(partitions=(("t", 0), ("t", 1)))
    assert set(acquired(both)) == {(m.topic_id(), 0), (m.topic_id(), 1)}
    produce(broker, partition=0, records=batch([b"x"]))
    produce(broker, partition=1, records=batch([b"y"]))
    # An incremental request names nothing: the session's partitions are fetched;
    # t-1 is forgotten first.
    later = m.fetch(partitions=(), forgotten=(("t", 1),))
    assert set(acquired(later)) == {(m.topic_id(), 0)}
    # What it held in t-1 went back, its acquisition not counted: another member
    # gets it as a first delivery.
    other = ShareMember(broker, "sg", "m2")
    other.join()
    assert acquired(other.fetch(partitions=(("t", 1),))) == {(m.topic_id(), 1): [(0, 1, 1)]}


def test_a_partition_with_nothing_acquired_answers_empty_records_not_null(broker):
    """Kafka answers MemoryRecords.EMPTY; librdkafka's ShareConsumer cannot parse a
    null records field (MessageSetSize -1)."""
    m = ShareMember(broker, "sg", "m1")
    m.join()
    assert offsets(m.fetch()) == [0, 1, 2]
    nothing = m.fetch(acks={("t", 0): [(0, 2, [ACCEPT])]})
    answer = partition_answer(nothing)
    assert answer["acquired_records"] == [] and answer["records"] == b""


def test_a_fetch_that_finds_nothing_waits_for_an_append(broker):
    m = ShareMember(broker, "sg", "m1")
    m.join()
    assert offsets(m.fetch()) == [0, 1, 2]
    parked = m.fetch(max_wait_ms=60_000)
    assert isinstance(parked, Deferred) and not parked.done
    produce(broker, records=batch([b"late"]))
    assert offsets(parked.body()) == [3]


def test_the_state_is_written_to_share_group_state(broker):
    m = ShareMember(broker, "sg", "m1")
    m.join()
    m.fetch()
    m.acknowledge({("t", 0): [(0, 1, [ACCEPT, REJECT])]})
    records = []
    for index in range(broker.internal_topics.partition_count(SHARE_GROUP_STATE_TOPIC_NAME)):
        for _, b in broker.replica_manager.read_batches(SHARE_GROUP_STATE_TOPIC_NAME, index):
            records += [decode_share_state_record(r.key, r.value) for r in decode_records(b)]
    # The initial snapshot, then an update per change: the acquisition, the acks.
    assert [(r.kind, r.group_id, r.partition) for r in records] == [
        (0, "sg", 0), (1, "sg", 0), (1, "sg", 0)]
    assert records[1].value["state_batches"] == [
        {"first_offset": 0, "last_offset": 2, "delivery_state": 0, "delivery_count": 1}]
    assert records[-1].value["start_offset"] == 2
    assert records[-1].value["state_batches"] == [
        {"first_offset": 2, "last_offset": 2, "delivery_state": 0, "delivery_count": 1}]
    # The broker's own state reader agrees (what a restart replays).
    [state] = broker.share_coordinator.persister.states_of("sg").values()
    assert state.start_offset == 2


def test_share_group_describe_and_list_groups(broker):
    m = ShareMember(broker, "sg", "m1")
    m.join()
    body = broker.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=["sg", "ghost", "g", ""],
                       include_authorized_operations=True)
    sg, ghost, classic, empty = body["groups"]
    assert (sg["error_code"], sg["group_state"], sg["assignor_name"], sg["group_epoch"]) == (
        E.NONE, "Stable", "simple", 1)
    [member] = sg["members"]
    assert member["member_id"] == "m1" and member["subscribed_topic_names"] == ["t"]
    assert member["assignment"]["topic_partitions"][0]["topic_name"] == "t"
    assert sg["authorized_operations"] != -2147483648
    assert (ghost["error_code"], ghost["error_message"]) == (
        E.GROUP_ID_NOT_FOUND, "Group ghost not found.")
    assert classic["error_code"] == E.GROUP_ID_NOT_FOUND
    assert empty["error_code"] == E.INVALID_GROUP_ID
    listed = broker.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["share"])
    assert [(g["group_id"], g["protocol_type"], g["group_state"], g["group_type"])
            for g in listed["groups"]] == [("sg", "share", "Stable", "share")]
    every = broker.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=[])
    assert {g["group_id"] for g in every["groups"]} == {"g", "sg"}


def test_share_group_offsets_describe_alter_delete(broker):
    m = ShareMember(broker, "sg", "m1")
    m.join()
    m.fetch()
    m.acknowledge({("t", 0): [(0, 0, [ACCEPT])]})

    def describe(version=1, topics=None, group="sg"):
        return broker.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version, groups=[
            {"group_id": group, "topics": topics}])["groups"][0]
    [topic] = describe()["topics"]
    [p0] = topic["partitions"]
    assert (topic["topic_name"], p0["partition_index"], p0["start_offset"], p0["lag"]) == (
        "t", 0, 1, 2)
    named = describe(topics=[{"topic_name": "t", "partitions": [0, 1]},
                             {"topic_name": "missing", "partitions": [0]}])
    assert [[(p["start_offset"], p["error_code"]) for p in t["partitions"]]
            for t in named["topics"]] == [[(1, 0), (-1, 0)],
                                          [(-1, E.UNKNOWN_TOPIC_OR_PARTITION)]]
    assert describe(group="ghost")["error_code"] == E.GROUP_ID_NOT_FOUND
    assert describe(group="")["error_code"] == E.INVALID_GROUP_ID
    assert broker.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="", topics=[]
                       )["error_code"] == E.INVALID_GROUP_ID

    def alter(offset):
        return broker.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="sg", topics=[
            {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": offset}]}])
    busy = alter(0)
    assert busy["error_code"] == E.NON_EMPTY_GROUP
    m.leave()
    m.acknowledge({}, epoch=-1)
    assert alter(2)["responses"][0]["partitions"][0]["error_code"] == E.NONE
    assert describe()["topics"][0]["partitions"][0]["start_offset"] == 2
    again = ShareMember(broker, "sg", "m2")
    again.join()
    assert offsets(again.fetch()) == [2]
    again.leave()
    again.acknowledge({}, epoch=-1)
    deleted = broker.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="sg",
                          topics=[{"topic_name": "t"}, {"topic_name": "missing"}])
    assert [(r["topic_name"], r["error_code"]) for r in deleted["responses"]] == [
        ("t", E.NONE), ("missing", E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert describe()["topics"] == []
    # With its state gone, the next fetch starts where share.auto.offset.reset says.
    third = ShareMember(broker, "sg", "m3")
    third.join()
    assert offsets(third.fetch()) == [0, 1, 2]
    ghost = broker.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="ghost", topics=[])
    assert ghost["error_code"] == E.GROUP_ID_NOT_FOUND


def test_altering_the_offsets_of_a_new_share_group_creates_it(broker):
    """KAFKA-19662 (Kafka 4.2): AlterShareGroupOffsets on a share group that does not
    exist yet creates it, empty, so its first member starts at the offset set;
    another kind of group's id is still GROUP_ID_NOT_FOUND."""
    body = broker.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="fresh", topics=[
        {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 1}]}])
    assert body["error_code"] == E.NONE
    assert body["responses"][0]["partitions"][0]["error_code"] == E.NONE
    listed = broker.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["share"])
    assert [(g["group_id"], g["group_state"]) for g in listed["groups"]] == [("fresh", "Empty")]
    first = ShareMember(broker, "fresh", "m1")
    first.join()
    assert offsets(first.fetch()) == [1, 2]
    classic = broker.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="g", topics=[])
    assert (classic["error_code"], classic["error_message"]) == (
        E.GROUP_ID_NOT_FOUND, "Group g is not a share group.")


def test_latest_is_the_default_reset(broker):
    m = ShareMember(broker, "late", "m1")
    m.join()
    assert offsets(m.fetch()) == []
    produce(broker, records=batch([b"new"]))
    assert offsets(m.fetch()) == [3]


# -- authorization (Kafka's KafkaApis checks) ------------------------------------------


@pytest.fixture
def secured():
    b = secured_broker()
    b.apis.group_configs.set_group_key("sg", "share.auto.offset.reset", "earliest")
    try:
        yield b
    finally:
        b.stop()


def test_share_fetch_needs_read_on_the_group_and_on_each_topic(secured):
    grant(secured, RT.GROUP, "sg", "User:alice", Op.READ)
    secured.principal = "User:alice"
    m = ShareMember(secured, "sg", "m1")
    assert m.heartbeat(0)["error_code"] == E.TOPIC_AUTHORIZATION_FAILED
    grant(secured, RT.TOPIC, "t", "User:alice", Op.DESCRIBE)
    m.join()
    denied = m.fetch()
    assert partition_answer(denied)["error_code"] == E.TOPIC_AUTHORIZATION_FAILED
    grant(secured, RT.TOPIC, "t", "User:alice", Op.READ)
    assert offsets(m.fetch(epoch=0)) == [0, 1, 2]
    stranger = ShareMember(secured, "other", "m1")
    assert stranger.fetch()["error_code"] == E.GROUP_AUTHORIZATION_FAILED


def test_describe_apis_need_describe_on_the_group_and_topics(secured):
    secured.principal = "User:admin"
    ShareMember(secured, "sg", "m1").join()
    grant(secured, RT.GROUP, "sg", "User:bob", Op.DESCRIBE)
    secured.principal = "User:bob"
    [described] = secured.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=["sg"],
                               include_authorized_operations=False)["groups"]
    assert described["error_code"] == E.TOPIC_AUTHORIZATION_FAILED   # t is not bob's
    grant(secured, RT.TOPIC, "t", "User:bob", Op.DESCRIBE)
    [described] = secured.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=["sg"],
                               include_authorized_operations=False)["groups"]
    assert described["error_code"] == E.NONE
    [offsets_of] = secured.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[
        {"group_id": "other", "topics": None}])["groups"]
    assert offsets_of["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    refused = secured.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="sg",
                           topics=[{"topic_name": "t"}])
    assert refused["error_code"] == E.GROUP_AUTHORIZATION_FAILED   # DELETE is needed
    refused = secured.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="sg", topics=[])
    assert refused["error_code"] == E.GROUP_AUTHORIZATION_FAILED   # READ is needed


def test_delete_groups_deletes_an_empty_share_group_and_its_state(broker):
    m = ShareMember(broker, "sg", "m1")
    m.join()
    m.fetch()
    m.acknowledge({("t", 0): [(0, 0, [ACCEPT])]})

    def delete():
        [result] = broker.call(ApiKey.DELETE_GROUPS, 2, groups_names=["sg"])["results"]
        return result["error_code"]
    assert delete() == E.NON_EMPTY_GROUP
    m.leave()
    m.acknowledge({}, epoch=-1)
    assert delete() == E.NONE
    assert broker.share_coordinator.persister.states_of("sg") == {}
    assert delete() == E.GROUP_ID_NOT_FOUND
    again = ShareMember(broker, "sg", "m2")
    again.join()
    assert offsets(again.fetch()) == [0, 1, 2]   # from share.auto.offset.reset again


def test_read_committed_share_groups_never_deliver_an_aborted_transaction(broker):
    from tests.server.txn_support import begin, end_txn, produce_txn
    broker.apis.group_configs.set_group_key("sg", "share.isolation.level", "read_committed")
    m = ShareMember(broker, "sg", "m1")
    m.join()
    assert offsets(m.fetch()) == [0, 1, 2]
    pid, epoch = begin(broker, "tx-a")
    produce_txn(broker, pid, epoch, 0, b"aborted-1", b"aborted-2")   # offsets 3-4
    assert end_txn(broker, "tx-a", pid, epoch, commit=False) == 0    # marker at 5
    pid, epoch = begin(broker, "tx-c")
    produce_txn(broker, pid, epoch, 0, b"committed")                 # offset 6
    # The open transaction holds back the LSO: only the ABORT marker (5) can go;
    # control records are delivered for the client to acknowledge as gaps.
    assert offsets(m.fetch(acks={("t", 0): [(0, 2, [ACCEPT])]})) == [5]
    assert end_txn(broker, "tx-c", pid, epoch, commit=True) == 0     # marker at 7
    got = m.fetch(acks={("t", 0): [(5, 5, [GAP])]})
    assert offsets(got) == [6, 7] and values(got)[6] == b"committed"
    m.acknowledge({("t", 0): [(6, 7, [ACCEPT, GAP])]})
    # The aborted records (3, 4) were archived, never delivered: the start moves
    # past everything.
    assert broker.share_coordinator.start_offsets("sg")[(m.topic_id(), 0)][0] == 8


def test_the_sweep_drops_the_session_of_a_member_gone_without_closing_it(broker):
    m1, m2 = ShareMember(broker, "sg", "m1"), ShareMember(broker, "sg", "m2")
    m1.join(), m2.join()
    assert offsets(m1.fetch()) == [0, 1, 2]
    m1.leave()   # no final ShareAcknowledge: its session and records linger
    session = broker.share_coordinator.sessions.get("sg", "m1")
    broker.share_coordinator.sweep()
    assert broker.share_coordinator.sessions.get("sg", "m1") is session   # not idle yet
    assert offsets(m2.fetch()) == []
    session.last_used -= 46   # idle past share.session.timeout.ms (45 s)
    broker.share_coordinator.sweep()
    assert broker.share_coordinator.sessions.get("sg", "m1") is None
    assert acquired(m2.fetch()) == {(m2.topic_id(), 0): [(0, 2, 1)]}   # not counted


@pytest.mark.parametrize("strategy,first", [
    ("by_duration:PT1H", 3),          # t-0's records are from 1970: none that recent
    ("by_duration:P36500D", 0),       # a century back: all of them
    ("earliest", 0), ("latest", 3)])
def test_share_auto_offset_reset_strategies(broker, strategy, first):
    broker.apis.group_configs.set_group_key("rs", "share.auto.offset.reset", strategy)
    m = ShareMember(broker, "rs", "m1")
    m.join()
    got = offsets(m.fetch())   # the share-partition starts here, at its first fetch
    produce(broker, records=batch([b"now"]))   # offset 3, timestamped now
    got += offsets(m.fetch())
    assert got == list(range(first, 4))


# -- a closed connection (Kafka's ShareSessionCache ConnectionDisconnectListener) ------------

def closed(broker, connection_id: str) -> None:
    """What a Processor does when it lets the connection go, then the sweep's turn."""
    broker.share_coordinator.sessions.connection_disconnect_listener().on_disconnect(
        connection_id)
    broker.share_coordinator.sweep()


def test_a_closed_connection_drops_its_session_and_releases_the_records(broker):
    m1, m2 = ShareMember(broker, "sg", "m1"), ShareMember(broker, "sg", "m2")
    m1.join(), m2.join()
    assert offsets(m1.fetch()) == [0, 1, 2]
    sessions = broker.share_coordinator.sessions
    connection = sessions.get("sg", "m1").connection_id
    assert connection is not None
    closed(broker, "conn-unrelated")                       # another connection: nothing
    assert sessions.get("sg", "m1") is not None and offsets(m2.fetch()) == []
    closed(broker, connection)
    assert sessions.get("sg", "m1") is None
    assert m1.fetch()["error_code"] == E.SHARE_SESSION_NOT_FOUND
    assert acquired(m2.fetch()) == {(m2.topic_id(), 0): [(0, 2, 1)]}   # not counted
    assert "m1" in broker.share_coordinator.group("sg").members   # still a member


def test_a_session_reopened_elsewhere_or_closed_is_not_the_old_connections(broker):
    m1, m2 = ShareMember(broker, "sg", "m1"), ShareMember(broker, "sg", "m2")
    m1.join(), m2.join()
    sessions = broker.share_coordinator.sessions
    m1.fetch()
    first = sessions.get("sg", "m1").connection_id
    m1.fetch(epoch=0)                                      # reopened: another connection
    second = sessions.get("sg", "m1")
    assert second.connection_id != first
    closed(broker, first)
    assert sessions.get("sg", "m1") is second
    m2.fetch()
    m2_connection = sessions.get("sg", "m2").connection_id
    m2.fetch(epoch=-1)                                     # closed by its final request
    left = []
    sessions.register_share_group_listener(type("L", (), {
        "on_member_leave": lambda self, g, m: left.append((g, m))})())
    closed(broker, m2_connection)
    assert left == [] and sessions._by_connection.keys() == {second.connection_id}


@pytest.mark.parametrize("level, written", [(2, 1), (1, 0)])
def test_dead_letters_need_share_version_2(broker, level, written):
    """KIP-1191's dead-letter queue is share.version 2's: at 1 (Kafka 4.2) a rejected
    record is archived and nothing is written; a topic without
    errors.deadletterqueue.group.enable is never written either."""
    for name, enabled in (("dlq.sg", "true"), ("dlq.plain", "false")):
        created = broker.call(ApiKey.CREATE_TOPICS, 5, topics=[{
            "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": [{"name": "errors.deadletterqueue.group.enable", "value": enabled}]}],
            timeout_ms=1000, validate_only=False)
        assert created["topics"][0]["error_code"] == E.NONE
    broker.apis.features.set_levels({"share.version": level})
    for dlq in ("dlq.sg", "dlq.plain"):
        broker.apis.group_configs.set_group_key("sg", "errors.deadletterqueue.topic.name", dlq)
        m = ShareMember(broker, "sg", f"m-{dlq}")
        m.join()
        first = min(offsets(m.fetch()))
        m.acknowledge({("t", 0): [(first, first, [REJECT])]})
        m.leave()
        m.acknowledge({}, epoch=-1)
    logs = {name: broker.replica_manager.partition(name, 0).log for name in ("dlq.sg",
                                                                             "dlq.plain")}
    assert (logs["dlq.sg"].log_end_offset, logs["dlq.plain"].log_end_offset) == (written, 0)


@pytest.mark.parametrize("auto_create", [False, True])
def test_a_missing_dead_letter_topic_is_created_only_where_the_cluster_allows(
        broker, auto_create):
    """KIP-1191: a group's dead-letter topic must exist, unless the dynamic broker
    config errors.deadletterqueue.auto.create.topics.enable (false by default) is
    set: then the first dead letter creates it, opted in
    (errors.deadletterqueue.group.enable=true), and lands there."""
    if auto_create:
        altered = broker.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False,
                              resources=[{"resource_type": 4, "resource_name": "",
                                          "configs": [{
                                              "name": "errors.deadletterqueue.auto.create."
                                                      "topics.enable",
                                              "config_operation": 0, "value": "true"}]}])
        assert altered["responses"][0]["error_code"] == E.NONE
    broker.apis.features.set_levels({"share.version": 2})
    broker.apis.group_configs.set_group_key("sg", "errors.deadletterqueue.topic.name",
                                            "dlq.made")
    m = ShareMember(broker, "sg", "m1")
    m.join()
    first = min(offsets(m.fetch()))
    m.acknowledge({("t", 0): [(first, first, [REJECT])]})
    made = broker.metadata_cache.topic("dlq.made")
    assert (made is not None) == auto_create
    if auto_create:
        assert broker.replica_manager.config_repository.effective("dlq.made")[
            "errors.deadletterqueue.group.enable"] is True
        assert broker.replica_manager.partition("dlq.made", 0).log.log_end_offset == 1


def test_the_share_coordinator_is_built_by_the_first_share_request():
    # BrokerCore builds share groups on first use (issue 28: time to listen); until
    # then no share group can exist, and the classic side sees none.
    sweepers = sweeper_threads()
    b = make()
    try:
        assert b._share is None and b.group_coordinator.share is None
        assert share_group_ids(b) == [] and sweeper_threads() == sweepers
        first = ShareMember(b, "sg", "m1").join()
        assert first["error_code"] == E.NONE and first["member_epoch"] == 1
        assert b.group_coordinator.share is b.share_coordinator is b._share
        assert sweeper_threads() == sweepers + 1   # started: the purgatories run
        assert share_group_ids(b) == ["sg"]
    finally:
        b.stop()
    assert sweeper_threads() == sweepers


def sweeper_threads() -> int:
    import threading
    return sum(t.name == "share-group-sweeper" for t in threading.enumerate())


def share_group_ids(b) -> list[str]:
    body = b.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["share"])
    return sorted(g["group_id"] for g in body["groups"])
