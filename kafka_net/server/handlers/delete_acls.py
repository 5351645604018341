"""DeleteAcls (API key 31): serves v1-v3; v0 while playing a release before 4.0.

Behaviour (Kafka's ``AclApis.handleDeleteAcls`` and ``AclControlManager.deleteAcls``):

* ALTER on the cluster is required first: every filter result
  CLUSTER_AUTHORIZATION_FAILED.
* No authorizer configured: every filter result SECURITY_DISABLED, "No
  Authorizer is configured.".
* One result per filter, in order, listing the bindings it matched (and
  removed); an ACL two filters match is removed once and listed by both.
  The removals are written to the metadata log before the answer.
* A filter with an UNKNOWN element fails to parse in Kafka
  (``DeleteAclsRequest.validate``), which closes the connection: so does
  kafka-net.
* v0 (Kafka 4.0 removed it, KIP-896) is served only while playing a release
  before 4.0 (``as.version``; ``legacy_low``).  It has no pattern type:
  each filter is LITERAL (the field's default, as Kafka 3.x read it), so only
  LITERAL ACLs are matched and removed: a PREFIXED ACL survives a v0
  delete-everything filter (and is not listed), as Kafka 3.x did.
"""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation
from kafka_net.server.handlers.describe_acls import close_for_unknown_elements, filter_from_wire

API_KEY = ApiKey.DELETE_ACLS


def handle(ctx, request: dict):
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    filters = [filter_from_wire(f) for f in request["filters"]]
    if None in filters:
        return close_for_unknown_elements(ctx, "DeleteAclsRequest")
    if ctx.authorizer is None:
        return _all(request, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": r.error_code, "error_message": r.error_message,
         "matching_acls": [_matching(binding) for binding in r.deleted]}
        for r in ctx.authorizer.delete_acls(filters)]}


def _matching(binding) -> dict:
    pattern, entry = binding
    return {"error_code": ErrorCode.NONE, "error_message": None,
            "resource_type": int(pattern.resource_type), "resource_name": pattern.name,
            "pattern_type": int(pattern.pattern_type), "principal": entry.principal,
            "host": entry.host, "operation": int(entry.operation),
            "permission_type": int(entry.permission_type)}


def _all(request: dict, error_code: int, message) -> dict:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": error_code, "error_message": message, "matching_acls": []}
        for _ in request["filters"]]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return _all(request, error_code, None)
