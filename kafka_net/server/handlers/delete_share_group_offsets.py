"""DeleteShareGroupOffsets (API key 92): serves v0-v0 (KIP-932 share groups).

Behaviour: forgets the share-partition state of whole topics of an empty share
group (Kafka's ``deleteShareGroupOffsets``, then DeleteShareGroupState): the
next member to fetch starts again where ``share.auto.offset.reset`` says. A
group with members answers NON_EMPTY_GROUP, an unknown group (or a classic or
consumer group's id) GROUP_ID_NOT_FOUND, an empty id INVALID_GROUP_ID, all top-
level; an unknown topic UNKNOWN_TOPIC_OR_PARTITION.

With an authorizer: DELETE on the group, else GROUP_AUTHORIZATION_FAILED; READ
on each topic, else TOPIC_AUTHORIZATION_FAILED for it.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.handlers.alter_share_group_offsets import check_empty_group

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS


def handle(ctx, request: dict) -> dict:
    share, group_id = ctx.share_coordinator, request["group_id"]
    error, message = check_empty_group(ctx, share, group_id, AclOperation.DELETE)
    if error:
        return {**error_response(request, ctx.api_version, error), "error_message": message}
    names = [t["topic_name"] for t in request["topics"]]
    allowed = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC, names)
    responses = []
    for name in names:
        meta = ctx.metadata_cache.topic(name)
        if name not in allowed:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif meta is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            code = share.delete_topic_state(group_id, meta.topic_id, meta.num_partitions)
        responses.append({"topic_name": name,
                          "topic_id": ZERO_UUID if meta is None else meta.topic_id,
                          "error_code": code})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "responses": responses}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "responses": [
        {"topic_name": t["topic_name"], "topic_id": ZERO_UUID, "error_code": error_code}
        for t in request.get("topics") or []]}
