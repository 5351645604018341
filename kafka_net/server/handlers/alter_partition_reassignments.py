"""AlterPartitionReassignments (API key 45): serves v0-v1.

Behaviour (Kafka's controller, ``ReplicationControlManager.alterPartitionReassignments``
and ``validateManualPartitionAssignment``), per partition:

* unknown topic: UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named t.";
  unknown partition: "Unable to find partition t:9.";
* replicas null cancels a reassignment: none is ever in progress on one
  node, so NO_REASSIGNMENT_IN_PROGRESS "No partition reassignment is in
  progress.";
* v1 adds allow_replication_factor_change (KIP-860), echoed in the response.
  When false Kafka refuses a target that changes the partition's replica
  count with INVALID_REPLICATION_FACTOR, but only after the target passed
  ``validateManualPartitionAssignment``; on one node every target of another
  length than [this node] already fails that (empty, an unregistered broker,
  or this node twice), so the flag never changes an answer here;
* replicas == [this node]: the assignment the partition has; success, and
  nothing changes (Kafka writes no record for it);
* otherwise INVALID_REPLICA_ASSIGNMENT with Kafka's message: an empty list,
  a broker that is not registered (any id but this node's), or a broker
  named twice.

The top-level error is NONE unless the request is refused whole.

ACL: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top level and
on every partition without it).
"""

import logging

from kafka_net.log_safety import escape
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS

NO_REASSIGNMENT_MESSAGE = "No partition reassignment is in progress."
log = logging.getLogger(__name__)


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    cache = ctx.metadata_cache
    allow_rf_change = request["allow_replication_factor_change"]  # True at v0
    responses, done, total = [], 0, 0
    for t in request["topics"]:
        partitions = []
        for p in t["partitions"]:
            error, message = _alter(cache, t["name"], p["partition_index"], p["replicas"])
            partitions.append({"partition_index": p["partition_index"], "error_code": error,
                               "error_message": message})
            done += error == ErrorCode.NONE
            total += 1
        responses.append({"name": t["name"], "partitions": partitions})
    log.info("Successfully altered %d out of %d partition reassignment(s) (from %s).",
             done, total, escape(ctx.request.header.client_id or "-"))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "allow_replication_factor_change": allow_rf_change, "responses": responses}


def _alter(cache, topic: str, index: int, replicas: list | None) -> tuple[int, str | None]:
    metadata = cache.topic(topic)
    if metadata is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    if not 0 <= index < metadata.num_partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}."
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT_MESSAGE
    problem = assignment_error(replicas, cache.node_id)
    if problem is not None:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    return ErrorCode.NONE, None


def assignment_error(replicas: list[int], node_id: int) -> str | None:
    """Kafka's ``validateManualPartitionAssignment`` with one registered broker."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker in sorted(replicas):
        if broker != node_id:
            return (f"The manual partition assignment includes broker {broker}, but no such "
                    "broker is registered.")
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    return None


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": None,
            "allow_replication_factor_change": request.get(
                "allow_replication_factor_change", True),
            "responses": [
                {"name": t["name"], "partitions": [
                    {"partition_index": p["partition_index"], "error_code": error_code,
                     "error_message": None} for p in t["partitions"]]}
                for t in request.get("topics", [])]}
