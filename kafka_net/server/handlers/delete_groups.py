"""DeleteGroups (API key 42): serves v0-v3.

Behaviour (Kafka's ``GroupCoordinatorShard.deleteGroups``), one error code
per group id, in request order:

* an Empty group is deleted with its committed offsets (it becomes Dead and
  its id is free again); NONE;
* a group with members (PreparingRebalance, CompletingRebalance, Stable):
  NON_EMPTY_GROUP;
* an empty share group (KIP-932) is deleted with its state in
  ``__share_group_state``; one with members NON_EMPTY_GROUP;
* an unknown (or already deleted) group: GROUP_ID_NOT_FOUND.  That includes
  the empty id: Kafka 4 answers INVALID_GROUP_ID only for a null id, which
  this non-nullable field cannot carry.

v3 (KIP-1331) adds a per-group error_message, for GROUP_DELETION_FAILED when
Kafka's topology description plugin cannot delete a streams group's stored
description; kafka-net keeps those descriptions with the group itself, so a
deletion never fails that way and the message stays null.

With an authorizer: DELETE on each group, else that group answers
GROUP_AUTHORIZATION_FAILED (Kafka's handleDeleteGroupsRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.DELETE_GROUPS


def handle(ctx, request: dict) -> dict:
    names = request["groups_names"]
    allowed = ctx.filter_authorized(AclOperation.DELETE, ResourceType.GROUP, names)
    deletable = [g for g in names if g in allowed]
    errors = dict(zip(deletable, ctx.group_coordinator.delete_groups(deletable)))
    share = ctx.group_coordinator.share
    for g in deletable:   # a share group (KIP-932) is in neither classic registry
        if share is not None and errors[g] == ErrorCode.GROUP_ID_NOT_FOUND \
                and share.group(g) is not None:
            errors[g] = share.delete_group(g)
    return {"throttle_time_ms": 0, "results": [
        {"group_id": g, "error_code": errors.get(g, ErrorCode.GROUP_AUTHORIZATION_FAILED)}
        for g in names]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "results": [
        {"group_id": g, "error_code": error_code} for g in request.get("groups_names", [])]}
