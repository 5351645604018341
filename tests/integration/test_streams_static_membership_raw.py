"""Static membership in streams groups (KIP-1071, as Kafka 4.4 serves it) on a real
server over raw sockets: a member that leaves with epoch -2 keeps its place and
its tasks; the restarted instance (same instance id, new member id) takes them
back with no rebalance; an instance still in the group cannot be taken
(UNRELEASED_INSTANCE_ID) and the replaced member id is fenced
(FENCED_INSTANCE_ID).  Rules kept: loopback only, bounded, no assertion on time.
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.integration.test_streams_groups_raw import create_topic, one_subtopology
from tests.support import RawClient, make_config, server_fixture

HB, DESCRIBE = ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE
STATIC_LEAVE = -2

server = server_fixture(lambda: make_config(group_streams_initial_rebalance_delay_ms=0),
                        scope="module")


@pytest.fixture
def client(server):
    with RawClient(server.bound_port()) as c:
        yield c


def heartbeat(client, member, instance, epoch=0, owned=None):
    joining = epoch == 0
    tasks = None if owned is None else [
        {"subtopology_id": s, "partitions": sorted(p)} for s, p in owned.items()]
    return client.call(HB, 1, {
        "group_id": "static-app", "member_id": member, "member_epoch": epoch,
        "endpoint_information_epoch": 0, "instance_id": instance, "rack_id": None,
        "rebalance_timeout_ms": 30000 if joining else -1,
        "topology": one_subtopology("static-words") if joining else None,
        "active_tasks": [] if joining else tasks, "standby_tasks": [] if joining else
        (None if owned is None else []), "warmup_tasks": [] if joining else
        (None if owned is None else []),
        # Kafka Streams keeps its process id in its state directory: a restart reuses it.
        "process_id": f"p-{instance}" if joining else None, "user_endpoint": None,
        "client_tags": None, "task_offsets": None, "task_end_offsets": None,
        "shutdown_application": False})


def active(answer) -> dict:
    return {t["subtopology_id"]: set(t["partitions"]) for t in answer["active_tasks"] or []}


def settle(client, answers: dict, instances: dict, rounds=6) -> dict:
    """Heartbeat each member with what it owns until its tasks stop changing."""
    owned = {m: active(a) for m, a in answers.items()}
    for _ in range(rounds):
        for m, a in answers.items():
            answers[m] = heartbeat(client, m, instances[m], a["member_epoch"], owned[m])
            assert answers[m]["error_code"] == ErrorCode.NONE, answers[m]
            if answers[m]["active_tasks"] is not None:
                owned[m] = active(answers[m])
    return owned


def group(client) -> dict:
    return client.call(DESCRIBE, 0, {"group_ids": ["static-app"],
                                     "include_authorized_operations": False})["groups"][0]


def test_a_restarted_static_member_takes_its_tasks_back_without_a_rebalance(client):
    create_topic(client, "static-words", 2)
    instances = {"m1": "i1", "m2": "i2"}
    answers = {m: heartbeat(client, m, i) for m, i in instances.items()}
    owned = settle(client, answers, instances)
    assert sorted(p for tasks in owned.values() for p in tasks.get("0", ())) == [0, 1]
    epoch_before = group(client)["group_epoch"]

    left = heartbeat(client, "m1", "i1", STATIC_LEAVE)
    assert (left["error_code"], left["member_epoch"]) == (ErrorCode.NONE, STATIC_LEAVE)
    described = group(client)
    assert described["group_epoch"] == epoch_before            # no rebalance
    assert {m["member_id"] for m in described["members"]} == {"m1", "m2"}

    # Another instance cannot take i2, which has not left.
    taken = heartbeat(client, "intruder", "i2")
    assert taken["error_code"] == ErrorCode.UNRELEASED_INSTANCE_ID
    # The restarted i1, under a new member id, gets m1's tasks back at once.
    back = heartbeat(client, "m1-restarted", "i1")
    assert back["error_code"] == ErrorCode.NONE
    assert active(back) == owned["m1"]
    described = group(client)
    assert described["group_epoch"] == epoch_before
    assert {m["member_id"] for m in described["members"]} == {"m1-restarted", "m2"}
    # The old member id of i1 is fenced.
    old = heartbeat(client, "m1", "i1", answers["m1"]["member_epoch"], owned["m1"])
    assert old["error_code"] == ErrorCode.FENCED_INSTANCE_ID
