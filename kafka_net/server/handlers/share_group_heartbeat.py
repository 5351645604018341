"""ShareGroupHeartbeat (API key 76): serves v1-v1 (KIP-932 share groups).

Behaviour: a share group's one membership request (see
:mod:`kafka_net.server.share.coordinator`): join with epoch 0 and a member
id the client made, heartbeat with the member's epoch, leave with -1.  The
answer carries the member's epoch, the heartbeat interval
(``share.heartbeat.interval.ms``) and, on joining or when it changed, the
member's partitions from the ``simple`` assignor (a partition may be given to
several members).  Errors carry Kafka's message: INVALID_REQUEST,
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED,
GROUP_ID_NOT_FOUND (the id is a classic, consumer or streams group's).  With the
finalized ``share.version`` below 1 share groups are off: UNSUPPORTED_VERSION
(Kafka's ``isShareGroupProtocolEnabled``), checked first.

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED; then
DESCRIBE on every subscribed topic, else TOPIC_AUTHORIZATION_FAILED naming
them (Kafka's handleShareGroupHeartbeatRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.handlers.consumer_group_heartbeat import response_body
from kafka_net.server.share.coordinator import ShareHeartbeatRequest

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT


def handle(ctx, request: dict) -> dict:
    share = ctx.share_coordinator
    if share is None:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topics = request["subscribed_topic_names"]
    if topics and ctx.authorizer is not None:
        allowed = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topics)
        denied = sorted(set(topics) - allowed)
        if denied:
            return {**error_response(request, ctx.api_version,
                                     ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                    "error_message": "Unauthorized topics: " + ", ".join(denied)}
    result = share.heartbeat(ShareHeartbeatRequest(
        group_id=request["group_id"], member_id=request["member_id"],
        member_epoch=request["member_epoch"], rack_id=request["rack_id"],
        subscribed_topic_names=topics, client_id=ctx.request.header.client_id or "",
        client_host=str(ctx.request.client_address[0])))
    return response_body(result)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "member_epoch": 0, "heartbeat_interval_ms": 0}
