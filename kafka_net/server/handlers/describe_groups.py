"""DescribeGroups (API key 15): serves v0-v5.

Behaviour: state, protocol and members of each group; member metadata and
assignments only when Stable, as Kafka does.  An unknown group is reported
in state "Dead" with no error.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import Versions
from kafka_net.server.group.results import GroupDescription

API_KEY = ApiKey.DESCRIBE_GROUPS
VERSIONS = Versions(0, 5)

GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8))  # READ, DELETE, DESCRIBE


def handle(ctx, request: dict) -> dict:
    ops = GROUP_OPERATIONS if request.get("include_authorized_operations") else -2147483648
    return {"throttle_time_ms": 0, "groups": [
        {**_described(ctx.group_coordinator.describe_group(g)), "authorized_operations": ops}
        for g in request["groups"]]}


def _described(d: GroupDescription) -> dict:
    return {"error_code": d.error, "group_id": d.group_id, "group_state": d.state,
            "protocol_type": d.protocol_type, "protocol_data": d.protocol_data,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "member_metadata": m.metadata, "member_assignment": m.assignment}
                        for m in d.members]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"groups": [{"error_code": error_code, "group_id": g, "group_state": "",
                        "protocol_type": "", "protocol_data": "", "members": []}
                       for g in request.get("groups", [])]}
