"""LeaveGroup (API key 13): serves v0-v5; batched members from v3 (KIP-345).

Behaviour: each member is removed at once and the group rebalances (or
becomes Empty).  An unknown member gets UNKNOWN_MEMBER_ID: top level before
v3, per member from v3.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import Versions

API_KEY = ApiKey.LEAVE_GROUP
VERSIONS = Versions(0, 5)


def handle(ctx, request: dict) -> dict:
    return ctx.apis.group_coordinator.leave_group(request, ctx.api_version)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "members": []}
