"""JoinGroup (API key 11): serves v0-v9.

Behaviour (details in :mod:`kafka_net.server.group.coordinator`):

* v4+: a first join without a member id is answered MEMBER_ID_REQUIRED with
  the id to use (KIP-394); older versions get an id and join at once.
* The request is parked until the rebalance completes (every member rejoined,
  or the rebalance timeout), never holding a handler thread.
* Errors in the body: INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT (outside
  ``group.min/max.session.timeout.ms``), INCONSISTENT_GROUP_PROTOCOL (also
  for a consumer, streams or share group's id: classic members are not
  admitted into a KIP-848 group here, Kafka's online upgrade is not built),
  UNKNOWN_MEMBER_ID, GROUP_MAX_SIZE_REACHED.
* v1: rebalance_timeout_ms; v5: group_instance_id (static membership,
  KIP-345: a static member joins without MEMBER_ID_REQUIRED, and a restarted
  one takes its old place without a rebalance, see
  :mod:`kafka_net.server.group.static_membership`; FENCED_INSTANCE_ID for a
  replaced member id); v7: protocol_type in the response; v8: reason;
  v9: skip_assignment (true only for a restarted static leader).

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED
(Kafka's KafkaApis).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.group.results import JoinRequest, JoinResult
from kafka_net.server.handlers import DEFERRED

API_KEY = ApiKey.JOIN_GROUP


def handle(ctx, request: dict):
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    version = ctx.api_version
    result = ctx.group_coordinator.join_group(
        join_request(ctx, request),
        respond=lambda answer: ctx.complete(response_body(answer, version)))
    return DEFERRED if result is None else response_body(result, version)


def join_request(ctx, request: dict) -> JoinRequest:
    return JoinRequest(
        group_id=request["group_id"], member_id=request["member_id"],
        group_instance_id=request["group_instance_id"],
        session_timeout_ms=request["session_timeout_ms"],
        rebalance_timeout_ms=request["rebalance_timeout_ms"],
        protocol_type=request["protocol_type"],
        protocols=[(p["name"], p["metadata"]) for p in request["protocols"]],
        client_id=ctx.request.header.client_id,
        client_host=f"/{ctx.request.client_address[0]}",
        require_known_member_id=version_requires_member_id(ctx.api_version),
        supports_skip_assignment=ctx.api_version >= 9)


def version_requires_member_id(version: int) -> bool:
    return version >= 4   # KIP-394


def response_body(result: JoinResult, version: int) -> dict:
    if result.error != ErrorCode.NONE:
        return _error_body(result.error, result.member_id, version)
    return {
        "error_code": ErrorCode.NONE, "generation_id": result.generation_id,
        "protocol_type": result.protocol_type, "protocol_name": result.protocol_name,
        "leader": result.leader_id, "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "metadata": m.metadata} for m in result.members],
    }


def _error_body(error_code: int, member_id: str, version: int) -> dict:
    # protocol_name became nullable in v7; before that Kafka sends "" (its
    # UNKNOWN_PROTOCOL_NAME) where there is no protocol.
    return {"error_code": error_code, "generation_id": -1, "protocol_type": None,
            "protocol_name": None if version >= 7 else "", "leader": "",
            "member_id": member_id, "members": []}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return _error_body(error_code, request.get("member_id", ""), version)
