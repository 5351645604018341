"""KIP-1331 (Kafka 4.4) on a real server, over raw sockets: a streams group
member asked by its v1 heartbeat sends its topology's description with
StreamsGroupTopologyDescriptionUpdate (key 93); StreamsGroupDescribe v1 serves
it back; DeleteGroups v3 answers with its per-group error_message.  Rules kept:
loopback only, every wait bounded, no assertion on time.
"""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.integration.test_streams_groups_raw import create_topic, one_subtopology
from tests.support import RawClient, make_config, server_fixture

HB, DESCRIBE = ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE
UPDATE = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
NOT_REQUESTED, NOT_STORED, AVAILABLE = 0, 1, 3

server = server_fixture(lambda: make_config(group_streams_initial_rebalance_delay_ms=0),
                        scope="module")


@pytest.fixture
def client(server):
    with RawClient(server.bound_port()) as c:
        yield c


def heartbeat(client, group, member, epoch=0, version=1):
    joining = epoch == 0
    return client.call(HB, version, {
        "group_id": group, "member_id": member, "member_epoch": epoch,
        "endpoint_information_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30000 if joining else -1,
        "topology": one_subtopology("words") if joining else None,
        "active_tasks": [] if joining else None, "standby_tasks": [] if joining else None,
        "warmup_tasks": [] if joining else None,
        "process_id": f"p-{member}" if joining else None, "user_endpoint": None,
        "client_tags": None, "task_offsets": None, "task_end_offsets": None,
        "shutdown_application": False})


DESCRIPTION = {
    "subtopologies": [{"subtopology_id": "0", "nodes": [
        {"name": "KSTREAM-SOURCE-0000000000", "node_type": 1, "source_topics": ["words"],
         "sink_topic": None, "stores": [], "successors": ["KSTREAM-SINK-0000000001"]},
        {"name": "KSTREAM-SINK-0000000001", "node_type": 3, "source_topics": [],
         "sink_topic": "counts", "stores": [], "successors": []}]}],
    "global_stores": []}


def push(client, group, member, epoch=1, description=DESCRIPTION):
    return client.call(UPDATE, 0, {"group_id": group, "member_id": member,
                                   "topology_epoch": epoch,
                                   "topology_description": description})


def describe(client, group, include=True, version=1):
    return client.call(DESCRIBE, version, {
        "group_ids": [group], "include_authorized_operations": False,
        "include_topology_description": include})["groups"][0]


def test_the_heartbeat_asks_until_a_member_sends_the_description(client):
    create_topic(client, "words", 2)
    joined = heartbeat(client, "kip1331", "m-1")
    assert joined["error_code"] == ErrorCode.NONE
    assert joined["topology_description_required"] is True
    assert joined["acceptable_recovery_lag"] == 10000     # v1: the int64 field
    assert describe(client, "kip1331")["topology_description_status"] == NOT_STORED
    assert push(client, "kip1331", "m-1")["error_code"] == ErrorCode.NONE
    again = heartbeat(client, "kip1331", "m-1", joined["member_epoch"])
    assert again["topology_description_required"] is False
    group = describe(client, "kip1331")
    assert group["topology_description_status"] == AVAILABLE
    assert group["topology_description"] == DESCRIPTION
    # Not asked for: not sent; and v0 has neither field (read back as the defaults).
    for answer in (describe(client, "kip1331", include=False),
                   describe(client, "kip1331", version=0)):
        assert (answer["topology_description_status"], answer["topology_description"]) == \
            (NOT_REQUESTED, None)


def test_a_push_from_a_stranger_or_for_another_epoch_is_refused(client):
    create_topic(client, "words", 2)
    heartbeat(client, "kip1331-refused", "m-1")
    assert push(client, "kip1331-refused", "nobody")["error_code"] == \
        ErrorCode.UNKNOWN_MEMBER_ID
    assert push(client, "no-such-group", "m-1")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    answer = push(client, "kip1331-refused", "m-1", epoch=2)
    assert answer["error_code"] == ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH
    assert "topology epoch is 1" in answer["error_message"]
    assert describe(client, "kip1331-refused")["topology_description_status"] == NOT_STORED


def test_describe_v1_names_the_assignor_and_v0_does_not(client):
    """KIP-1357's AssignorName: Kafka's sticky assignor; a v0 answer leaves it out."""
    create_topic(client, "words", 2)
    heartbeat(client, "kip1357", "m-1")
    assert describe(client, "kip1357", include=False)["assignor_name"] == "sticky"
    assert describe(client, "kip1357", version=0)["assignor_name"] is None
    # A group that is not there has no assignor to name.
    assert describe(client, "kip1357-none")["assignor_name"] is None


def test_a_v0_heartbeat_keeps_its_int32_lag_and_is_never_asked(client):
    create_topic(client, "words", 2)
    answer = heartbeat(client, "kip1331-v0", "m-1", version=0)
    assert answer["acceptable_recovery_lag_legacy"] == 10000
    assert answer["topology_description_required"] is False   # not on v0's wire
    assert answer["acceptable_recovery_lag"] == -1   # v1's int64: a v0 reader's default


def test_delete_groups_v3_carries_a_null_message_per_group(client):
    body = client.call(ApiKey.DELETE_GROUPS, 3, {"groups_names": ["never-was"]})
    assert body["results"] == [{"group_id": "never-was",
                                "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                                "error_message": None}]


def test_a_durable_broker_serves_the_description_after_a_restart(tmp_path):
    """The description is kept with the group's StreamsGroupMetadata record: after
    a restart describe v1 serves it, and the heartbeat does not ask for it again."""
    from tests.integration.test_streams_groups_raw import durable_server
    with durable_server(str(tmp_path)) as broker, RawClient(broker.bound_port()) as c:
        create_topic(c, "words", 2)
        joined = heartbeat(c, "kip1331-durable", "m-1")
        assert joined["topology_description_required"] is True
        assert push(c, "kip1331-durable", "m-1")["error_code"] == ErrorCode.NONE
    with durable_server(str(tmp_path)) as broker, RawClient(broker.bound_port()) as c:
        group = describe(c, "kip1331-durable")
        assert (group["topology_description_status"], group["topology_description"]) == \
            (AVAILABLE, DESCRIPTION)
        again = heartbeat(c, "kip1331-durable", "m-1", joined["member_epoch"])
        assert again["error_code"] == ErrorCode.NONE
        assert again["topology_description_required"] is False
