"""SyncGroup (API key 14): serves v0-v5.

Behaviour: the leader's SyncGroup carries every member's assignment; the
followers' SyncGroups are parked until it arrives, then all are answered and
the group is Stable.  REBALANCE_IN_PROGRESS while joining, ILLEGAL_GENERATION
for another generation, UNKNOWN_MEMBER_ID for a stranger,
INCONSISTENT_GROUP_PROTOCOL when v5's protocol type/name do not match.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import Versions

API_KEY = ApiKey.SYNC_GROUP
VERSIONS = Versions(0, 5)


def handle(ctx, request: dict):
    return ctx.apis.group_coordinator.sync_group(ctx, request)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "assignment": b""}
