"""KIP-848's online migration on a real server over raw sockets: a classic
group converted by a ConsumerGroupHeartbeat survives a restart on a durable
log.dirs as a consumer group with its classic member (mid-revocation), and the
group converted back to classic survives one too.  Loopback only, every wait
bounded, no assertion on time.
"""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.consumer_protocol import (
    decode_assignment, encode_assignment, encode_subscription)
from kafka_net.protocol.error_codes import ErrorCode
from tests.integration.client_support import fast_group_config
from tests.support import RawClient, running_server

SESSION = 30000
ALL = [0, 1, 2, 3]


def durable(log_dir):
    return running_server(fast_group_config(log_store="disk", log_dirs=(log_dir,)))


def join(c, member_id="", owned=None) -> dict:
    return c.call(ApiKey.JOIN_GROUP, 5, {
        "group_id": "mg", "session_timeout_ms": SESSION, "rebalance_timeout_ms": SESSION,
        "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": encode_subscription(["mt"], owned)}]})


def sync(c, member_id, generation, assignments=()) -> dict:
    return c.call(ApiKey.SYNC_GROUP, 3, {
        "group_id": "mg", "generation_id": generation, "member_id": member_id,
        "group_instance_id": None, "assignments": list(assignments)})


def heartbeat(c, member_id, generation) -> int:
    return c.call(ApiKey.HEARTBEAT, 3, {"group_id": "mg", "generation_id": generation,
                                        "member_id": member_id,
                                        "group_instance_id": None})["error_code"]


def consumer_hb(c, epoch, owned=()) -> dict:
    return c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "mg", "member_id": "m-c", "member_epoch": epoch, "instance_id": None,
        "rack_id": None, "rebalance_timeout_ms": SESSION if epoch == 0 else -1,
        "subscribed_topic_names": ["mt"] if epoch == 0 else None,
        "subscribed_topic_regex": None, "server_assignor": None,
        "topic_partitions": None if owned is None else list(owned)})


def describe(c) -> dict:
    return c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {
        "group_ids": ["mg"], "include_authorized_operations": False})["groups"][0]


def summary(group) -> tuple:
    return (group["group_epoch"], group["assignment_epoch"], sorted(
        (m["member_id"], m["member_epoch"], m["member_type"],
         [tp["partitions"] for tp in m["assignment"]["topic_partitions"]],
         [tp["partitions"] for tp in m["target_assignment"]["topic_partitions"]])
        for m in group["members"]))


def owned_by(sync_answer) -> list[int]:
    return sorted(decode_assignment(sync_answer["assignment"]).get("mt", ()))


def test_a_converted_group_and_a_converted_back_group_survive_restarts(tmp_path):
    log_dir = str(tmp_path)
    with durable(log_dir) as server, RawClient(server.bound_port()) as c:
        server.apis.create_topic("mt", 4)
        a = join(c)["member_id"]
        first = join(c, a)
        generation = first["generation_id"]
        assert sync(c, a, generation, [{"member_id": a, "assignment": encode_assignment(
            {"mt": set(ALL)}, 1)}])["error_code"] == ErrorCode.NONE
        upgraded = consumer_hb(c, 0)
        assert upgraded["error_code"] == ErrorCode.NONE
        assert heartbeat(c, a, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        assert join(c, a, owned={"mt": set(ALL)})["generation_id"] == generation
        kept = owned_by(sync(c, a, generation))
        assert len(kept) == 2
        before = summary(describe(c))
    with durable(log_dir) as server, RawClient(server.bound_port()) as c:
        after = describe(c)
        assert after["error_code"] == ErrorCode.NONE and summary(after) == before
        # Still revoking after the restart: rejoining without them completes it.
        assert heartbeat(c, a, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        done = join(c, a, owned={"mt": set(kept)})
        assert done["generation_id"] == upgraded["member_epoch"]
        assert owned_by(sync(c, a, done["generation_id"])) == kept
        # The consumer-protocol member leaves: the group turns classic again.
        assert consumer_hb(c, -1, None)["error_code"] == ErrorCode.NONE
        assert describe(c)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        rejoined = join(c, a, owned={"mt": set(kept)})
        assert rejoined["leader"] == a
        assert sync(c, a, rejoined["generation_id"], [{"member_id": a, "assignment":
                    encode_assignment({"mt": set(ALL)}, 1)}])["error_code"] == ErrorCode.NONE
    with durable(log_dir) as server, RawClient(server.bound_port()) as c:
        assert describe(c)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        described = c.call(ApiKey.DESCRIBE_GROUPS, 5, {
            "groups": ["mg"], "include_authorized_operations": False})["groups"][0]
        assert (described["group_state"], described["protocol_type"],
                [m["member_id"] for m in described["members"]]) == ("Stable", "consumer", [a])
        assert heartbeat(c, a, rejoined["generation_id"]) == ErrorCode.NONE
