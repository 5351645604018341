"""ShareGroupDescribe (API key 77): serves v1-v1 (KIP-932 share groups).

Behaviour: each share group with its state (Empty, Stable), group and
assignment epochs, its assignor (``simple``) and every member with its
subscription and current assignment (topic ids and names).  An unknown group,
or a classic or consumer group, gets GROUP_ID_NOT_FOUND with Kafka's message;
an empty group id INVALID_GROUP_ID.  Authorized operations, when asked for,
are the principal's (READ, DELETE, DESCRIBE without an authorizer); else
-2147483648, Kafka's "not requested" value.

With an authorizer: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED;
then DESCRIBE on every topic its members subscribe to or are assigned, else
TOPIC_AUTHORIZATION_FAILED for that group (Kafka's
handleShareGroupDescribe, v1).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.handlers.describe_groups import described_groups

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
ASSIGNOR = "simple"


def handle(ctx, request: dict) -> dict:
    share = ctx.share_coordinator
    if share is None:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    return {"throttle_time_ms": 0, "groups": described_groups(
        ctx, request, lambda group_id: _describe(ctx, share, group_id))}


def _failed(group_id: str, error_code: int, message: str | None = None) -> dict:
    return {"error_code": error_code, "error_message": message, "group_id": group_id,
            "group_state": "", "group_epoch": -1, "assignment_epoch": -1,
            "assignor_name": "", "members": []}


def _describe(ctx, share, group_id: str) -> dict:
    if not group_id:
        return _failed(group_id, ErrorCode.INVALID_GROUP_ID)
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return _failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, message, group = share.describe(group_id)
    if group is None:
        return _failed(group_id, error, message)
    members = [_member(ctx, m) for m in group.members.values()]
    if ctx.authorizer is not None:
        topics = {t for m in members for t in m["subscribed_topic_names"]} | {
            tp["topic_name"] for m in members for tp in m["assignment"]["topic_partitions"]}
        topics.discard("")
        if ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topics) != topics:
            return _failed(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                           "The group has described topic(s) that the client is not "
                           "authorized to describe.")
    return {"error_code": ErrorCode.NONE, "group_id": group_id,
            "group_state": group.state(), "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch, "assignor_name": ASSIGNOR,
            "members": members}


def _member(ctx, m) -> dict:
    parts = []
    for topic_id, partitions in sorted(m.assigned.items(), key=lambda kv: str(kv[0])):
        meta = ctx.metadata_cache.topic_by_id(topic_id)
        parts.append({"topic_id": topic_id, "topic_name": "" if meta is None else meta.name,
                      "partitions": sorted(partitions)})
    return {"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
            "client_id": m.client_id, "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "assignment": {"topic_partitions": parts}}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"groups": [_failed(g, error_code) for g in request.get("group_ids") or []]}
