"""OffsetForLeaderEpoch (API key 23): serves v2-v4; v0-v1 while playing a release before 4.0.

Behaviour (Kafka's ``KafkaApis.handleOffsetForLeaderEpochRequest`` and
``Partition.lastOffsetForLeaderEpoch``): for each partition, the end offset
of the requested leader epoch, from the log's leader epoch cache
(:class:`~kafka_net.server.storage.leader_epoch.LeaderEpochCache`):

* the partition's current epoch: the log end offset;
* an older epoch the log knows: the largest known epoch at or below it, and
  the start offset of the next one;
* an epoch older than every entry: itself, and the first entry's start;
* an undefined (-1) or unknown newer epoch: leader_epoch -1, end_offset -1
  (UNDEFINED_EPOCH_OFFSET) with no error.

current_leader_epoch (v2+, -1 = not given) is checked first:
FENCED_LEADER_EPOCH when older than the partition's, UNKNOWN_LEADER_EPOCH
when newer.  An unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION.
Consumers validate their positions with this after a leader change, a seek or
an assignment (KIP-320; librdkafka and the Java consumer send v3/v4 with
replica_id -1).  A single node leads everything, so replica_id (a follower's
id) changes nothing.

v0-v1 (Kafka 4.0 removed them, KIP-896) are served only while playing a
release before 4.0 (``as.version``; ``legacy_low``), answered as Kafka 3.x's
broker answered them: the same lookup with no current_leader_epoch to fence
(it defaults to -1) and replica_id -2; v0's answer has no leader_epoch (the
end offset alone), v1's has it, and neither has throttle_time_ms.

ACL: CLUSTER_ACTION on the cluster, else DESCRIBE on each topic
(TOPIC_AUTHORIZATION_FAILED per partition without it).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH


def handle(ctx, request: dict) -> dict:
    rm = ctx.replica_manager
    described = None   # every topic
    if ctx.authorizer is not None and not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION,
                                                                log_if_denied=False):
        described = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                          [t["topic"] for t in request["topics"]])
    return {"throttle_time_ms": 0, "topics": [
        {"topic": t["topic"], "partitions": [
            _end_offset(rm, t["topic"], p) if described is None or t["topic"] in described
            else _refused(p) for p in t["partitions"]]}
        for t in request["topics"]]}


def _refused(p: dict) -> dict:
    return {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "partition": p["partition"],
            "leader_epoch": -1, "end_offset": -1}


def _end_offset(rm, topic: str, p: dict) -> dict:
    error, epoch, end_offset = rm.last_offset_for_leader_epoch(
        topic, p["partition"], p["current_leader_epoch"], p["leader_epoch"])
    return {"error_code": error, "partition": p["partition"], "leader_epoch": epoch,
            "end_offset": end_offset}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"topic": t["topic"], "partitions": [
            {"error_code": error_code, "partition": p["partition"], "leader_epoch": -1,
             "end_offset": -1} for p in t["partitions"]]}
        for t in request.get("topics", [])]}
