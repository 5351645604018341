"""ListGroups (API key 16): serves v0-v5.

Behaviour: every group with its protocol type; v4 adds the state and a state
filter (case-insensitive), v5 the group type ("classic", "consumer" for KIP-848 groups, or "share" for
KIP-932 share groups, whose protocol type is "share") and a type filter.

With an authorizer: every group for a principal with DESCRIBE on the
cluster, else only the groups it may DESCRIBE (Kafka's handleListGroupsRequest;
nothing is refused).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.LIST_GROUPS


def handle(ctx, request: dict) -> dict:
    states = {s.lower() for s in request.get("states_filter") or []}
    types = {t.lower() for t in request.get("types_filter") or []}
    groups = []
    # Without DESCRIBE on the cluster, only the groups the principal may describe.
    every = ctx.authorize_cluster(AclOperation.DESCRIBE, log_if_denied=False)
    for group in ctx.group_coordinator.list_groups():
        if not every and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP,
                                           group.group_id, log_if_denied=False):
            continue
        if states and group.state.lower() not in states:
            continue
        if types and group.group_type not in types:
            continue
        groups.append({"group_id": group.group_id, "protocol_type": group.protocol_type,
                       "group_state": group.state, "group_type": group.group_type})
    share = ctx.group_coordinator.share
    for group_id, state in ([] if share is None else share.list_groups()):
        if not every and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id,
                                           log_if_denied=False):
            continue
        if (states and state.lower() not in states) or (types and "share" not in types):
            continue
        groups.append({"group_id": group_id, "protocol_type": "share", "group_state": state,
                       "group_type": "share"})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": groups}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "groups": []}
