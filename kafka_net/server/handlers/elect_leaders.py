"""ElectLeaders (API key 43): serves v0-v2.

Behaviour (Kafka's controller, ``ReplicationControlManager.electLeaders``): a
single node is every partition's only replica, so it is each partition's
preferred leader and its leader already.  Both election types (PREFERRED 0,
UNCLEAN 1; v0 is preferred only) therefore answer, per partition:

* a partition that exists: ELECTION_NOT_NEEDED ("Leader election not needed
  for topic partition."), and no leader epoch changes;
* an unknown topic: UNKNOWN_TOPIC_OR_PARTITION "No such topic as t"; an
  unknown partition: "No such partition as t-9".

topic_partitions null means every partition: Kafka then leaves out the
partitions that already have the desired leader, so the answer lists each
topic with no partitions.  An election type other than 0 or 1 is
INVALID_REQUEST "Unknown election type N" (top level from v1).

ACL: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED on every partition
without it).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation

API_KEY = ApiKey.ELECT_LEADERS

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    election_type = request.get("election_type", PREFERRED)
    if election_type not in (PREFERRED, UNCLEAN):
        return {**error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST),
                "error_message": f"Unknown election type {election_type}"}
    cache = ctx.metadata_cache
    if request["topic_partitions"] is None:
        # Every partition has its desired leader: each topic, none of its partitions.
        results = [{"topic": t.name, "partition_result": []}
                   for t in sorted(cache.topics(), key=lambda t: t.name)]
    else:
        results = [{"topic": t["topic"], "partition_result": [
            _elect(cache, t["topic"], index) for index in t["partitions"]]}
            for t in request["topic_partitions"]]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "replica_election_results": results}


def _elect(cache, topic: str, index: int) -> dict:
    metadata = cache.topic(topic)
    if metadata is None:
        return _result(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
    if not 0 <= index < metadata.num_partitions:
        return _result(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       f"No such partition as {topic}-{index}")
    return _result(index, ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED_MESSAGE)


def _result(index: int, error_code: int, message: str | None) -> dict:
    return {"partition_id": index, "error_code": error_code, "error_message": message}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "replica_election_results": [
        {"topic": t["topic"], "partition_result": [
            _result(index, error_code, None) for index in t["partitions"]]}
        for t in request.get("topic_partitions") or []]}
