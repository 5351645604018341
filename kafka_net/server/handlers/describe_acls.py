"""DescribeAcls (API key 29): serves v1-v3; v0 while playing a release before 4.0.

Behaviour (Kafka's ``AclApis.handleDescribeAcls``):

* DESCRIBE on the cluster is required first: CLUSTER_AUTHORIZATION_FAILED.
* No authorizer configured (``authorizer.class.name`` empty): SECURITY_DISABLED,
  "No Authorizer is configured on the broker".
* Otherwise the ACL bindings the filter matches, grouped by resource pattern
  (null strings and the ANY codes match everything; MATCH finds every pattern
  that applies to the named resource).
* A filter with an UNKNOWN element (a code Kafka does not define) fails to
  parse in Kafka (``DescribeAclsRequest.validate``), which closes the
  connection: so does kafka-net, with one rate-limited log line.
* v0 (Kafka 4.0 removed it, KIP-896) is served only while playing a release
  before 4.0 (``as.version``; ``legacy_low``).  It has no pattern type:
  its filter is LITERAL (the field's default, as Kafka 3.x read it), so only
  LITERAL ACLs are listed (a PREFIXED one never matches, and the answer
  could not say so), as Kafka 3.x did.
"""

from __future__ import annotations

import logging

from kafka_net.log_safety import RateLimitedLog
from kafka_net.protocol.api_keys import ApiKey, api_name
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import (
    AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    PatternType, ResourcePatternFilter, ResourceType)
from kafka_net.server.handlers import CLOSE_CONNECTION

API_KEY = ApiKey.DESCRIBE_ACLS

log = logging.getLogger(__name__)
unparseable = RateLimitedLog(log)   # shared with DeleteAcls / CreateAcls
NO_AUTHORIZER = "No Authorizer is configured on the broker"


def handle(ctx, request: dict):
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return {**error_response(request, ctx.api_version,
                                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                "error_message": not_authorized(ctx)}
    acl_filter = filter_from_wire(request)
    if acl_filter is None:
        return close_for_unknown_elements(ctx, "DescribeAclsRequest")
    if ctx.authorizer is None:
        return {**error_response(request, ctx.api_version, ErrorCode.SECURITY_DISABLED),
                "error_message": NO_AUTHORIZER}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "resources": resources_of(ctx.authorizer.acls(acl_filter))}


def not_authorized(ctx) -> str:
    """Kafka's ClusterAuthorizationException message (authorizeClusterOperation)."""
    return f"Request {api_name(ctx.request.header.api_key)} is not authorized."


def filter_from_wire(f: dict) -> AclBindingFilter | None:
    """The AclBindingFilter of a wire filter, or None if an element is UNKNOWN."""
    acl_filter = AclBindingFilter(
        ResourcePatternFilter(ResourceType.from_code(f["resource_type_filter"]),
                              f["resource_name_filter"],
                              PatternType.from_code(f["pattern_type_filter"])),
        AccessControlEntryFilter(f["principal_filter"], f["host_filter"],
                                 AclOperation.from_code(f["operation"]),
                                 AclPermissionType.from_code(f["permission_type"])))
    if (acl_filter.pattern_filter.is_unknown() or acl_filter.entry_filter.is_unknown()):
        return None
    return acl_filter


def close_for_unknown_elements(ctx, what: str):
    unparseable.log(logging.INFO, ("unknown", what, ctx.request.client_address[0]),
                    "Closing connection from %s: %s contains UNKNOWN elements",
                    ctx.request.client_address[0], what)
    return CLOSE_CONNECTION


def resources_of(bindings: list[AclBinding]) -> list[dict]:
    """Bindings grouped by resource pattern (DescribeAclsResponse.aclsResources)."""
    by_pattern: dict = {}
    for pattern, entry in bindings:
        by_pattern.setdefault(pattern, []).append({
            "principal": entry.principal, "host": entry.host,
            "operation": int(entry.operation), "permission_type": int(entry.permission_type)})
    return [{"resource_type": int(p.resource_type), "resource_name": p.name,
             "pattern_type": int(p.pattern_type), "acls": acls}
            for p, acls in by_pattern.items()]


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": None,
            "resources": []}
