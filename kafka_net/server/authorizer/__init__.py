"""Authorization: Kafka's ACL authorizer and what the APIs ask of it.

``authorizer.class.name`` picks the authorizer, as in Kafka:

* empty (Kafka's default): none.  Every request is allowed, and the ACL APIs
  answer SECURITY_DISABLED;
* ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``: the KRaft ACL
  authorizer (:mod:`.standard_authorizer`), with ``super.users`` and
  ``allow.everyone.if.no.acl.found``;
* ``kafka.security.authorizer.AclAuthorizer`` (ZooKeeper's, removed in Kafka
  4.0) and any other class: refused at startup with a message saying so
  (kafka-net cannot load Java classes; the check is
  :func:`kafka_net.config.values.authorizer_class`).
"""

from __future__ import annotations

from kafka_net.config.values import STANDARD_AUTHORIZER
from kafka_net.server.authorizer.acl import (
    ANY_FILTER, CLUSTER_NAME, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AccessControlEntry,
    AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    Action, AuthorizationResult, PatternType, ResourcePattern, ResourcePatternFilter,
    ResourceType)
from kafka_net.server.authorizer.standard_authorizer import (
    StandardAuthorizer, StandardAuthorizerData)


__all__ = [
    "ANY_FILTER", "CLUSTER_NAME", "WILDCARD_PRINCIPAL", "WILDCARD_RESOURCE",
    "AccessControlEntry", "AccessControlEntryFilter", "AclBinding", "AclBindingFilter",
    "AclOperation", "AclPermissionType", "Action", "AuthorizationResult", "PatternType",
    "ResourcePattern", "ResourcePatternFilter", "ResourceType", "StandardAuthorizer",
    "StandardAuthorizerData", "STANDARD_AUTHORIZER", "new_authorizer",
]


def new_authorizer(config, metadata_log=None) -> StandardAuthorizer | None:
    """The authorizer ``config`` asks for, or None (no authorization)."""
    if config.authorizer_class_name != STANDARD_AUTHORIZER:
        return None
    return StandardAuthorizer(config.super_users, config.allow_everyone_if_no_acl_found,
                              metadata_log)
