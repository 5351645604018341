"""OffsetFetch (API key 9): serves v1-v10 (v0 while playing a release before 4.0);
several groups per request from v8.

Behaviour: committed offsets, or -1 for a partition (or group) with none.
A null topic list (v2+) means every partition the group committed.
v7+ ``require_stable`` (KIP-447, sent by read_committed consumers): a
partition with an offset pending in an open transaction (TxnOffsetCommit)
answers UNSTABLE_OFFSET_COMMIT and offset -1, and the consumer retries.
v10 (KIP-848) names topics by id, in the request and the response: an id no
topic has answers UNKNOWN_TOPIC_ID for each partition asked; asked for all
committed offsets, the topics are answered with their ids (a committed topic
that no longer exists has none and is left out).

v0 (offsets in ZooKeeper; Kafka 4.0 removed it, KIP-896) is served only while
playing a release before 4.0 (``as.version``; ``legacy_low``), as that
release's ZooKeeper broker served it (KafkaApis.handleOffsetFetchRequestFromZookeeper):
it reads only what OffsetCommit v0 wrote
(:mod:`kafka_net.server.group.zookeeper_offsets`), never the group
coordinator's offsets.  A partition with an offset there answers it with
metadata ""; an unknown partition, or one with no v0 commit, answers offset
-1 and UNKNOWN_TOPIC_OR_PARTITION (not -1 and no error as v1+ do).

With an authorizer (Kafka's handleOffsetFetchRequest): DESCRIBE on the group,
else GROUP_AUTHORIZATION_FAILED; DESCRIBE on each topic named, else its
partitions answer TOPIC_AUTHORIZATION_FAILED; asked for all committed offsets,
only the topics it may describe are listed.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.OFFSET_FETCH
ZOOKEEPER_VERSION = 0   # offsets in ZooKeeper, not the group coordinator
TOPIC_ID_VERSION = 10


def handle(ctx, request: dict) -> dict:
    if ctx.api_version >= 8:
        return {"throttle_time_ms": 0, "groups": [
            _group(ctx, g, request.get("require_stable", False)) for g in request["groups"]]}
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if ctx.api_version == ZOOKEEPER_VERSION:
        return {"topics": _from_zookeeper(ctx, request["group_id"], request["topics"])}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "topics": _topics(ctx, request["group_id"], request["topics"],
                              ctx.api_version >= 7 and request.get("require_stable", False))}


def _from_zookeeper(ctx, group_id: str, topics: list[dict]) -> list[dict]:
    """v0: the offsets OffsetCommit v0 wrote, per partition asked."""
    described = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                      [t["name"] for t in topics])
    zookeeper, cache = ctx.group_coordinator.zookeeper_offsets, ctx.metadata_cache

    def partition(name: str, index: int) -> dict:
        offset, error = -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        topic = cache.topic(name)
        if name not in described:
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif topic is not None and 0 <= index < topic.num_partitions:
            found = zookeeper.get(group_id, name, index)
            if found is not None:
                offset, error = found, ErrorCode.NONE
        return {"partition_index": index, "committed_offset": offset, "metadata": "",
                "error_code": error}

    return [{"name": t["name"], "partitions": [partition(t["name"], i)
                                               for i in t["partition_indexes"]]}
            for t in topics]


def _group(ctx, g: dict, require_stable: bool) -> dict:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g["group_id"]):
        return {"group_id": g["group_id"], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "topics": []}
    if ctx.api_version >= TOPIC_ID_VERSION:
        return {"group_id": g["group_id"], "error_code": ErrorCode.NONE,
                "topics": _topics_by_id(ctx, g["group_id"], g["topics"], require_stable)}
    return {"group_id": g["group_id"], "error_code": ErrorCode.NONE,
            "topics": _topics(ctx, g["group_id"], g["topics"], require_stable)}


def _topics_by_id(ctx, group_id: str, topics: list[dict] | None,
                  require_stable: bool) -> list[dict]:
    """v10: the topics named by id; each answer carries its topic's id."""
    cache, named, unknown = ctx.metadata_cache, None, []
    if topics is not None:
        named = []
        for t in topics:
            found = cache.topic_by_id(t["topic_id"])
            if found is None:
                unknown.append(t)
            else:
                named.append({**t, "name": found.name})
    answers = []
    for answer in _topics(ctx, group_id, named, require_stable):
        found = cache.topic(answer["name"])
        if found is not None:   # all offsets: a deleted topic has no id to name it by
            answers.append({**answer, "topic_id": found.topic_id})
    return answers + [{"name": "", "topic_id": t["topic_id"], "partitions": [
        {"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1,
         "metadata": "", "error_code": ErrorCode.UNKNOWN_TOPIC_ID}
        for i in t["partition_indexes"]]} for t in unknown]


def _topics(ctx, group_id: str, topics: list[dict] | None, require_stable: bool) -> list[dict]:
    """A null topic list (v2+) asks for every committed partition."""
    refused: list[dict] = []
    if ctx.authorizer is not None and topics is not None:
        described = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                          [t["name"] for t in topics])
        refused = [t for t in topics if t["name"] not in described]
        topics = [t for t in topics if t["name"] in described]
    wanted = None if topics is None else [(t["name"], t["partition_indexes"]) for t in topics]
    # Only a read_committed consumer asks (and only then is the coordinator needed).
    pending = ctx.transaction_coordinator.pending_offsets if require_stable else None
    found = ctx.group_coordinator.fetch_offsets(group_id, wanted) if wanted != [] else []
    if ctx.authorizer is not None and topics is None:
        # All committed offsets: only those of topics the principal may describe.
        described = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                          [name for name, _ in found], log_if_denied=False)
        found = [(name, partitions) for name, partitions in found if name in described]
    return [{"name": name, "partitions": [
        _partition(index, o, pending is not None and pending.has_pending(group_id, name, index))
        for index, o in partitions]} for name, partitions in found] + [
        {"name": t["name"], "partitions": [
            {"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1,
             "metadata": "", "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
            for i in t["partition_indexes"]]} for t in refused]


def _partition(index: int, o, unstable: bool) -> dict:
    if unstable:
        return {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1,
                "metadata": "", "error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT}
    return {"partition_index": index, "committed_offset": o.offset,
            "committed_leader_epoch": o.leader_epoch, "metadata": o.metadata,
            "error_code": ErrorCode.NONE}


def error_response(request: dict, version: int, error_code: int) -> dict:
    if version < 2:  # no top-level error_code yet: Kafka puts it in every partition
        return {"topics": [{"name": t["name"], "partitions": [
            {"partition_index": i, "committed_offset": -1, "metadata": "",
             "error_code": error_code} for i in t["partition_indexes"]]}
            for t in request.get("topics") or []]}
    if version >= 8:
        return {"groups": [{"group_id": g["group_id"], "error_code": error_code, "topics": []}
                           for g in request.get("groups", [])]}
    return {"error_code": error_code, "topics": []}
