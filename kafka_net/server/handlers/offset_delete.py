"""OffsetDelete (API key 47): serves v0-v0.

Behaviour (Kafka's ``KafkaApis.handleOffsetDeleteRequest`` and
``OffsetMetadataManager.deleteOffsets``):

* Per partition first: a topic that does not exist, or a partition it does
  not have, gets UNKNOWN_TOPIC_OR_PARTITION.
* Then the group, as a top-level error with no topics: an empty group id
  INVALID_GROUP_ID; an unknown group GROUP_ID_NOT_FOUND; a group with
  members whose protocol type is not "consumer" NON_EMPTY_GROUP.
* A topic the group consumes (its members' subscriptions, read from the
  consumer protocol metadata) gets GROUP_SUBSCRIBED_TO_TOPIC on every
  partition; the other partitions' offsets are deleted (NONE whether an
  offset was committed or not).

With an authorizer (Kafka's handleOffsetDeleteRequest): DELETE on the group,
else GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
answer TOPIC_AUTHORIZATION_FAILED.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.OFFSET_DELETE


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    readable = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC,
                                     [t["name"] for t in request["topics"]])
    errors: dict[tuple[str, int], int] = {}
    valid: list[tuple[str, list[int]]] = []
    for t in request["topics"]:
        topic = ctx.metadata_cache.topic(t["name"])
        indexes = [p["partition_index"] for p in t["partitions"]]
        if t["name"] not in readable:
            errors.update({(t["name"], i): ErrorCode.TOPIC_AUTHORIZATION_FAILED
                           for i in indexes})
            continue
        known = [] if topic is None else [i for i in indexes if 0 <= i < topic.num_partitions]
        errors.update({(t["name"], i): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                       for i in indexes if i not in known})
        if known:
            valid.append((t["name"], known))
    top, results = ctx.group_coordinator.delete_offsets(request["group_id"], valid)
    if top != ErrorCode.NONE:
        return error_response(request, ctx.api_version, top)
    errors.update({(name, p): e for name, partitions in results for p, e in partitions})
    return {"error_code": ErrorCode.NONE, "throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"],
             "error_code": errors[(t["name"], p["partition_index"])]}
            for p in t["partitions"]]}
        for t in request["topics"]]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "throttle_time_ms": 0, "topics": []}
