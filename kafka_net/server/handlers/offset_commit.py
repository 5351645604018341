"""OffsetCommit (API key 8): serves v2-v9.

Behaviour: a member of the current generation commits (Stable or
PreparingRebalance); a group with no members accepts commits with generation
-1 (consumers using assign()).  REBALANCE_IN_PROGRESS while assignments are
being synced, ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID otherwise.  Per
partition: UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE (over
``offset.metadata.max.bytes``).  v0-v1 were removed in Kafka 4.0.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import Versions

API_KEY = ApiKey.OFFSET_COMMIT
VERSIONS = Versions(2, 9)


def handle(ctx, request: dict) -> dict:
    return ctx.apis.group_coordinator.commit_offsets(request, ctx.api_version)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"topics": [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": error_code}
        for p in t["partitions"]]} for t in request.get("topics", [])]}
