"""AlterShareGroupOffsets (API key 91): serves v0-v0 (KIP-932 share groups).

Behaviour: sets the share-partition start offset (SPSO) of partitions of an
empty share group (Kafka's ``alterShareGroupOffsets``): each named partition
starts again at the offset given, with a new state epoch and nothing in flight
(InitializeShareGroupState). A share group that does not exist yet is created,
empty, with those offsets (Kafka 4.2, KAFKA-19662), so its first members start
there.  A group with members answers NON_EMPTY_GROUP, a classic, consumer or
streams group's id GROUP_ID_NOT_FOUND, an empty id INVALID_GROUP_ID, all top-level; an unknown topic or partition
UNKNOWN_TOPIC_OR_PARTITION in its partitions, a negative offset
INVALID_REQUEST.

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED; READ on
each topic, else TOPIC_AUTHORIZATION_FAILED in its partitions.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS


def handle(ctx, request: dict) -> dict:
    share, group_id = ctx.share_coordinator, request["group_id"]
    error, message = check_empty_group(ctx, share, group_id, AclOperation.READ, create=True)
    if error:
        return {**error_response(request, ctx.api_version, error), "error_message": message}
    allowed = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC,
                                    [t["topic_name"] for t in request["topics"]])
    responses = []
    for t in request["topics"]:
        meta = ctx.metadata_cache.topic(t["topic_name"])
        parts = []
        for p in t["partitions"]:
            index = p["partition_index"]
            if t["topic_name"] not in allowed:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif meta is None or not 0 <= index < meta.num_partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p["start_offset"] < 0:
                code = ErrorCode.INVALID_REQUEST
            else:
                code = share.alter_start_offset(group_id, meta.topic_id, index,
                                                p["start_offset"])
            parts.append({"partition_index": index, "error_code": code})
        responses.append({"topic_name": t["topic_name"],
                          "topic_id": ZERO_UUID if meta is None else meta.topic_id,
                          "partitions": parts})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "responses": responses}


def check_empty_group(ctx, share, group_id: str, operation, create: bool = False
                      ) -> tuple[int, str | None]:
    """The checks AlterShareGroupOffsets and DeleteShareGroupOffsets begin with
    (share groups served, a group id, ``operation`` on the group allowed, an
    empty share group, made first if missing with ``create``): (error, message),
    NONE when it passes them."""
    if share is None:
        return ErrorCode.UNSUPPORTED_VERSION, None
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, None
    if not ctx.authorize(operation, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    return share.check_empty(group_id, create)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "responses": [
        {"topic_name": t["topic_name"], "topic_id": ZERO_UUID, "partitions": [
            {"partition_index": p["partition_index"], "error_code": error_code}
            for p in t["partitions"]]} for t in request.get("topics") or []]}
