"""Heartbeat (API key 12): serves v0-v4.

Behaviour: keeps the member alive for its session timeout.  NONE when
Stable or CompletingRebalance, REBALANCE_IN_PROGRESS while the group
prepares a rebalance (the member must rejoin), ILLEGAL_GENERATION for an old
generation, UNKNOWN_MEMBER_ID for a member the group does not know.
v3+ carries group_instance_id (KIP-345): a static member's old member id,
replaced by its restart, gets FENCED_INSTANCE_ID.

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED
(Kafka's KafkaApis).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.HEARTBEAT


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = ctx.group_coordinator.heartbeat(
        request["group_id"], request["member_id"], request["generation_id"],
        request["group_instance_id"])
    return {"throttle_time_ms": 0, "error_code": error}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code}
