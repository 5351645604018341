"""ACL vocabulary: Kafka's ``org.apache.kafka.common.acl`` and ``.resource`` types.

An ACL binding says *who* (principal, host) may or may not (permission type)
do *what* (operation) to *which* resources (a resource pattern).  The codes of
the enums are Kafka's wire codes (the ACL APIs carry them as INT8); a code
Kafka does not know reads as UNKNOWN, as its ``fromCode`` does.

Filters (``AclBindingFilter``) select bindings for DescribeAcls and
DeleteAcls: a ``None`` string and the ANY codes match everything, and the
MATCH pattern type matches every pattern that would apply to a resource name
(the literal name, the literal wildcard ``*`` and every prefix of it).

Bindings are named tuples: hashable (a set of them is how duplicates are
found), immutable (the authorizer shares them between threads) and cheap.
"""

from __future__ import annotations

import ipaddress
from enum import IntEnum
from typing import NamedTuple

WILDCARD_RESOURCE = "*"            # ResourcePattern.WILDCARD_RESOURCE
WILDCARD_PRINCIPAL = "User:*"      # Acl.WILDCARD_PRINCIPAL_STRING
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"     # the one CLUSTER resource's name


class _Coded(IntEnum):
    @classmethod
    def from_code(cls, code: int):
        try:
            return cls(code)
        except ValueError:
            return cls(0)   # UNKNOWN, as every one of these enums' fromCode


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


# SecurityUtils.resourceTypeName: how the audit log and messages name a type.
RESOURCE_TYPE_NAMES = {
    ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster", ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken", ResourceType.USER: "User",
}


class AuthorizationResult(IntEnum):
    ALLOWED = 0
    DENIED = 1


class ResourcePattern(NamedTuple):
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name})")


class AccessControlEntry(NamedTuple):
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


class AclBinding(NamedTuple):
    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        e = self.entry
        return (f"(pattern={self.pattern}, entry=(principal={e.principal}, host={e.host}, "
                f"operation={e.operation.name}, permissionType={e.permission_type.name}))")


class ResourcePatternFilter(NamedTuple):
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def is_unknown(self) -> bool:
        return (self.resource_type == ResourceType.UNKNOWN
                or self.pattern_type == PatternType.UNKNOWN)

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        wanted = self.pattern_type
        if wanted not in (PatternType.ANY, PatternType.MATCH) and wanted != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if wanted in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        # MATCH: every pattern that would apply to a resource called self.name.
        if pattern.pattern_type == PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return self.name.startswith(pattern.name)


class AccessControlEntryFilter(NamedTuple):
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def is_unknown(self) -> bool:
        return (self.operation == AclOperation.UNKNOWN
                or self.permission_type == AclPermissionType.UNKNOWN)

    def matches(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type == AclPermissionType.ANY
                     or self.permission_type == entry.permission_type))


class AclBindingFilter(NamedTuple):
    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and \
            self.entry_filter.matches(binding.entry)


ANY_FILTER = AclBindingFilter(
    ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY))


class Action(NamedTuple):
    """One thing to authorize (Kafka's ``Action``): an operation on one literal
    resource.  ``log_if_allowed`` / ``log_if_denied`` say whether the decision
    grants or refuses something the client asked for (logged at DEBUG / INFO),
    or only filters what it is shown (logged at TRACE)."""
    operation: AclOperation
    resource_type: ResourceType
    name: str
    resource_reference_count: int = 1
    log_if_allowed: bool = True
    log_if_denied: bool = True


def parse_principal(text: str) -> tuple[str, str]:
    """(type, name) of ``Type:name`` (Kafka's SecurityUtils.parseKafkaPrincipal).

    Raises ValueError with Kafka's message when there is no colon.
    """
    if not text:
        raise ValueError("Principal must not be empty")
    kind, sep, name = text.partition(":")
    if not sep:
        raise ValueError(f"expected a string in format principalType:principalName but "
                         f"got {text}")
    return kind, name


def host_address(address: str) -> str:
    """The client's address as Kafka's ACL hosts name it (Java's
    ``InetAddress.getHostAddress``): IPv4 as it is; IPv6 in eight groups of hex
    without leading zeros and without ``::`` (``::1`` -> ``0:0:0:0:0:0:0:1``),
    the scope kept."""
    if ":" not in address:
        return address
    base, sep, scope = address.partition("%")
    try:
        groups = ipaddress.IPv6Address(base).exploded.split(":")
    except ValueError:
        return address
    return ":".join(format(int(g, 16), "x") for g in groups) + sep + scope
