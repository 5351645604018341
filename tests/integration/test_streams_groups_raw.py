"""Streams groups (KIP-1071) on a real server, over raw sockets:
StreamsGroupHeartbeat and StreamsGroupDescribe as a Kafka Streams client
sends them.

Members join with a topology, get tasks with no active task on two members,
give a leaving member's tasks to the others only after revoking, never hold
the standby of a task they run, and bad topologies / topology epochs get
Kafka 4.2's answers (STREAMS_INVALID_TOPOLOGY; INVALID_REQUEST "Topology
updates are not supported yet."; a STALE_TOPOLOGY status).  A silent member
is fenced and its tasks move.  The group survives a restart on a durable
log.dirs.  Rules kept: loopback only, every wait bounded, no assertion on time.
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.support import RawClient, make_config, running_server, server_fixture, wait_until

HB, DESCRIBE = ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE
LIST_GROUPS = ApiKey.LIST_GROUPS
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS = 1, 3

# No initial rebalance delay (group.streams.initial.rebalance.delay.ms, 3000 ms by
# default): assignments come with the first heartbeats; one test below sets it.
NO_DELAY = dict(group_streams_initial_rebalance_delay_ms=0)
server = server_fixture(lambda: make_config(**NO_DELAY), scope="module")


@pytest.fixture
def client(server):
    with RawClient(server.bound_port()) as c:
        yield c


def create_topic(client, name, partitions):
    body = client.call(ApiKey.CREATE_TOPICS, 7, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout_ms": 5000, "validate_only": False})
    assert body["topics"][0]["error_code"] in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)


def topology(source, app, epoch=1, changelog_partitions=0):
    """Two sub-topologies: 0 reads ``source`` and writes a repartition topic that
    1 reads; 1 keeps a store with a changelog."""
    def info(name, partitions=0):
        return {"name": name, "partitions": partitions, "replication_factor": 1,
                "topic_configs": []}
    return {"epoch": epoch, "subtopologies": [
        {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
         "state_changelog_topics": [], "repartition_sink_topics": [f"{app}-rep"],
         "repartition_source_topics": [], "copartition_groups": []},
        {"subtopology_id": "1", "source_topics": [f"{app}-rep"], "source_topic_regex": [],
         "state_changelog_topics": [info(f"{app}-store-changelog", changelog_partitions)],
         "repartition_sink_topics": [],
         "repartition_source_topics": [info(f"{app}-rep")], "copartition_groups": []},
    ]}


def one_subtopology(source):
    """A stateless topology: one sub-topology reading ``source``."""
    return {"epoch": 1, "subtopologies": [
        {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
         "state_changelog_topics": [], "repartition_sink_topics": [],
         "repartition_source_topics": [], "copartition_groups": []}]}


def hb(client, group, member, epoch=0, topo=None, owned=None, process=None,
       endpoint=None, endpoint_epoch=0):
    """One heartbeat; ``owned``: (active, standby, warmup) as {sub: [partitions]}."""
    def ids(tasks):
        return [{"subtopology_id": s, "partitions": sorted(p)} for s, p in tasks.items()]
    active = standby = warmup = None
    if owned is not None:
        active, standby, warmup = (ids(k) for k in owned)
    elif epoch == 0:
        active = standby = warmup = []
    return client.call(HB, 0, {
        "group_id": group, "member_id": member, "member_epoch": epoch,
        "endpoint_information_epoch": endpoint_epoch, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30000 if epoch == 0 else -1, "topology": topo,
        "active_tasks": active, "standby_tasks": standby, "warmup_tasks": warmup,
        "process_id": process or (f"p-{member}" if epoch == 0 else None),
        "user_endpoint": endpoint, "client_tags": None, "task_offsets": None,
        "task_end_offsets": None, "shutdown_application": False})


def tasks_of(answer, kind="active_tasks"):
    if answer[kind] is None:
        return None
    return {t["subtopology_id"]: set(t["partitions"]) for t in answer[kind]}


def owned_now(answer):
    return tuple(tasks_of(answer, k) or {} for k in
                 ("active_tasks", "standby_tasks", "warmup_tasks"))


def describe(client, group):
    return client.call(DESCRIBE, 0, {"group_ids": [group],
                                     "include_authorized_operations": True})["groups"][0]


def settle(client, group, members, answers, rounds=8):
    """Heartbeat every member with what it owns until nothing changes."""
    for _ in range(rounds):
        for m in members:
            a = answers[m]
            answers[m] = hb(client, group, m, a["member_epoch"], owned=owned_now(a))
            if answers[m]["active_tasks"] is None:   # unchanged: keep the last tasks
                answers[m].update({k: a[k] for k in
                                   ("active_tasks", "standby_tasks", "warmup_tasks")})
    return answers


def all_active(answers):
    seen = []
    for a in answers.values():
        for sub, parts in (tasks_of(a) or {}).items():
            seen.extend((sub, p) for p in parts)
    return seen


def test_a_first_member_creates_the_internal_topics_then_gets_every_task(client, server):
    create_topic(client, "sg-in", 4)
    first = hb(client, "app1", "m1", topo=topology("sg-in", "app1"))
    assert first["error_code"] == ErrorCode.NONE, first
    codes = {s["status_code"] for s in first["status"]}
    assert MISSING_INTERNAL_TOPICS in codes
    assert server.apis.metadata_cache.topic("app1-rep").num_partitions == 4
    assert server.apis.metadata_cache.topic("app1-store-changelog").num_partitions == 4
    again = hb(client, "app1", "m1", first["member_epoch"], owned=({}, {}, {}))
    assert again["status"] == [] and again["error_code"] == ErrorCode.NONE
    assert tasks_of(again) == {"0": {0, 1, 2, 3}, "1": {0, 1, 2, 3}}
    group = describe(client, "app1")
    assert group["group_state"] == "Stable"
    assert [s["subtopology_id"] for s in group["topology"]["subtopologies"]] == ["0", "1"]
    assert group["members"][0]["process_id"] == "p-m1"
    listed = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["streams"]})
    assert [(g["group_id"], g["group_type"]) for g in listed["groups"]] == [("app1", "streams")]


def test_missing_source_topics_are_reported(client):
    a = hb(client, "app-missing", "m1", topo=topology("no-such-topic", "appm"))
    assert a["error_code"] == ErrorCode.NONE
    assert [s["status_code"] for s in a["status"]] == [MISSING_SOURCE_TOPICS]
    assert "no-such-topic" in a["status"][0]["status_detail"]
    assert tasks_of(a) == {}
    assert describe(client, "app-missing")["group_state"] == "NotReady"


def test_three_members_share_tasks_and_a_leaver_s_tasks_move_after_revocation(client):
    create_topic(client, "sg-three", 6)
    topo = topology("sg-three", "app3")
    answers = {}
    for m in ("a", "b", "c"):
        answers[m] = hb(client, "app3", m, topo=topo)
        assert answers[m]["error_code"] == ErrorCode.NONE, answers[m]
    answers = settle(client, "app3", ["a", "b", "c"], answers)
    active = all_active(answers)
    assert sorted(active) == sorted(set(active))          # no task active twice
    assert len(active) == 12
    assert {len(all_active({m: answers[m]})) for m in answers} == {4}
    # "c" leaves; the others take its tasks, but only once "c" no longer runs them.
    c_tasks = set(all_active({"c": answers["c"]}))
    gone = hb(client, "app3", "c", -1)
    assert gone["error_code"] == ErrorCode.NONE and gone["member_epoch"] == -1
    answers.pop("c")
    answers = settle(client, "app3", ["a", "b"], answers)
    active = all_active(answers)
    assert sorted(active) == sorted(set(active)) and len(active) == 12
    assert c_tasks <= set(active)
    assert {len(all_active({m: answers[m]})) for m in answers} == {6}


def test_an_active_task_moves_only_after_its_owner_revokes_it(client):
    create_topic(client, "sg-rev", 2)
    topo = one_subtopology("sg-rev")
    a = hb(client, "apprev", "a", topo=topo)
    assert tasks_of(a) == {"0": {0, 1}}
    b = hb(client, "apprev", "b", topo=topo)
    assert tasks_of(b) == {}                      # a still runs both
    a2 = hb(client, "apprev", "a", a["member_epoch"], owned=({"0": {0, 1}}, {}, {}))
    kept = tasks_of(a2)["0"]
    assert len(kept) == 1 and a2["member_epoch"] == a["member_epoch"]   # revoking
    b2 = hb(client, "apprev", "b", b["member_epoch"], owned=({}, {}, {}))
    assert not tasks_of(b2)                       # not released yet
    a3 = hb(client, "apprev", "a", a2["member_epoch"], owned=({"0": kept}, {}, {}))
    assert a3["member_epoch"] > a2["member_epoch"]
    b3 = hb(client, "apprev", "b", b2["member_epoch"], owned=({}, {}, {}))
    assert tasks_of(b3) == {"0": {0, 1} - kept}
    described = {m["member_id"]: m for m in describe(client, "apprev")["members"]}
    assert described["b"]["assignment"]["active_tasks"] == [
        {"subtopology_id": "0", "partitions": sorted({0, 1} - kept)}]


def test_bad_topologies_and_topology_epochs_get_kafka_s_errors(client):
    create_topic(client, "sg-bad", 2)
    bad = topology("sg-bad", "appbad", changelog_partitions=3)
    answer = hb(client, "appbad", "m1", topo=bad)
    assert answer["error_code"] == ErrorCode.STREAMS_INVALID_TOPOLOGY
    assert "must have an undefined partition count" in answer["error_message"]
    good = topology("sg-bad", "appbad")
    assert hb(client, "appbad", "m1", topo=good)["error_code"] == ErrorCode.NONE
    # Kafka 4.2 does not update a group's topology: a newer epoch, or another
    # topology at the same epoch, is refused; an older epoch joins as stale.
    newer = topology("sg-bad", "appbad", epoch=2)
    answer = hb(client, "appbad", "m2", topo=newer)
    assert (answer["error_code"], answer["error_message"]) == (
        ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet.")
    other = {**good, "subtopologies": good["subtopologies"][:1]}
    answer = hb(client, "appbad", "m2", topo=other)
    assert answer["error_code"] == ErrorCode.INVALID_REQUEST
    older = topology("sg-bad", "appbad", epoch=0)
    answer = hb(client, "appbad", "m3", topo=older)
    assert answer["error_code"] == ErrorCode.NONE
    assert {"status_code": 0, "status_detail": "The member's topology epoch 0 is behind the "
            "group's topology epoch 1."} in answer["status"]
    assert [m["member_id"] for m in describe(client, "appbad")["members"]] == ["m1", "m3"]
    fenced = hb(client, "appbad", "m1", 99, owned=({}, {}, {}))
    assert fenced["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    joining_without = hb(client, "appbad", "m4")
    assert joining_without["error_code"] == ErrorCode.INVALID_REQUEST


def test_describe_of_unknown_and_other_groups(client):
    unknown = describe(client, "nobody")
    assert (unknown["error_code"], unknown["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group nobody not found.")


def test_standby_tasks_never_on_the_process_of_the_active(tmp_path):
    config = make_config(group_streams_num_standby_replicas=1, **NO_DELAY)
    with running_server(config) as server, RawClient(server.bound_port()) as c:
        create_topic(c, "sg-sb", 4)
        store = {"name": "appsb-store-changelog", "partitions": 0,
                 "replication_factor": 1, "topic_configs": []}
        topo = {"epoch": 1, "subtopologies": [
            {"subtopology_id": "0", "source_topics": ["sg-sb"], "source_topic_regex": [],
             "state_changelog_topics": [store], "repartition_sink_topics": [],
             "repartition_source_topics": [], "copartition_groups": []}]}
        answers = {m: hb(c, "appsb", m, topo=topo) for m in ("a", "b", "c")}
        answers = settle(c, "appsb", ["a", "b", "c"], answers)
        standbys = 0
        for a in answers.values():
            active = tasks_of(a) or {}
            for sub, parts in (tasks_of(a, "standby_tasks") or {}).items():
                assert not parts & active.get(sub, set())
                standbys += len(parts)
        assert standbys == 4


def durable_server_with(log_dir, **settings):
    return running_server(make_config(log_store="disk", log_dirs=(log_dir,), **NO_DELAY,
                                      **settings))


def durable_server(log_dir):
    return durable_server_with(log_dir)


def test_a_restart_on_a_durable_log_keeps_the_group(tmp_path):
    with durable_server(str(tmp_path)) as server, RawClient(server.bound_port()) as c:
        # Streams groups are built on first use (issue 28): a fresh broker has none.
        assert server.group_coordinator._streams is None
        create_topic(c, "sg-dur", 3)
        topo = topology("sg-dur", "appdur")
        first = hb(c, "appdur", "m1", topo=topo, endpoint={"host": "localhost", "port": 8080})
        answer = hb(c, "appdur", "m1", first["member_epoch"], owned=({}, {}, {}))
        before = describe(c, "appdur")
        assert before["group_state"] == "Stable"
        assert server.group_coordinator._streams is not None   # the heartbeat built it
    with durable_server(str(tmp_path)) as server, RawClient(server.bound_port()) as c:
        # __consumer_offsets' loader built it before any request: the group's
        # member timers run from the start, as Kafka's onGroupLoaded arms them.
        assert server.group_coordinator._streams is not None
        after = describe(c, "appdur")
        assert after["error_code"] == ErrorCode.NONE
        for key in ("group_epoch", "assignment_epoch", "group_state", "topology"):
            assert after[key] == before[key], key
        member = after["members"][0]
        assert member["member_id"] == "m1" and member["process_id"] == "p-m1"
        assert member["user_endpoint"] == {"host": "localhost", "port": 8080}
        assert member["assignment"] == before["members"][0]["assignment"]
        again = hb(c, "appdur", "m1", answer["member_epoch"], owned=owned_now(answer))
        assert again["error_code"] == ErrorCode.NONE
        assert again["member_epoch"] == answer["member_epoch"]
        # Deleted, it stays deleted: DeleteGroups wrote tombstones for its records.
        assert hb(c, "appdur", "m1", -1)["error_code"] == ErrorCode.NONE
        deleted = c.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["appdur"]})
        assert deleted["results"][0]["error_code"] == ErrorCode.NONE
    with durable_server(str(tmp_path)) as server, RawClient(server.bound_port()) as c:
        assert describe(c, "appdur")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_other_group_apis_answer_a_streams_group_id_as_kafka(client):
    create_topic(client, "sg-kind", 1)
    topo = one_subtopology("sg-kind")
    assert hb(client, "appkind", "m1", topo=topo)["error_code"] == ErrorCode.NONE
    consumer = client.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {
        "group_ids": ["appkind"], "include_authorized_operations": False})["groups"][0]
    assert (consumer["error_code"], consumer["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group appkind is not a consumer group.")
    classic = client.call(ApiKey.DESCRIBE_GROUPS, 6, {
        "groups": ["appkind"], "include_authorized_operations": False})["groups"][0]
    assert (classic["error_code"], classic["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group appkind is not a classic group.")
    heartbeat = client.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "appkind", "member_id": "c1", "member_epoch": 0, "instance_id": None,
        "rack_id": None, "rebalance_timeout_ms": 1000, "subscribed_topic_names": ["sg-kind"],
        "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []})
    assert (heartbeat["error_code"], heartbeat["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group appkind is not a consumer group.")
    join = client.call(ApiKey.JOIN_GROUP, 5, {
        "group_id": "appkind", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})
    assert join["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_streams_version_0_turns_the_protocol_off():
    config = make_config(**NO_DELAY)
    with running_server(config) as server, RawClient(server.bound_port()) as c:
        body = c.call(ApiKey.UPDATE_FEATURES, 1, {
            "timeout_ms": 1000, "validate_only": False, "feature_updates": [
                {"feature": "streams.version", "max_version_level": 0,
                 "upgrade_type": 2}]})
        assert body["error_code"] == ErrorCode.NONE, body
        assert hb(c, "off", "m1", topo=topology("x", "off"))["error_code"] == \
            ErrorCode.UNSUPPORTED_VERSION
        assert describe(c, "off")["error_code"] == ErrorCode.UNSUPPORTED_VERSION


def test_a_silent_member_is_fenced_and_its_tasks_move():
    config = make_config(group_streams_session_timeout_ms=300, **NO_DELAY)
    with running_server(config) as server, RawClient(server.bound_port()) as c:
        create_topic(c, "sg-silent", 4)
        topo = one_subtopology("sg-silent")
        answers = {m: hb(c, "appsilent", m, topo=topo) for m in ("a", "b")}
        answers = settle(c, "appsilent", ["a", "b"], answers)
        assert len(all_active({"a": answers["a"]})) == 2
        state = {"last": answers["a"]}

        def a_runs_everything():   # "b" is silent; "a" keeps heartbeating
            last = state["last"]
            got = hb(c, "appsilent", "a", last["member_epoch"], owned=owned_now(last))
            if got["active_tasks"] is None:
                got.update({k: last[k] for k in
                            ("active_tasks", "standby_tasks", "warmup_tasks")})
            state["last"] = got
            return tasks_of(got) == {"0": {0, 1, 2, 3}}
        assert wait_until(a_runs_everything, timeout=20, interval=0.05)
        assert [m["member_id"] for m in describe(c, "appsilent")["members"]] == ["a"]


def test_members_commit_with_their_epoch_and_an_empty_group_can_be_deleted(client):
    create_topic(client, "sg-commit", 1)
    topo = one_subtopology("sg-commit")
    joined = hb(client, "appcommit", "m1", topo=topo)

    def commit(member, epoch):
        body = client.call(ApiKey.OFFSET_COMMIT, 9, {
            "group_id": "appcommit", "generation_id_or_member_epoch": epoch,
            "member_id": member, "group_instance_id": None, "topics": [
                {"name": "sg-commit", "partitions": [
                    {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                     "committed_metadata": None}]}]})
        return body["topics"][0]["partitions"][0]["error_code"]
    assert commit("m1", joined["member_epoch"]) == ErrorCode.NONE
    assert commit("m1", joined["member_epoch"] - 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit("nobody", joined["member_epoch"]) == ErrorCode.UNKNOWN_MEMBER_ID

    def delete():
        return client.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["appcommit"]}
                           )["results"][0]["error_code"]
    assert delete() == ErrorCode.NON_EMPTY_GROUP
    assert hb(client, "appcommit", "m1", -1)["error_code"] == ErrorCode.NONE
    assert describe(client, "appcommit")["group_state"] == "Empty"
    assert delete() == ErrorCode.NONE
    assert describe(client, "appcommit")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_requests_kafka_4_2_refuses(client):
    create_topic(client, "sg-val", 2)
    topo = one_subtopology("sg-val")

    def refused(**changes):
        body = {"group_id": "appval", "member_id": "m1", "member_epoch": 0,
                "endpoint_information_epoch": 0, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 1000, "topology": topo, "active_tasks": [],
                "standby_tasks": [], "warmup_tasks": [], "process_id": "p",
                "user_endpoint": None, "client_tags": None, "task_offsets": None,
                "task_end_offsets": None, "shutdown_application": False, **changes}
        answer = client.call(HB, 0, body)
        return answer["error_code"], answer["error_message"]
    invalid = ErrorCode.INVALID_REQUEST
    assert refused(member_id="") == (invalid, "MemberId can't be empty.")
    assert refused(rebalance_timeout_ms=-1) == (
        invalid, "RebalanceTimeoutMs must be provided in first request.")
    assert refused(topology=None) == (invalid, "Topology must be non-null when (re-)joining.")
    assert refused(active_tasks=[{"subtopology_id": "0", "partitions": [0]}]) == (
        invalid, "ActiveTasks must be empty when (re-)joining.")
    assert refused(member_epoch=-3, topology=None)[0] == invalid
    assert refused(member_epoch=-2, topology=None) == (invalid, "InstanceId can't be null.")
    # Static membership, refused by 4.2, is served as 4.4 serves it
    # (test_streams_static_membership_raw.py); an empty instance id is not.
    assert refused(instance_id=" ") == (invalid, "InstanceId can't be empty.")
    regex = {"epoch": 1, "subtopologies": [{**topo["subtopologies"][0],
                                             "source_topic_regex": ["sg-.*"]}]}
    assert refused(topology=regex) == (
        invalid, "Regular expressions for source topics are not supported yet.")
    assert refused(member_epoch=1, topology=None) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Streams group appval not found.")
    joined = hb(client, "appval", "m1", topo=topo)
    assert refused(member_epoch=joined["member_epoch"], topology=None,
                   active_tasks=[{"subtopology_id": "9", "partitions": [0]}]) == (
        invalid, "Subtopology 9 does not exist in the topology.")
    assert refused(member_epoch=joined["member_epoch"], topology=None,
                   active_tasks=[{"subtopology_id": "0", "partitions": [5]}]) == (
        invalid, "Task 5 for subtopology 0 is invalid. Number of tasks for this "
        "subtopology: 2")
    assert refused(member_id="ghost", member_epoch=-1, topology=None) == (
        ErrorCode.UNKNOWN_MEMBER_ID, "Member ghost is not a member of group appval.")


def test_the_first_assignment_of_a_new_group_waits_for_the_initial_delay():
    config = make_config(group_streams_initial_rebalance_delay_ms=300)
    with running_server(config) as server, RawClient(server.bound_port()) as c:
        create_topic(c, "sg-delay", 4)
        topo = one_subtopology("sg-delay")
        answers = {m: hb(c, "appdelay", m, topo=topo) for m in ("a", "b")}
        for a in answers.values():   # both joined within the delay: nothing yet
            assert tasks_of(a) == {} and a["member_epoch"] == 1
            assert {"status_code": 5, "status_detail": "Assignment delayed due to the "
                    "configured initial rebalance delay."} in a["status"]

        def shared():
            for m in ("a", "b"):
                last = answers[m]
                got = hb(c, "appdelay", m, last["member_epoch"], owned=owned_now(last))
                if got["active_tasks"] is None:
                    got.update({k: last[k] for k in
                                ("active_tasks", "standby_tasks", "warmup_tasks")})
                answers[m] = got
            return sorted(all_active(answers)) == [("0", p) for p in range(4)]
        assert wait_until(shared, timeout=20, interval=0.05)
        # one assignment for both: two tasks each, none moved after the delay
        assert {len(all_active({m: answers[m]})) for m in answers} == {2}
        assert all(a["status"] == [] for a in answers.values())


def test_a_changed_standby_config_rebalances_after_a_restart(tmp_path):
    def server_with(standbys):
        return durable_server_with(str(tmp_path), group_streams_num_standby_replicas=standbys)
    topo = topology("sg-cfg", "appcfg")
    with server_with(0) as server, RawClient(server.bound_port()) as c:
        create_topic(c, "sg-cfg", 2)
        answers = settle(c, "appcfg", ["a", "b"],
                         {m: hb(c, "appcfg", m, topo=topo) for m in ("a", "b")})
        before = describe(c, "appcfg")
        assert all(not tasks_of(a, "standby_tasks") for a in answers.values())
    with server_with(1) as server, RawClient(server.bound_port()) as c:
        answers = settle(c, "appcfg", ["a", "b"], answers)
        after = describe(c, "appcfg")
        assert after["group_epoch"] == before["group_epoch"] + 1
        standbys = sum(len(all_active({m: {**a, "active_tasks": a["standby_tasks"]}}))
                       for m, a in answers.items())
        assert standbys == 2   # sub-topology 1 keeps a store: its 2 tasks get a standby


def test_a_group_s_own_standby_config_rebalances_it(client):
    create_topic(client, "sg-gcfg", 2)
    topo = topology("sg-gcfg", "appgcfg")
    answers = settle(client, "appgcfg", ["a", "b"],
                     {m: hb(client, "appgcfg", m, topo=topo) for m in ("a", "b")})
    epoch = describe(client, "appgcfg")["group_epoch"]
    assert not any(tasks_of(a, "standby_tasks") for a in answers.values())
    altered = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
        "validate_only": False, "resources": [
            {"resource_type": 32, "resource_name": "appgcfg", "configs": [
                {"name": "streams.num.standby.replicas", "config_operation": 0,
                 "value": "1"}]}]})
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE
    answers = settle(client, "appgcfg", ["a", "b"], answers)
    assert describe(client, "appgcfg")["group_epoch"] == epoch + 1
    standbys = [(s, p) for a in answers.values()
                for s, parts in (tasks_of(a, "standby_tasks") or {}).items() for p in parts]
    assert sorted(standbys) == [("1", 0), ("1", 1)]   # the stateful sub-topology's tasks


def test_kafka_4_4_hands_out_no_warmup_task_and_sends_the_group_s_lag(client):
    """A stateful task moving to a new member goes to it at once, with no warm-up
    task (Kafka 4.4's default coordinator derives none); the acceptable recovery lag
    in every answer is the group's streams.acceptable.recovery.lag."""
    create_topic(client, "sg-warm", 2)
    topo = topology("sg-warm", "appwarm")
    altered = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
        "validate_only": False, "resources": [
            {"resource_type": 32, "resource_name": "appwarm", "configs": [
                {"name": "streams.acceptable.recovery.lag", "config_operation": 0,
                 "value": "123"}]}]})
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE
    answers = settle(client, "appwarm", ["a"], {"a": hb(client, "appwarm", "a", topo=topo)})
    assert len(all_active(answers)) == 4                  # "a" runs every task
    answers["b"] = hb(client, "appwarm", "b", topo=topo)
    answers = settle(client, "appwarm", ["a", "b"], answers)
    moved = {(s, p) for s, parts in tasks_of(answers["b"]).items() for p in parts}
    assert ("1", 0) in moved or ("1", 1) in moved        # a stateful task moved to "b"
    for answer in answers.values():
        assert answer["error_code"] == ErrorCode.NONE
        assert not tasks_of(answer, "warmup_tasks")
        assert answer["acceptable_recovery_lag_legacy"] == 123
    for member in describe(client, "appwarm")["members"]:
        assert member["assignment"]["warmup_tasks"] == []
        assert member["target_assignment"]["warmup_tasks"] == []


def test_a_lag_beyond_int32_is_capped_for_a_v0_member(client):
    """streams.acceptable.recovery.lag is a LONG; v0's int32 field gets 2**31 - 1."""
    create_topic(client, "sg-biglag", 1)
    altered = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
        "validate_only": False, "resources": [
            {"resource_type": 32, "resource_name": "appbiglag", "configs": [
                {"name": "streams.acceptable.recovery.lag", "config_operation": 0,
                 "value": str(2**40)}]}]})
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE
    answer = hb(client, "appbiglag", "a", topo=one_subtopology("sg-biglag"))
    assert answer["error_code"] == ErrorCode.NONE
    assert answer["acceptable_recovery_lag_legacy"] == 2**31 - 1
