"""StandardAuthorizer's decisions, in process (the wire tests are in
tests/integration/test_acls.py and tests/server/handlers/test_acl_checks.py).

Ported from Kafka's StandardAuthorizerTest (metadata/.../authorizer):
testGetConfiguredSuperUsers, testGetDefaultResult,
testAllowEveryoneIfNoAclFoundConfigEnabled, testAllowEveryoneIfNoAclFoundConfigDisabled,
testFindResultImplication, testFindResultPrincipalMatching, testListAcls,
testSimpleAuthorizations, testDenyPrecedenceWithOperationAll,
testTopicAclWithOperationAll, testHostAddressAclValidation,
testAuthorizationWithManyAcls, testDenyAuditLogging, testAllowAuditLogging, testPrefixAcls.

From AuthorizerTest / BaseAuthorizerTest (core/.../security/authorizer):
testTopicAcl, testDenyTakesPrecedence, testAllowAllAccess, testSuperUserHasAccess,
testWildCardAcls, testNoAclFound, testNoAclFoundOverride, testAclConfigWithWhitespace,
testAclManagementAPIs, testAclInheritance (implications of allow and deny),
testAccessAllowedIfAllowAclExistsOnWildcardResource, testDeleteAclOnWildcardResource,
testDeleteAllAclOnWildcardResource, testAccessAllowedIfAllowAclExistsOnPrefixedResource,
testDeleteAclOnPrefixedResource, testDeleteAllAclOnPrefixedResource,
testAddAclsOnLiteralResource, testAddAclsOnWildcardResource, testAddAclsOnPrefixedResource,
testAuthorizeWithPrefixedResource, testSingleCharacterResourceAcls, testGetAclsPrincipal,
testAclsFilter, testAuthorizeByResourceTypeNoAclFoundOverride,
testAuthorizeByResourceTypeMultipleAddAndRemove,
testAuthorizeByResourceTypeIsolationUnrelatedDenyWontDominateAllow,
testAuthorizeByResourceTypeDenyTakesPrecedence,
testAuthorizeByResourceTypePrefixedResourceDenyDominate,
testAuthorizeByResourceTypeWildcardResourceDenyDominate,
testAuthorizeByResourceTypeWithAllOperationAce, testAuthorizeByResourceTypeWithAllHostAce,
testAuthorizeByResourceTypeWithAllPrincipalAce, testAuthorizeByResourceTypeSuperUserHasAccess.

Not ported: the initial-load and early-start-listener cases (kafka-net replays
its metadata log before it serves, so no request meets a loading authorizer),
testAuthorizeThrowsOnNonLiteralResource (Action here names a literal resource
by construction) and the ZooKeeper concurrency case.  The restart case is
kafka-net's own: ACLs come back from the MetadataLog.
"""

from __future__ import annotations

import logging

import pytest

from kafka_net.config import ServerConfig
from kafka_net.config.errors import ConfigError
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import (
    ANY_FILTER, AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter,
    AclOperation as Op, AclPermissionType as Perm, Action, AuthorizationResult,
    PatternType as PT, ResourcePattern, ResourcePatternFilter, ResourceType as RT,
    StandardAuthorizer, new_authorizer)
from kafka_net.server.metadata_log import MetadataLog
from kafka_net.server.storage import InMemoryLog

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
HOST = "192.168.0.1"


def acl(rtype, name, principal, op, perm=Perm.ALLOW, pattern=PT.LITERAL, host="*"):
    return AclBinding(ResourcePattern(rtype, name, pattern),
                      AccessControlEntry(principal, host, op, perm))


def new(*acls, super_users=(), allow_everyone=False, metadata_log=None):
    authorizer = StandardAuthorizer(super_users, allow_everyone, metadata_log)
    results = authorizer.create_acls(list(acls))
    assert all(r.error_code == ErrorCode.NONE for r in results), results
    return authorizer


def check(authorizer, principal, op, rtype, name, host=HOST):
    return authorizer.authorize_action(principal, host, Action(op, rtype, name))


# -- configuration ----------------------------------------------------------------------

def test_get_configured_super_users():
    config = ServerConfig.from_properties({"super.users": " User:bob ; User:alice ;"})
    assert config.super_users == ("User:bob", "User:alice")
    assert ServerConfig().super_users == ()
    with pytest.raises(ConfigError, match="not a principal"):
        ServerConfig.from_properties({"super.users": "bob"})


def test_get_default_result():
    assert ServerConfig().allow_everyone_if_no_acl_found is False
    config = ServerConfig.from_properties({"allow.everyone.if.no.acl.found": "true"})
    assert config.allow_everyone_if_no_acl_found is True


def test_authorizer_class_name():
    assert new_authorizer(ServerConfig()) is None
    config = ServerConfig.from_properties({
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin"})
    authorizer = new_authorizer(config)
    assert isinstance(authorizer, StandardAuthorizer)
    assert authorizer.super_users == {"User:admin"}
    with pytest.raises(ConfigError, match="removed in Kafka 4.0"):
        ServerConfig.from_properties(
            {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(ConfigError, match="unknown authorizer class 'com.example.Mine'"):
        ServerConfig.from_properties({"authorizer.class.name": "com.example.Mine"})


def test_allow_everyone_if_no_acl_found_config_enabled():
    a = new(acl(RT.TOPIC, "topic1", "User:alice", Op.READ), allow_everyone=True)
    # An ACL exists on topic1: only alice may read it.
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "topic1") is DENIED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "topic1") is ALLOWED
    # No ACL covers topic2: everyone may.
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "topic2") is ALLOWED


def test_allow_everyone_if_no_acl_found_config_disabled():
    a = new(acl(RT.TOPIC, "topic1", "User:alice", Op.READ), allow_everyone=False)
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "topic2") is DENIED
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "topic1") is DENIED


# -- matching ---------------------------------------------------------------------------

@pytest.mark.parametrize("granted, implied", [
    (Op.READ, {Op.READ, Op.DESCRIBE}), (Op.WRITE, {Op.WRITE, Op.DESCRIBE}),
    (Op.DELETE, {Op.DELETE, Op.DESCRIBE}), (Op.ALTER, {Op.ALTER, Op.DESCRIBE}),
    (Op.DESCRIBE, {Op.DESCRIBE}), (Op.CREATE, {Op.CREATE}),
    (Op.ALTER_CONFIGS, {Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}),
    (Op.DESCRIBE_CONFIGS, {Op.DESCRIBE_CONFIGS}),
    (Op.ALL, set(Op) - {Op.UNKNOWN, Op.ANY}),
])
def test_acl_inheritance_of_allow(granted, implied):
    """testFindResultImplication / testAclInheritance (testImplicationsOfAllow)."""
    a = new(acl(RT.TOPIC, "t", "User:alice", granted))
    for op in set(Op) - {Op.UNKNOWN, Op.ANY, Op.ALL}:
        expected = ALLOWED if op in implied else DENIED
        assert check(a, "User:alice", op, RT.TOPIC, "t") is expected, op


@pytest.mark.parametrize("denied", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER,
                                    Op.ALTER_CONFIGS, Op.ALL])
def test_acl_inheritance_of_deny(denied):
    """A DENY implies nothing but itself (ALL denies everything)."""
    a = new(acl(RT.TOPIC, "t", "User:alice", Op.ALL),
            acl(RT.TOPIC, "t", "User:alice", denied, Perm.DENY))
    for op in set(Op) - {Op.UNKNOWN, Op.ANY, Op.ALL}:
        expected = DENIED if denied in (op, Op.ALL) else ALLOWED
        assert check(a, "User:alice", op, RT.TOPIC, "t") is expected, op


def test_find_result_principal_matching():
    a = new(acl(RT.TOPIC, "t", "User:*", Op.READ),
            acl(RT.TOPIC, "u", "User:alice", Op.READ))
    assert check(a, "User:anyone", Op.READ, RT.TOPIC, "t") is ALLOWED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "u") is ALLOWED
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "u") is DENIED
    # A principal of another type is another principal.
    assert check(a, "Group:alice", Op.READ, RT.TOPIC, "u") is DENIED


def test_simple_authorizations_and_topic_acl():
    """testSimpleAuthorizations / testTopicAcl: literal, prefixed, hosts, deny."""
    a = new(acl(RT.TOPIC, "foo", "User:alice", Op.READ, pattern=PT.PREFIXED),
            acl(RT.TOPIC, "foobar", "User:alice", Op.WRITE),
            acl(RT.TOPIC, "foobar", "User:bob", Op.READ, host="192.168.0.1"),
            acl(RT.TOPIC, "foobar", "User:bob", Op.READ, Perm.DENY, host="192.168.0.2"),
            acl(RT.GROUP, "g", "User:alice", Op.READ))
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "foobar") is ALLOWED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "food") is ALLOWED
    assert check(a, "User:alice", Op.WRITE, RT.TOPIC, "foobar") is ALLOWED
    assert check(a, "User:alice", Op.WRITE, RT.TOPIC, "food") is DENIED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "fo") is DENIED
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "foobar", "192.168.0.1") is ALLOWED
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "foobar", "192.168.0.2") is DENIED
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "foobar", "192.168.0.3") is DENIED
    assert check(a, "User:alice", Op.READ, RT.GROUP, "g") is ALLOWED
    assert check(a, "User:alice", Op.READ, RT.GROUP, "foobar") is DENIED


def test_deny_takes_precedence_and_operation_all():
    """testDenyTakesPrecedence / testDenyPrecedenceWithOperationAll /
    testTopicAclWithOperationAll."""
    a = new(acl(RT.TOPIC, "*", "User:alice", Op.ALL),
            acl(RT.TOPIC, "secret", "User:alice", Op.ALL, Perm.DENY),
            acl(RT.TOPIC, "foo", "User:*", Op.ALL, pattern=PT.PREFIXED),
            acl(RT.TOPIC, "foo", "User:bob", Op.WRITE, Perm.DENY, pattern=PT.PREFIXED))
    assert check(a, "User:alice", Op.WRITE, RT.TOPIC, "anything") is ALLOWED
    assert check(a, "User:alice", Op.DESCRIBE, RT.TOPIC, "secret") is DENIED
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "foo1") is ALLOWED
    assert check(a, "User:bob", Op.WRITE, RT.TOPIC, "foo1") is DENIED
    assert check(a, "User:bob", Op.DESCRIBE, RT.TOPIC, "foo1") is ALLOWED


def test_host_address_acl_validation():
    a = new(acl(RT.TOPIC, "t", "User:alice", Op.READ, host="192.168.0.1"),
            acl(RT.TOPIC, "t", "User:alice", Op.WRITE, host="*"))
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "t", "192.168.0.1") is ALLOWED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "t", "192.168.0.9") is DENIED
    assert check(a, "User:alice", Op.WRITE, RT.TOPIC, "t", "10.0.0.1") is ALLOWED


def test_allow_all_access_and_wildcard_acls():
    """testAllowAllAccess / testWildCardAcls /
    testAccessAllowedIfAllowAclExistsOnWildcardResource."""
    a = new(acl(RT.TOPIC, "*", "User:*", Op.ALL))
    assert check(a, "User:random", Op.WRITE, RT.TOPIC, "any", "10.1.2.3") is ALLOWED
    b = new(acl(RT.TOPIC, "*", "User:alice", Op.WRITE),
            acl(RT.TOPIC, "t", "User:alice", Op.READ, Perm.DENY))
    assert check(b, "User:alice", Op.WRITE, RT.TOPIC, "t") is ALLOWED
    assert check(b, "User:alice", Op.READ, RT.TOPIC, "t") is DENIED
    assert check(b, "User:alice", Op.WRITE, RT.GROUP, "t") is DENIED


def test_super_user_has_access():
    a = new(acl(RT.TOPIC, "*", "User:*", Op.ALL, Perm.DENY), super_users=("User:admin",))
    assert check(a, "User:admin", Op.WRITE, RT.TOPIC, "t") is ALLOWED
    assert check(a, "User:other", Op.WRITE, RT.TOPIC, "t") is DENIED


def test_no_acl_found_and_override():
    a = new()
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "t") is DENIED
    b = new(allow_everyone=True)
    assert check(b, "User:alice", Op.READ, RT.TOPIC, "t") is ALLOWED


def test_acl_config_with_whitespace():
    config = ServerConfig.from_properties({"super.users": "  User:a ;User:b  "})
    assert new_authorizer(config) is None   # no class name: no authorizer
    assert config.super_users == ("User:a", "User:b")


def test_prefix_acls_and_single_character_resources():
    """testPrefixAcls / testAuthorizeWithPrefixedResource /
    testSingleCharacterResourceAcls."""
    a = new(acl(RT.TOPIC, "f", "User:alice", Op.READ, pattern=PT.PREFIXED),
            acl(RT.TOPIC, "fooa", "User:alice", Op.READ, Perm.DENY, pattern=PT.PREFIXED),
            acl(RT.TOPIC, "g", "User:alice", Op.READ),
            acl(RT.TOPIC, "foo", "User:bob", Op.READ))
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "f") is ALLOWED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "foo") is ALLOWED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "fooab") is DENIED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "g") is ALLOWED
    assert check(a, "User:alice", Op.READ, RT.TOPIC, "gg") is DENIED
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "foo") is ALLOWED
    assert check(a, "User:bob", Op.READ, RT.TOPIC, "food") is DENIED


def test_authorization_with_many_acls():
    acls = [acl(RT.TOPIC, f"topic{i}", f"User:u{i % 10}", Op.READ) for i in range(1000)]
    acls += [acl(RT.TOPIC, f"pre{i}", "User:u1", Op.WRITE, pattern=PT.PREFIXED)
             for i in range(100)]
    a = new(*acls)
    assert check(a, "User:u3", Op.READ, RT.TOPIC, "topic3") is ALLOWED
    assert check(a, "User:u3", Op.READ, RT.TOPIC, "topic4") is DENIED
    assert check(a, "User:u1", Op.WRITE, RT.TOPIC, "pre55xyz") is ALLOWED
    assert check(a, "User:u2", Op.WRITE, RT.TOPIC, "pre55xyz") is DENIED


# -- audit logging ----------------------------------------------------------------------

@pytest.mark.parametrize("log_if_denied", [True, False])
def test_deny_audit_logging(caplog, log_if_denied):
    a = new(acl(RT.TOPIC, "t", "User:bob", Op.READ))
    caplog.set_level(5, "kafka.authorizer.logger")
    a.authorize_action("User:alice", HOST, Action(Op.READ, RT.TOPIC, "t", 1, True,
                                                  log_if_denied), "Fetch")
    [record] = [r for r in caplog.records if r.name == "kafka.authorizer.logger"]
    assert record.levelno == (logging.INFO if log_if_denied else 5)
    assert record.getMessage() == (
        "Principal = User:alice is Denied operation = READ from host = 192.168.0.1 on "
        "resource = Topic:LITERAL:t for request = Fetch with resourceRefCount = 1 based "
        "on rule DefaultDeny")


@pytest.mark.parametrize("log_if_allowed", [True, False])
def test_allow_audit_logging(caplog, log_if_allowed):
    a = new(acl(RT.TOPIC, "t", "User:alice", Op.READ))
    caplog.set_level(5, "kafka.authorizer.logger")
    a.authorize_action("User:alice", HOST, Action(Op.READ, RT.TOPIC, "t", 2,
                                                  log_if_allowed, True), "Fetch")
    [record] = [r for r in caplog.records if r.name == "kafka.authorizer.logger"]
    assert record.levelno == (logging.DEBUG if log_if_allowed else 5)
    assert "is Allowed operation = READ" in record.getMessage()
    assert "resourceRefCount = 2 based on rule MatchingAcl(" in record.getMessage()


def test_denials_are_rate_limited(caplog):
    a = new()
    caplog.set_level(logging.INFO, "kafka.authorizer.logger")
    for _ in range(100):
        check(a, "User:mallory", Op.WRITE, RT.TOPIC, "t")
    assert len([r for r in caplog.records if r.name == "kafka.authorizer.logger"]) == 1


# -- managing ACLs ----------------------------------------------------------------------

def _filter(rtype=RT.ANY, name=None, pattern=PT.ANY, principal=None, host=None,
            op=Op.ANY, perm=Perm.ANY):
    return AclBindingFilter(ResourcePatternFilter(rtype, name, pattern),
                            AccessControlEntryFilter(principal, host, op, perm))


def test_acl_management_apis_and_list_acls():
    """testAclManagementAPIs / testListAcls / testAddAclsOnLiteralResource /
    testAddAclsOnWildcardResource / testAddAclsOnPrefixedResource."""
    one = acl(RT.TOPIC, "t", "User:alice", Op.READ)
    two = acl(RT.TOPIC, "*", "User:bob", Op.WRITE)
    three = acl(RT.TOPIC, "t", "User:carol", Op.READ, pattern=PT.PREFIXED)
    a = new(one, two, three, one)   # a duplicate is a success without a second copy
    assert sorted(a.acls(ANY_FILTER)) == sorted([one, two, three])
    assert sorted(a.acls(_filter(pattern=PT.LITERAL))) == sorted([one, two])
    [result] = a.delete_acls([_filter(principal="User:alice")])
    assert result.deleted == (one,)
    assert sorted(a.acls(ANY_FILTER)) == sorted([two, three])


def test_delete_acl_on_wildcard_and_prefixed_resource():
    """testDeleteAclOnWildcardResource / testDeleteAllAclOnWildcardResource /
    testDeleteAclOnPrefixedResource / testDeleteAllAclOnPrefixedResource."""
    w1 = acl(RT.TOPIC, "*", "User:alice", Op.READ)
    w2 = acl(RT.TOPIC, "*", "User:alice", Op.WRITE)
    p1 = acl(RT.TOPIC, "foo", "User:alice", Op.READ, pattern=PT.PREFIXED)
    p2 = acl(RT.TOPIC, "foo", "User:alice", Op.WRITE, pattern=PT.PREFIXED)
    a = new(w1, w2, p1, p2)
    a.delete_acls([_filter(RT.TOPIC, "*", PT.LITERAL, op=Op.READ)])
    assert sorted(a.acls(ANY_FILTER)) == sorted([w2, p1, p2])
    a.delete_acls([_filter(RT.TOPIC, "foo", PT.PREFIXED, op=Op.READ)])
    assert sorted(a.acls(ANY_FILTER)) == sorted([w2, p2])
    a.delete_acls([_filter(RT.TOPIC, "*", PT.LITERAL), _filter(RT.TOPIC, "foo", PT.PREFIXED)])
    assert a.acls(ANY_FILTER) == []


def test_acls_filter_match_and_get_acls_principal():
    """testAclsFilter / testGetAclsPrincipal: MATCH finds every pattern that
    applies to a name; a principal filter is compared as written."""
    lit = acl(RT.TOPIC, "foo-bar", "User:alice", Op.READ)
    wild = acl(RT.TOPIC, "*", "User:bob", Op.READ)
    pre = acl(RT.TOPIC, "foo", "User:alice", Op.WRITE, pattern=PT.PREFIXED)
    other = acl(RT.TOPIC, "bar", "User:alice", Op.READ)
    group = acl(RT.GROUP, "foo-bar", "User:alice", Op.READ)
    a = new(lit, wild, pre, other, group)
    assert sorted(a.acls(_filter(RT.TOPIC, "foo-bar", PT.MATCH))) == sorted([lit, wild, pre])
    assert a.acls(_filter(RT.TOPIC, "foo-bar", PT.ANY)) == [lit]
    assert a.acls(_filter(RT.ANY, "foo-bar", PT.LITERAL)) in ([lit, group], [group, lit])
    assert a.acls(_filter(principal="User:bob")) == [wild]
    assert a.acls(_filter(principal="User:*")) == []


@pytest.mark.parametrize("binding, message", [
    (acl(RT.ANY, "t", "User:a", Op.READ), "Invalid resourceType ANY"),
    (acl(RT.TOPIC, "t", "User:a", Op.READ, pattern=PT.MATCH), "Invalid patternType MATCH"),
    (acl(RT.TOPIC, "t", "User:a", Op.ANY), "Invalid operation ANY"),
    (acl(RT.TOPIC, "t", "User:a", Op.READ, Perm.ANY), "Invalid permissionType ANY"),
    (acl(RT.TOPIC, "", "User:a", Op.READ), "Invalid empty resource name"),
    (acl(RT.CLUSTER, "c", "User:a", Op.ALTER),
     "The only valid name for the CLUSTER resource is kafka-cluster"),
    (acl(RT.TOPIC, "t", "alice", Op.READ), "Could not parse principal"),
])
def test_empty_and_invalid_acls_are_refused(binding, message):
    """testEmptyAclThrowsException, and AclControlManager.validateNewAcl's cases."""
    a = StandardAuthorizer()
    [result] = a.create_acls([binding])
    assert result.error_code == ErrorCode.INVALID_REQUEST
    assert message in result.error_message
    assert a.acls(ANY_FILTER) == []


def test_unknown_delete_filters_are_invalid_requests():
    a = new(acl(RT.TOPIC, "t", "User:a", Op.READ))
    results = a.delete_acls([_filter(pattern=PT.UNKNOWN), _filter(op=Op.UNKNOWN)])
    assert [(r.error_code, r.error_message) for r in results] == [
        (ErrorCode.INVALID_REQUEST, "Unknown patternFilter."),
        (ErrorCode.INVALID_REQUEST, "Unknown entryFilter.")]
    assert len(a.acls(ANY_FILTER)) == 1


# -- authorizeByResourceType ------------------------------------------------------------

def by_type(a, principal="User:alice", op=Op.WRITE, host=HOST):
    return a.authorize_by_resource_type(principal, host, op, RT.TOPIC)


def test_authorize_by_resource_type_no_acl_found_override():
    assert by_type(new(allow_everyone=True)) is ALLOWED
    assert by_type(new()) is DENIED


def test_authorize_by_resource_type_multiple_add_and_remove():
    a = new()
    for i in range(5):
        a.create_acls([acl(RT.TOPIC, f"t{i}", "User:alice", Op.WRITE)])
        assert by_type(a) is ALLOWED
        a.create_acls([acl(RT.TOPIC, f"t{i}", "User:alice", Op.WRITE, Perm.DENY)])
        assert by_type(a) is DENIED
        a.delete_acls([_filter(RT.TOPIC, f"t{i}", PT.LITERAL)])
        assert by_type(a) is DENIED


def test_authorize_by_resource_type_isolation_and_deny_precedence():
    """...IsolationUnrelatedDenyWontDominateAllow / ...DenyTakesPrecedence."""
    a = new(acl(RT.TOPIC, "t1", "User:alice", Op.WRITE),
            acl(RT.TOPIC, "t2", "User:alice", Op.WRITE, Perm.DENY),
            acl(RT.GROUP, "*", "User:alice", Op.WRITE, Perm.DENY))
    assert by_type(a) is ALLOWED
    b = new(acl(RT.TOPIC, "t1", "User:alice", Op.WRITE),
            acl(RT.TOPIC, "t1", "User:alice", Op.WRITE, Perm.DENY))
    assert by_type(b) is DENIED


def test_authorize_by_resource_type_prefixed_and_wildcard_deny_dominate():
    a = new(acl(RT.TOPIC, "abc", "User:alice", Op.WRITE),
            acl(RT.TOPIC, "abcd", "User:alice", Op.WRITE, pattern=PT.PREFIXED),
            acl(RT.TOPIC, "ab", "User:alice", Op.WRITE, Perm.DENY, pattern=PT.PREFIXED))
    assert by_type(a) is DENIED
    b = new(acl(RT.TOPIC, "abc", "User:alice", Op.WRITE),
            acl(RT.TOPIC, "*", "User:alice", Op.WRITE, Perm.DENY))
    assert by_type(b) is DENIED


def test_authorize_by_resource_type_with_all_operation_host_principal_ace():
    a = new(acl(RT.TOPIC, "t", "User:alice", Op.ALL))
    assert by_type(a) is ALLOWED
    b = new(acl(RT.TOPIC, "t", "User:alice", Op.WRITE, host="10.0.0.1"))
    assert by_type(b) is DENIED
    assert by_type(b, host="10.0.0.1") is ALLOWED
    c = new(acl(RT.TOPIC, "t", "User:*", Op.WRITE))
    assert by_type(c, principal="User:anyone") is ALLOWED


def test_authorize_by_resource_type_super_user_has_access():
    a = new(acl(RT.TOPIC, "*", "User:*", Op.ALL, Perm.DENY), super_users=("User:su",))
    assert by_type(a, principal="User:su") is ALLOWED
    assert by_type(a) is DENIED


# -- persistence ------------------------------------------------------------------------

def test_acls_come_back_after_a_restart():
    """Two authorizers over the same MetadataLog: the second replays the first's
    AccessControlEntryRecord / RemoveAccessControlEntryRecord records."""
    metadata_log = MetadataLog()
    keep = acl(RT.TOPIC, "t", "User:alice", Op.READ)
    gone = acl(RT.GROUP, "g", "User:alice", Op.READ)
    first = new(keep, gone, metadata_log=metadata_log)
    first.delete_acls([_filter(RT.GROUP)])
    kinds = [kind for kind, _ in metadata_log.records()]
    assert kinds == ["AccessControlEntryRecord"] * 2 + ["RemoveAccessControlEntryRecord"]
    second = StandardAuthorizer(metadata_log=metadata_log)
    metadata_log.replay()
    assert second.acls(ANY_FILTER) == [keep]
    assert check(second, "User:alice", Op.READ, RT.TOPIC, "t") is ALLOWED


def test_acls_are_in_metadata_snapshots():
    """After a snapshot moved the log start past the ACL records, a restart
    still has the ACLs (the authorizer's snapshot source wrote them)."""
    store = InMemoryLog()
    metadata_log = MetadataLog(store)
    keep = acl(RT.TOPIC, "t", "User:alice", Op.READ)
    first = new(keep, acl(RT.GROUP, "g", "User:alice", Op.READ), metadata_log=metadata_log)
    first.delete_acls([_filter(RT.GROUP)])
    assert metadata_log.snapshot() is not None
    assert [kind for kind, _ in metadata_log.records()] == ["AccessControlEntryRecord"]
    restarted = MetadataLog(store)
    second = StandardAuthorizer(metadata_log=restarted)
    restarted.replay()
    assert second.acls(ANY_FILTER) == [keep]


@pytest.mark.parametrize("address, java", [
    ("127.0.0.1", "127.0.0.1"), ("::1", "0:0:0:0:0:0:0:1"),
    ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"), ("2001:db8::ff00:42:8329",
                                                  "2001:db8:0:0:0:ff00:42:8329")])
def test_hosts_are_named_as_kafka_names_them(address, java):
    """An ACL's host is compared with Java's InetAddress.getHostAddress form."""
    from kafka_net.server.authorizer.acl import host_address
    assert host_address(address) == java
