"""ConsumerGroupDescribe (API key 69): serves v0-v1 (KIP-848).

Behaviour: each consumer-protocol group with its state (Empty, Assigning,
Reconciling, Stable), group and assignment epochs, the assignor in use, and
every member with its current and target assignment (topic ids and names).
v1 (KIP-1099) adds each member's type: always 1, a consumer-protocol member,
since this coordinator admits no classic (JoinGroup) member into a
consumer-protocol group (Kafka's 0).
An unknown group, or a classic one, gets GROUP_ID_NOT_FOUND with Kafka's
message.  Authorized operations, when asked for, are the principal's
(READ, DELETE, DESCRIBE without an authorizer); else -2147483648, Kafka's
"not requested" value.

With an authorizer: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED
(Kafka's handleConsumerGroupDescribe); and DESCRIBE on every topic its members
subscribe to or are (to be) assigned, else TOPIC_AUTHORIZATION_FAILED with no
members ("The described group uses topics that the client is not authorized
to describe.", Kafka 4.0, KAFKA-18813).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.handlers.describe_groups import described_groups

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1   # member_type (v1); -1 is "unknown"
TOPICS_NOT_AUTHORIZED = ("The described group uses topics that the client is not authorized "
                         "to describe.")


def handle(ctx, request: dict) -> dict:
    return {"throttle_time_ms": 0, "groups": described_groups(
        ctx, request, lambda group_id: _describe(ctx, group_id))}


def _describe(ctx, group_id: str) -> dict:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                "group_id": group_id, "group_state": "", "group_epoch": -1,
                "assignment_epoch": -1, "assignor_name": "", "members": []}
    error, message, group = ctx.group_coordinator.consumer.describe(group_id)
    if group is None:
        return {"error_code": error, "error_message": message, "group_id": group_id,
                "group_state": "", "group_epoch": -1, "assignment_epoch": -1,
                "assignor_name": "", "members": []}
    members = [_member(ctx, m, group.target.get(m.member_id, {}))
               for m in group.members.values()]
    if ctx.authorizer is not None and not _topics_describable(ctx, members):
        return {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                "error_message": TOPICS_NOT_AUTHORIZED, "group_id": group_id,
                "group_state": "", "group_epoch": -1, "assignment_epoch": -1,
                "assignor_name": "", "members": []}
    return {"error_code": ErrorCode.NONE, "group_id": group_id,
            "group_state": group.state(), "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch, "assignor_name": group.assignor_name,
            "members": members}


def _topics_describable(ctx, members: list[dict]) -> bool:
    topics = set()
    for m in members:
        topics.update(m["subscribed_topic_names"])
        for kind in ("assignment", "target_assignment"):
            topics.update(t["topic_name"] for t in m[kind]["topic_partitions"] if t["topic_name"])
    return all(ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, t, log_if_denied=False)
               for t in topics)


def _member(ctx, m, target) -> dict:
    return {"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "member_epoch": m.member_epoch, "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": _assignment(ctx, m.assigned),
            "target_assignment": _assignment(ctx, target),
            # A classic member inside the group (KIP-848's online migration).
            "member_type": CONSUMER_MEMBER if m.classic is None else CLASSIC_MEMBER}


def _assignment(ctx, assignment) -> dict:
    parts = []
    for topic_id, partitions in sorted(assignment.items(), key=lambda kv: str(kv[0])):
        meta = ctx.metadata_cache.topic_by_id(topic_id)
        parts.append({"topic_id": topic_id, "topic_name": "" if meta is None else meta.name,
                      "partitions": sorted(partitions)})
    return {"topic_partitions": parts}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"groups": [{"error_code": error_code, "group_id": g, "group_state": "",
                        "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "",
                        "members": []} for g in request.get("group_ids") or []]}
