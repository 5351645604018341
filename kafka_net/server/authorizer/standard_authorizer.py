"""StandardAuthorizer: Kafka's KRaft ACL authorizer on one node.

Switched on as in Kafka, with
``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``
(:func:`kafka_net.server.authorizer.new_authorizer`).  The decision for one
action (an operation on one literal resource, by a principal from a host):

1. a principal listed in ``super.users`` may do anything;
2. otherwise the ACLs whose pattern covers the resource are looked at: the
   LITERAL ACLs on its name, the PREFIXED ACLs on any prefix of its name, and
   the LITERAL ACLs on ``*``.  An ACL applies when its principal is the
   caller's or ``User:*``, its host is the caller's address or ``*``, and its
   operation is the one asked for, or ALL, or (ALLOW ACLs only) one that
   implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS
   implies DESCRIBE_CONFIGS;
3. an applying DENY wins; else an applying ALLOW allows;
4. with neither: if no ACL at all covers the resource (whoever it names), the
   answer is ``allow.everyone.if.no.acl.found`` (false: denied); if some do,
   denied.

The ACLs are indexed in a :class:`StandardAuthorizerData`, replaced whole
after each change (copy-on-write, as Kafka's
``StandardAuthorizerData.copyWithNewAcls``): handler threads read whichever
index is current without a lock.  Every change is committed to the broker's
:class:`~kafka_net.server.metadata_log.MetadataLog` as
AccessControlEntryRecord / RemoveAccessControlEntryRecord records -- written
durably, then applied through the same replay handlers a restart runs -- before
it is answered; the ACLs are in metadata snapshots too.

Decisions are written to the ``kafka.authorizer.logger`` logger as Kafka's
audit lines ("Principal = User:alice is Denied operation = WRITE from host =
... on resource = Topic:LITERAL:t for request = Produce with resourceRefCount
= 1 based on rule DefaultDeny"): a denial the client asked for at INFO, an
allowed request at DEBUG, filtering decisions at TRACE; each kind of line is
rate-limited, so a client retrying a refused request cannot flood the log.
"""

from __future__ import annotations

import base64
import logging
import uuid
from typing import Iterable, NamedTuple

from kafka_net.log_safety import TRACE, RateLimitedLog, escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer.acl import (
    RESOURCE_TYPE_NAMES, WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE,
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, Action,
    AuthorizationResult, PatternType, ResourcePattern, ResourceType, parse_principal)
from kafka_net.server.metadata_log import MetadataLog

audit_log = logging.getLogger("kafka.authorizer.logger")
log = logging.getLogger(__name__)

ALLOWED = AuthorizationResult.ALLOWED
DENIED = AuthorizationResult.DENIED
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY

_IMPLIES_DESCRIBE = frozenset((AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((AclOperation.DESCRIBE_CONFIGS,
                                       AclOperation.ALTER_CONFIGS))

ACL_RECORD = "AccessControlEntryRecord"
REMOVE_ACL_RECORD = "RemoveAccessControlEntryRecord"


class StandardAcl(NamedTuple):
    """An ACL as stored: its binding and the id its records carry."""
    id: str
    binding: AclBinding


def _entry_applies(entry: AccessControlEntry, operation: AclOperation,
                   principal: str, host: str) -> AuthorizationResult | None:
    """This entry's verdict on ``operation`` by ``principal`` from ``host``, or
    None when it does not apply (Kafka's StandardAuthorizerData.findResult)."""
    if entry.principal != principal and entry.principal != WILDCARD_PRINCIPAL:
        return None
    if entry.host != WILDCARD_HOST and entry.host != host:
        return None
    acl_op = entry.operation
    if acl_op != AclOperation.ALL and acl_op != operation:
        # Implication only widens what is allowed: a DENY READ does not deny DESCRIBE.
        if entry.permission_type != ALLOW:
            return None
        if operation == AclOperation.DESCRIBE:
            if acl_op not in _IMPLIES_DESCRIBE:
                return None
        elif operation == AclOperation.DESCRIBE_CONFIGS:
            if acl_op not in _IMPLIES_DESCRIBE_CONFIGS:
                return None
        else:
            return None
    return ALLOWED if entry.permission_type == ALLOW else DENIED


class StandardAuthorizerData:
    """One immutable snapshot of the ACLs, indexed for :meth:`find_rule`.

    ``_literal[(type, name)]`` and ``_prefixed[(type, prefix)]`` hold the
    entries of the ACLs on that exact pattern; ``_prefix_lengths[type]`` the
    lengths of the prefixes in use, so a check looks up only those (not every
    prefix of a 249-character topic name).
    """

    def __init__(self, acls: dict[str, AclBinding]) -> None:
        self.acls_by_id = acls
        literal: dict[tuple, list] = {}
        prefixed: dict[tuple, list] = {}
        lengths: dict[ResourceType, set[int]] = {}
        for binding in acls.values():
            p = binding.pattern
            key = (p.resource_type, p.name)
            if p.pattern_type == PatternType.LITERAL:
                literal.setdefault(key, []).append(binding.entry)
            else:
                prefixed.setdefault(key, []).append(binding.entry)
                lengths.setdefault(p.resource_type, set()).add(len(p.name))
        self._literal = {k: tuple(v) for k, v in literal.items()}
        self._prefixed = {k: tuple(v) for k, v in prefixed.items()}
        self._prefix_lengths = {k: tuple(sorted(v)) for k, v in lengths.items()}
        self.bindings = frozenset(acls.values())

    def _sections(self, resource_type: ResourceType, name: str):
        """The entries of every pattern covering (``resource_type``, ``name``):
        the literal name, its prefixes in use, then the literal wildcard."""
        found = self._literal.get((resource_type, name))
        if found:
            yield found, PatternType.LITERAL, name
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            prefix = name[:length]
            found = self._prefixed.get((resource_type, prefix))
            if found:
                yield found, PatternType.PREFIXED, prefix
        if name != WILDCARD_RESOURCE:
            found = self._literal.get((resource_type, WILDCARD_RESOURCE))
            if found:
                yield found, PatternType.LITERAL, WILDCARD_RESOURCE

    def find_rule(self, principal: str, host: str, action: Action
                  ) -> tuple[AuthorizationResult, object]:
        """(result, the rule that decided it): a matching ACL as (pattern type,
        pattern name, entry), or None when no ACL applied."""
        allow = None
        has_resource_acls = False
        for entries, pattern_type, pattern_name in self._sections(action.resource_type,
                                                                  action.name):
            has_resource_acls = True
            for entry in entries:
                result = _entry_applies(entry, action.operation, principal, host)
                if result is DENIED:
                    return DENIED, (pattern_type, pattern_name, entry)
                if result is ALLOWED:
                    allow = (pattern_type, pattern_name, entry)
        if allow is not None:
            return ALLOWED, allow
        return (None if not has_resource_acls else DENIED), None


class AclCreateResult(NamedTuple):
    error_code: int
    error_message: str | None


class AclDeleteResult(NamedTuple):
    error_code: int
    error_message: str | None
    deleted: tuple[AclBinding, ...]


class StandardAuthorizer:
    """Kafka's StandardAuthorizer: ``super.users``, ``allow.everyone.if.no.acl.found``
    and the ACLs of the metadata log.

    ``metadata_log``: the broker's MetadataLog.  The authorizer registers its
    replay handlers on it when built; whoever owns the log calls
    ``metadata_log.replay()`` once every owner has registered.
    """

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found=False,
                 metadata_log=None) -> None:
        self.super_users = frozenset(u.strip() for u in super_users if u.strip())
        self.no_acl_result = ALLOWED if allow_everyone_if_no_acl_found else DENIED
        self._audit = RateLimitedLog(audit_log)
        # Without the broker's log (unit tests), an in-memory one of its own.
        self.metadata_log = metadata_log = metadata_log or MetadataLog()
        # The ACLs by id, changed only by the replay handlers (at commit and at
        # replay, under the log's lock); _data is the index built from them for
        # the handler threads, rebuilt on first use after a change (None).
        self._acls: dict[str, AclBinding] = {}
        self._data: StandardAuthorizerData | None = StandardAuthorizerData({})
        metadata_log.register(ACL_RECORD, self._replay_acl)
        metadata_log.register(REMOVE_ACL_RECORD, self._replay_remove)
        metadata_log.register_snapshot(self._snapshot, (ACL_RECORD, REMOVE_ACL_RECORD))

    def _current(self) -> StandardAuthorizerData:
        data = self._data
        if data is None:
            with self.metadata_log.lock:
                data = self._data
                if data is None:
                    data = self._data = StandardAuthorizerData(dict(self._acls))
        return data

    # -- deciding ------------------------------------------------------------------------

    def authorize(self, principal: str, host: str, actions: list[Action],
                  request_name: str = "") -> list[AuthorizationResult]:
        return [self.authorize_action(principal, host, a, request_name) for a in actions]

    def authorize_action(self, principal: str, host: str, action: Action,
                         request_name: str = "") -> AuthorizationResult:
        if principal in self.super_users:
            result, rule = ALLOWED, "SuperUser"
        else:
            result, rule = self._current().find_rule(principal, host, action)
            if result is None:
                result, rule = self.no_acl_result, (
                    "DefaultAllow" if self.no_acl_result is ALLOWED else "DefaultDeny")
            elif rule is None:
                rule = "DefaultDeny"
        self._audit_decision(principal, host, action, result, rule, request_name)
        return result

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType,
                                   request_name: str = "") -> AuthorizationResult:
        """May ``principal`` do ``operation`` on at least one resource of the type
        (Kafka's Authorizer.authorizeByResourceType: an ALLOW on some name or
        prefix that no DENY covers)?"""
        probe = Action(operation, resource_type, "hardcode", 0, True, False)
        if self.authorize_action(principal, host, probe, request_name) is ALLOWED:
            return ALLOWED   # a super user, or allow.everyone with no ACL
        deny = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        for binding in self._current().bindings:
            p, e = binding
            if p.resource_type != resource_type:
                continue
            if e.host != host and e.host != WILDCARD_HOST:
                continue
            if e.principal != principal and e.principal != WILDCARD_PRINCIPAL:
                continue
            if e.operation != operation and e.operation != AclOperation.ALL:
                continue
            if e.permission_type == DENY:
                if p.pattern_type == PatternType.LITERAL and p.name == WILDCARD_RESOURCE:
                    return DENIED
                deny[p.pattern_type].add(p.name)
            elif p.pattern_type == PatternType.LITERAL and p.name == WILDCARD_RESOURCE:
                return ALLOWED
            else:
                allow[p.pattern_type].add(p.name)
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:i] in deny[PatternType.PREFIXED]
                           for i in range(1, len(name) + 1)):
                    return ALLOWED
        return DENIED

    def _audit_decision(self, principal, host, action: Action, result, rule,
                        request_name: str) -> None:
        if result is ALLOWED:
            level = logging.DEBUG if action.log_if_allowed else TRACE
        else:
            level = logging.INFO if action.log_if_denied else TRACE
        if not audit_log.isEnabledFor(level):
            return
        kind = (principal, host, result, action.operation, action.resource_type, action.name)
        self._audit.log(
            level, kind,
            "Principal = %s is %s operation = %s from host = %s on resource = %s:LITERAL:%s "
            "for request = %s with resourceRefCount = %d based on rule %s",
            escape(principal), "Allowed" if result is ALLOWED else "Denied",
            action.operation.name, host, RESOURCE_TYPE_NAMES.get(action.resource_type, "?"),
            escape(action.name), request_name, action.resource_reference_count,
            _rule_text(rule))

    # -- the ACLs ------------------------------------------------------------------------

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [b for b in self._current().acls_by_id.values() if acl_filter.matches(b)]

    def create_acls(self, bindings: list[AclBinding]) -> list[AclCreateResult]:
        """Add ``bindings``; one result per binding, in order.  An ACL that already
        exists succeeds without a new record (Kafka's AclControlManager).

        Under the metadata log's lock (the controller's: one change at a time)
        from the duplicate check to the commit, which writes the records durably
        and then applies them through :meth:`_replay_acl`.
        """
        results: list[AclCreateResult] = []
        records: list[tuple[str, dict]] = []
        with self.metadata_log.lock:
            existing = set(self._acls.values())
            for binding in bindings:
                error = validate_new_acl(binding)
                if error is not None:
                    results.append(AclCreateResult(ErrorCode.INVALID_REQUEST, error))
                    continue
                results.append(AclCreateResult(ErrorCode.NONE, None))
                if binding not in existing:
                    existing.add(binding)
                    records.append((ACL_RECORD, acl_record(_new_id(), binding)))
            if records:
                self.metadata_log.commit(records)
        for _, fields in records:
            log.info("Created ACL %s (id %s)", binding_from_record(fields), fields["id"])
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[AclDeleteResult]:
        """Remove every ACL each filter matches; one result per filter, listing
        what it matched (an ACL two filters match is removed once, listed twice)."""
        results: list[AclDeleteResult] = []
        removed: dict[str, AclBinding] = {}
        with self.metadata_log.lock:
            current = dict(self._acls)
            for acl_filter in filters:
                if acl_filter.pattern_filter.is_unknown():
                    results.append(AclDeleteResult(ErrorCode.INVALID_REQUEST,
                                                   "Unknown patternFilter.", ()))
                    continue
                if acl_filter.entry_filter.is_unknown():
                    results.append(AclDeleteResult(ErrorCode.INVALID_REQUEST,
                                                   "Unknown entryFilter.", ()))
                    continue
                matched = [(i, b) for i, b in current.items() if acl_filter.matches(b)]
                removed.update(matched)
                results.append(AclDeleteResult(ErrorCode.NONE, None,
                                               tuple(b for _, b in matched)))
            if removed:
                self.metadata_log.commit([(REMOVE_ACL_RECORD, {"id": i}) for i in removed])
        for acl_id, binding in removed.items():
            log.info("Deleted ACL %s (id %s)", binding, acl_id)
        return results

    # -- the metadata log: replay (startup and commit) and snapshots ---------------------

    def _replay_acl(self, fields: dict) -> None:
        self._acls[fields["id"]] = binding_from_record(fields)
        self._data = None

    def _replay_remove(self, fields: dict) -> None:
        self._acls.pop(fields["id"], None)
        self._data = None

    def _snapshot(self) -> list[tuple[str, dict]]:
        """The ACLs as records, for a metadata snapshot (replaying one twice is
        harmless: a record sets the ACL of its id)."""
        return [(ACL_RECORD, acl_record(i, b)) for i, b in self._acls.items()]


def validate_new_acl(binding: AclBinding) -> str | None:
    """Kafka's checks of a new ACL (AclApis.handleCreateAcls, then
    AclControlManager.validateNewAcl): None, or the INVALID_REQUEST message."""
    p, e = binding
    if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {p.resource_type.name}"
    if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {p.pattern_type.name}"
    if e.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {e.operation.name}"
    if e.permission_type not in (ALLOW, DENY):
        return f"Invalid permissionType {e.permission_type.name}"
    if not p.name:
        return "Invalid empty resource name"
    if p.resource_type == ResourceType.CLUSTER and p.name != "kafka-cluster":
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    try:
        parse_principal(e.principal)
    except ValueError as exc:
        return f"Could not parse principal from `{e.principal}`: {exc}"
    if not e.host:
        return "Invalid empty host"
    return None


def acl_record(acl_id: str, binding: AclBinding) -> dict:
    """AccessControlEntryRecord's fields (Kafka's names; the enums as their codes)."""
    p, e = binding
    return {"id": acl_id, "resourceType": int(p.resource_type), "resourceName": p.name,
            "patternType": int(p.pattern_type), "principal": e.principal, "host": e.host,
            "operation": int(e.operation), "permissionType": int(e.permission_type)}


def binding_from_record(fields: dict) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.from_code(fields["resourceType"]), fields["resourceName"],
                        PatternType.from_code(fields["patternType"])),
        AccessControlEntry(fields["principal"], fields["host"],
                           AclOperation.from_code(fields["operation"]),
                           AclPermissionType.from_code(fields["permissionType"])))


def _new_id() -> str:
    """A Kafka Uuid's text form: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def _rule_text(rule) -> str:
    if isinstance(rule, str):
        return rule
    pattern_type, name, e = rule
    return (f"MatchingAcl(acl=StandardAcl(resourceName={escape(name)}, "
            f"patternType={pattern_type.name}, principal={escape(e.principal)}, "
            f"host={escape(e.host)}, op={e.operation.name}, "
            f"permissionType={e.permission_type.name}))")
