"""OffsetCommit (API key 8): serves v2-v10; v0-v1 while playing a release before 4.0.

Behaviour: a member of the current generation commits (Stable or
PreparingRebalance); a group with no members accepts commits with generation
-1 (consumers using assign()).  REBALANCE_IN_PROGRESS while assignments are
being synced, ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID otherwise; a share
group's id GROUP_ID_NOT_FOUND (Kafka's ShareGroup.validateOffsetCommit).  Per
partition: UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE (over
``offset.metadata.max.bytes``).  v7+ carries group_instance_id: a static
member's replaced member id gets FENCED_INSTANCE_ID.  v10 (KIP-848) names
topics by id, in the request and the response: an id no topic has answers
UNKNOWN_TOPIC_ID for each of its partitions (Kafka's handleOffsetCommitRequest
resolves ids before anything else).

v0-v1 (Kafka 4.0 removed them, KIP-896) are served only while playing a
release before 4.0 (``as.version``; ``legacy_low``), as that release's
ZooKeeper broker served them (KafkaApis.handleOffsetCommitRequest, 2.8-3.9):

* v1 commits to the group coordinator as v2+ do; each partition may carry
  commit_timestamp, the commit's time (ms) from which offsets.retention.minutes
  counts (-1: the broker's now, as every later version).
* v0 commits to ZooKeeper, not to the group
  (:mod:`kafka_net.server.group.zookeeper_offsets`): no generation or member
  is checked and the metadata is not kept, only the offset; OffsetFetch v0
  alone reads it back.  Per partition: TOPIC_AUTHORIZATION_FAILED,
  UNKNOWN_TOPIC_OR_PARTITION and OFFSET_METADATA_TOO_LARGE as for v1+.  An
  empty group id names no ZooKeeper path: Kafka's write failed, and each
  partition answers UNKNOWN_SERVER_ERROR, as when kafka-net cannot write the
  file that keeps them (``log.store=disk``; a rate-limited log line).

With an authorizer (Kafka's handleOffsetCommitRequest): READ on the group,
else GROUP_AUTHORIZATION_FAILED for every partition; READ on each topic, else
its partitions answer TOPIC_AUTHORIZATION_FAILED and the others are committed.
"""

import logging

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.group.offsets import PartitionCommit

API_KEY = ApiKey.OFFSET_COMMIT
ZOOKEEPER_VERSION = 0   # offsets in ZooKeeper, not the group coordinator
TOPIC_ID_VERSION = 10

log = logging.getLogger(__name__)
_write_errors = RateLimitedLog(log)


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topics, refused, unknown = request["topics"], [], []
    if ctx.api_version >= TOPIC_ID_VERSION:
        topics, unknown = resolve_topic_ids(ctx, topics)
    if ctx.authorizer is not None:
        readable = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC,
                                         [t["name"] for t in topics])
        refused = [t for t in topics if t["name"] not in readable]
        topics = [t for t in topics if t["name"] in readable]
    commits = [PartitionCommit(t["name"], p["partition_index"], p["committed_offset"],
                               p.get("committed_leader_epoch", -1), p["committed_metadata"],
                               p.get("commit_timestamp", -1))
               for t in topics for p in t["partitions"]]
    if ctx.api_version == ZOOKEEPER_VERSION:
        errors = iter(commit_to_zookeeper(ctx, request["group_id"], commits))
    else:
        errors = iter(ctx.group_coordinator.commit_offsets(
            request["group_id"], request["member_id"], request["generation_id_or_member_epoch"],
            commits, request["group_instance_id"]) if commits else ())
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "topic_id": t.get("topic_id", ZERO_UUID), "partitions": [
            {"partition_index": p["partition_index"], "error_code": next(errors)}
            for p in t["partitions"]]} for t in topics] + error_response(
        {"topics": refused}, ctx.api_version, ErrorCode.TOPIC_AUTHORIZATION_FAILED)["topics"]
        + error_response({"topics": unknown}, ctx.api_version,
                         ErrorCode.UNKNOWN_TOPIC_ID)["topics"]}


def commit_to_zookeeper(ctx, group_id: str, commits: list[PartitionCommit]) -> list[int]:
    """v0: the offsets written to the ZooKeeper broker's consumer offsets, in one
    write; an error code per commit, in order."""
    max_bytes = ctx.config.offset_metadata_max_bytes
    errors = []
    for c in commits:
        topic = ctx.metadata_cache.topic(c.topic)
        if topic is None or not 0 <= c.partition < topic.num_partitions:
            errors.append(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif c.metadata is not None and len(c.metadata.encode()) > max_bytes:
            errors.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
        else:
            errors.append(ErrorCode.NONE)
    accepted = [(c.topic, c.partition, c.offset)
                for c, error in zip(commits, errors) if error == ErrorCode.NONE]
    if not accepted:
        return errors
    # An empty group id names no ZooKeeper path: Kafka's write failed.
    failed = not group_id
    if not failed:
        try:
            ctx.group_coordinator.zookeeper_offsets.set_or_create(group_id, accepted)
        except OSError as exc:
            _write_errors.log(logging.ERROR, "write", "Error writing OffsetCommit v0 offsets "
                              "of group %s: %s", escape(group_id), exc)
            failed = True
    if failed:
        return [ErrorCode.UNKNOWN_SERVER_ERROR if e == ErrorCode.NONE else e for e in errors]
    return errors


def resolve_topic_ids(ctx, topics: list) -> tuple[list, list]:
    """v10: (the topics whose id names one, each given its name; the unknown ones)."""
    known, unknown = [], []
    for t in topics:
        found = ctx.metadata_cache.topic_by_id(t["topic_id"])
        if found is None:
            unknown.append(t)
        else:
            known.append({**t, "name": found.name})
    return known, unknown


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"topics": [{"name": t.get("name") or "", "topic_id": t.get("topic_id", ZERO_UUID),
                        "partitions": [
        {"partition_index": p["partition_index"], "error_code": error_code}
        for p in t["partitions"]]} for t in request.get("topics", [])]}
