"""CreateAcls (API key 30): serves v1-v3; v0 while playing a release before 4.0.

Behaviour (Kafka's ``AclApis.handleCreateAcls`` and ``AclControlManager.createAcls``):

* ALTER on the cluster is required first: every result CLUSTER_AUTHORIZATION_FAILED.
* No authorizer configured: every result SECURITY_DISABLED, "No Authorizer is
  configured.".
* One result per creation, in order.  INVALID_REQUEST for a CLUSTER resource
  not named kafka-cluster, an empty resource name, an ANY resource type,
  pattern type (only LITERAL and PREFIXED are stored), operation or
  permission type, and a principal that is not ``Type:name``; an ACL that
  already exists succeeds without a second copy.
* The new ACLs are written to the metadata log before the answer, so they
  survive a restart.
* A creation with an UNKNOWN element fails to parse in Kafka
  (``CreateAclsRequest.validate``), which closes the connection: so does
  kafka-net.
* v0 (Kafka 4.0 removed it, KIP-896) is served only while playing a release
  before 4.0 (``as.version``; ``legacy_low``).  It has no pattern type:
  each creation is LITERAL (the field's default, as Kafka 3.x read it), so v0 creates
  LITERAL ACLs only.
"""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import (
    AccessControlEntry, AclBinding, AclOperation, AclPermissionType, PatternType,
    ResourcePattern, ResourceType)
from kafka_net.server.handlers.describe_acls import close_for_unknown_elements

API_KEY = ApiKey.CREATE_ACLS

_UNKNOWN = 0   # every ACL enum's UNKNOWN code


def handle(ctx, request: dict):
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    bindings = [_binding(c) for c in request["creations"]]
    if any(_UNKNOWN in (b.pattern.resource_type, b.pattern.pattern_type,
                        b.entry.operation, b.entry.permission_type) for b in bindings):
        return close_for_unknown_elements(ctx, "CreateAclsRequest")
    if ctx.authorizer is None:
        return _all(request, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    results = ctx.authorizer.create_acls(bindings)
    return {"throttle_time_ms": 0, "results": [
        {"error_code": r.error_code, "error_message": r.error_message} for r in results]}


def _binding(c: dict) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.from_code(c["resource_type"]), c["resource_name"],
                        PatternType.from_code(c["resource_pattern_type"])),
        AccessControlEntry(c["principal"], c["host"], AclOperation.from_code(c["operation"]),
                           AclPermissionType.from_code(c["permission_type"])))


def _all(request: dict, error_code: int, message) -> dict:
    return {"throttle_time_ms": 0, "results": [
        {"error_code": error_code, "error_message": message} for _ in request["creations"]]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return _all(request, error_code, None)
