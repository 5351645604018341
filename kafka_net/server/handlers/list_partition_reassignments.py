"""ListPartitionReassignments (API key 46): serves v0-v0.

Behaviour (Kafka's controller, ``ReplicationControlManager.listPartitionReassignments``):
the partitions with a reassignment in progress, all of them (topics null) or
among those named.  On one node no reassignment is ever in progress
(AlterPartitionReassignments to this node alone completes at once), so the
answer is always an empty topic list with error NONE; unknown topics are left
out, as Kafka leaves them out.

ACL: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top level
without it).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "topics": []}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": None,
            "topics": []}
