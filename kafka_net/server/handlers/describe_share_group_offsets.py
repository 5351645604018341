"""DescribeShareGroupOffsets (API key 90): serves v0-v1 (KIP-932 share groups).

Behaviour: for each group, each partition's share-partition start offset (SPSO)
and leader epoch, from the share-partition in memory else its state in
``__share_group_state`` (Kafka's ReadShareGroupStateSummary); a partition
without state answers start offset -1. A null ``topics`` lists every partition
the group has state for. v1 (KIP-1226) adds ``lag``: the high watermark minus
the SPSO minus the records after it already acknowledged or archived (-1
without state). An unknown group, or a classic or consumer group, answers
GROUP_ID_NOT_FOUND for the group (an empty id INVALID_GROUP_ID); an unknown
topic UNKNOWN_TOPIC_OR_PARTITION in its partitions.

With an authorizer: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED;
DESCRIBE on each topic named, else TOPIC_AUTHORIZATION_FAILED in its partitions
(topics the principal may not describe are left out of a null ``topics``
answer).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS


def handle(ctx, request: dict) -> dict:
    share = ctx.share_coordinator
    if share is None:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    return {"throttle_time_ms": 0,
            "groups": [_group(ctx, share, g) for g in request["groups"]]}


def _group(ctx, share, g: dict) -> dict:
    group_id = g["group_id"]
    if not group_id:
        return _failed(group_id, ErrorCode.INVALID_GROUP_ID)
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return _failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, message, _ = share.describe(group_id)
    if error:
        return _failed(group_id, error, message)
    offsets = share.start_offsets(group_id)
    complete = {(sp.topic_id, sp.partition): sp.delivery_complete_count()
                for sp in share.partitions.share_partitions(group_id)}
    summaries = share.persister.states_of(group_id)
    cache = ctx.metadata_cache
    wanted = g["topics"]
    if wanted is None:
        by_topic: dict = {}
        for topic_id, partition in sorted(offsets, key=lambda tp: (str(tp[0]), tp[1])):
            meta = cache.topic_by_id(topic_id)
            if meta is not None:
                by_topic.setdefault(meta.name, []).append(partition)
        allowed = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, by_topic,
                                        log_if_denied=False)
        wanted = [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()
                  if t in allowed]
    allowed = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                    [t["topic_name"] for t in wanted])
    topics = []
    for t in wanted:
        meta = cache.topic(t["topic_name"])
        parts = []
        for p in t["partitions"]:
            entry = {"partition_index": p, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                     "error_code": ErrorCode.NONE}
            if t["topic_name"] not in allowed:
                entry["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif meta is None or not 0 <= p < meta.num_partitions:
                entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif (meta.topic_id, p) in offsets:
                start, epoch = offsets[(meta.topic_id, p)]
                done = complete.get((meta.topic_id, p))
                if done is None:
                    summary = summaries.get((meta.topic_id, p))
                    done = max(summary.delivery_complete_count, 0) if summary else 0
                high = ctx.replica_manager.last_stable_offset(t["topic_name"], p)
                entry.update(start_offset=start, leader_epoch=epoch,
                             lag=max(high - start - done, 0))
            parts.append(entry)
        topics.append({"topic_name": t["topic_name"],
                       "topic_id": ZERO_UUID if meta is None else meta.topic_id,
                       "partitions": parts})
    return {"group_id": group_id, "topics": topics, "error_code": ErrorCode.NONE}


def _failed(group_id: str, error_code: int, message: str | None = None) -> dict:
    return {"group_id": group_id, "topics": [], "error_code": error_code,
            "error_message": message}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"groups": [_failed(g["group_id"], error_code) for g in request.get("groups") or []]}
