"""OffsetFetch (API key 9): serves v1-v9; several groups per request from v8.

Behaviour: committed offsets, or -1 for a partition (or group) with none.
A null topic list (v2+) means every partition the group committed.
v7+ ``require_stable`` (KIP-447, sent by read_committed consumers): a
partition with an offset pending in an open transaction (TxnOffsetCommit)
answers UNSTABLE_OFFSET_COMMIT and offset -1, and the consumer retries.
v0 (offsets in ZooKeeper) was removed in Kafka 4.0.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import Versions

API_KEY = ApiKey.OFFSET_FETCH
VERSIONS = Versions(1, 9)


def handle(ctx, request: dict) -> dict:
    if ctx.api_version >= 8:
        return {"throttle_time_ms": 0, "groups": [
            {"group_id": g["group_id"], "error_code": ErrorCode.NONE,
             "topics": _topics(ctx, g["group_id"], g["topics"],
                              request.get("require_stable", False))}
            for g in request["groups"]]}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "topics": _topics(ctx, request["group_id"], request["topics"],
                              ctx.api_version >= 7 and request.get("require_stable", False))}


def _topics(ctx, group_id: str, topics: list[dict] | None, require_stable: bool) -> list[dict]:
    """A null topic list (v2+) asks for every committed partition."""
    wanted = None if topics is None else [(t["name"], t["partition_indexes"]) for t in topics]
    # Only a read_committed consumer asks (and only then is the coordinator needed).
    pending = ctx.transaction_coordinator.pending_offsets if require_stable else None
    return [{"name": name, "partitions": [
        _partition(index, o, pending is not None and pending.has_pending(group_id, name, index))
        for index, o in partitions]}
        for name, partitions in ctx.group_coordinator.fetch_offsets(group_id, wanted)]


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
