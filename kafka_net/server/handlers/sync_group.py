"""SyncGroup (API key 14): serves v0-v5.

Behaviour: the leader's SyncGroup carries every member's assignment; the
followers' SyncGroups are parked until it arrives, then all are answered and
the group is Stable.  REBALANCE_IN_PROGRESS while joining, ILLEGAL_GENERATION
for another generation, UNKNOWN_MEMBER_ID for a stranger,
INCONSISTENT_GROUP_PROTOCOL when v5's protocol type/name do not match.

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED
(Kafka's KafkaApis).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.group.results import SyncRequest, SyncResult
from kafka_net.server.handlers import DEFERRED

API_KEY = ApiKey.SYNC_GROUP


def handle(ctx, request: dict):
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    result = ctx.group_coordinator.sync_group(
        sync_request(request), respond=lambda answer: ctx.complete(response_body(answer)))
    return DEFERRED if result is None else response_body(result)


def sync_request(request: dict) -> SyncRequest:
    # protocol_type/protocol_name arrive in v5 (null: not checked).
    return SyncRequest(
        group_id=request["group_id"], generation_id=request["generation_id"],
        member_id=request["member_id"], protocol_type=request.get("protocol_type"),
        protocol_name=request.get("protocol_name"),
        assignments={a["member_id"]: a["assignment"] for a in request["assignments"]},
        group_instance_id=request["group_instance_id"])


def response_body(result: SyncResult) -> dict:
    if result.error != ErrorCode.NONE:
        return _error_body(result.error)
    return {"error_code": ErrorCode.NONE, "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name, "assignment": result.assignment}


def _error_body(error_code: int) -> dict:
    return {"error_code": error_code, "protocol_type": None, "protocol_name": None,
            "assignment": b""}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return _error_body(error_code)
