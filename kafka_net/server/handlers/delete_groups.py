"""DeleteGroups (API key 42): serves v0-v2.

Behaviour (Kafka's ``GroupCoordinatorShard.deleteGroups``), one error code
per group id, in request order:

* an Empty group is deleted with its committed offsets (it becomes Dead and
  its id is free again); NONE;
* a group with members (PreparingRebalance, CompletingRebalance, Stable):
  NON_EMPTY_GROUP;
* an unknown (or already deleted) group: GROUP_ID_NOT_FOUND.  That includes
  the empty id: Kafka 4 answers INVALID_GROUP_ID only for a null id, which
  this non-nullable field cannot carry.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import Versions

API_KEY = ApiKey.DELETE_GROUPS
VERSIONS = Versions(0, 2)


def handle(ctx, request: dict) -> dict:
    names = request["groups_names"]
    errors = ctx.group_coordinator.delete_groups(names)
    return {"throttle_time_ms": 0, "results": [
        {"group_id": g, "error_code": e} for g, e in zip(names, errors)]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "results": [
        {"group_id": g, "error_code": error_code} for g in request.get("groups_names", [])]}
