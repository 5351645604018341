"""JoinGroup (API key 11): serves v0-v9.

Behaviour (details in :mod:`kafka_net.server.group_coordinator`):

* v4+: a first join without a member id is answered MEMBER_ID_REQUIRED with
  the id to use (KIP-394); older versions get an id and join at once.
* The request is parked until the rebalance completes (every member rejoined,
  or the rebalance timeout), never holding a handler thread.
* Errors in the body: INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT (outside
  ``group.min/max.session.timeout.ms``), INCONSISTENT_GROUP_PROTOCOL,
  UNKNOWN_MEMBER_ID, GROUP_MAX_SIZE_REACHED.
* v1: rebalance_timeout_ms; v5: group_instance_id (static membership is
  accepted but treated as dynamic); v7: protocol_type in the response;
  v8: reason; v9: skip_assignment (always false).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import Versions

API_KEY = ApiKey.JOIN_GROUP
VERSIONS = Versions(0, 9)


def handle(ctx, request: dict):
    return ctx.apis.group_coordinator.join_group(ctx, request)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "generation_id": -1, "leader": "",
            "protocol_name": None if version >= 7 else "",
            "member_id": request.get("member_id", ""), "members": []}
