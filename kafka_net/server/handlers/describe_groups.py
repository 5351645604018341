"""DescribeGroups (API key 15): serves v0-v6.

Behaviour: state, protocol and members of each group; member metadata and
assignments only when Stable, as Kafka does.  An unknown group is reported
in state "Dead": with no error before v6; from v6 (KIP-1043) with
GROUP_ID_NOT_FOUND and the message "Group <id> not found." ("Group <id> is
not a classic group." for a consumer, streams or share group, which this API
cannot describe), as Kafka's GroupMetadataManager answers.

With an authorizer: DESCRIBE on each group, else that group answers
GROUP_AUTHORIZATION_FAILED; the authorized operations asked for are the
principal's (Kafka's handleDescribeGroupsRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.group.results import GroupDescription

API_KEY = ApiKey.DESCRIBE_GROUPS
GROUP_ID_NOT_FOUND_VERSION = 6

GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8))  # READ, DELETE, DESCRIBE


def described_groups(ctx, request: dict, describe) -> list[dict]:
    """The groups of a ConsumerGroupDescribe, ShareGroupDescribe or
    StreamsGroupDescribe request, each ``describe(group_id)``, with the principal's
    operations on it where the request asks for them and it was described."""
    groups = []
    for group_id in request["group_ids"]:
        described = describe(group_id)
        if request["include_authorized_operations"] and described["error_code"] == 0:
            described["authorized_operations"] = ctx.authorized_operations(
                ResourceType.GROUP, group_id, GROUP_OPERATIONS)
        groups.append(described)
    return groups


def handle(ctx, request: dict) -> dict:
    wanted = request.get("include_authorized_operations")
    groups = [_describe(ctx, g, wanted) for g in request["groups"]]
    if ctx.api_version >= GROUP_ID_NOT_FOUND_VERSION:
        groups = _not_found(ctx, groups)
    return {"throttle_time_ms": 0, "groups": groups}


def _not_found(ctx, groups: list[dict]) -> list[dict]:
    """v6: a group described as Dead without an error does not exist as a classic group."""
    missing = [g for g in groups if g["error_code"] == ErrorCode.NONE
               and g["group_state"] == "Dead"]
    if not missing:
        return groups
    for g in missing:
        kind = ctx.group_coordinator.group_type(g["group_id"])
        what = "not found" if kind in (None, "classic") else "is not a classic group"
        g.update(error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                 error_message=f"Group {g['group_id']} {what}.")
    return groups


def _describe(ctx, group_id: str, with_operations: bool) -> dict:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return {**_refused(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED),
                "authorized_operations": -2147483648}
    ops = (ctx.authorized_operations(ResourceType.GROUP, group_id, GROUP_OPERATIONS)
           if with_operations else -2147483648)
    return {**_described(ctx.group_coordinator.describe_group(group_id)),
            "authorized_operations": ops}


def _refused(group_id: str, error_code: int) -> dict:
    return {"error_code": error_code, "group_id": group_id, "group_state": "",
            "protocol_type": "", "protocol_data": "", "members": []}


def _described(d: GroupDescription) -> dict:
    return {"error_code": d.error, "group_id": d.group_id, "group_state": d.state,
            "protocol_type": d.protocol_type, "protocol_data": d.protocol_data,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "member_metadata": m.metadata, "member_assignment": m.assignment}
                        for m in d.members]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"groups": [_refused(g, error_code) for g in request.get("groups", [])]}
