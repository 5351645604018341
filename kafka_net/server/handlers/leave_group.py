"""LeaveGroup (API key 13): serves v0-v5; batched members from v3 (KIP-345).

Behaviour: each member is removed at once and the group rebalances (or
becomes Empty).  An unknown member gets UNKNOWN_MEMBER_ID: top level before
v3, per member from v3.  From v3 a member may be named by its
group_instance_id alone (empty member id: an admin removing a static
member); a member id that its instance id no longer maps to gets
FENCED_INSTANCE_ID.

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED
(Kafka's KafkaApis).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.LEAVE_GROUP

BATCHED = 3   # the first version with a members array


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    version = ctx.api_version
    leaving = ([(request["member_id"], None)] if version < BATCHED else
               [(m["member_id"], m["group_instance_id"]) for m in request["members"]])
    results = ctx.group_coordinator.leave_group(request["group_id"], leaving)
    members = [{"member_id": r.member_id, "group_instance_id": r.group_instance_id,
                "error_code": r.error} for r in results]
    top = results[0].error if version < BATCHED else ErrorCode.NONE
    return {"throttle_time_ms": 0, "error_code": top, "members": members}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "members": []}
