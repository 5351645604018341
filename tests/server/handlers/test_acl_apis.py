"""CreateAcls (30), DescribeAcls (29), DeleteAcls (31) through the API layer.

Without an authorizer: SECURITY_DISABLED.  With one: ALTER / DESCRIBE on the
cluster first, Kafka's per-binding errors, and the ACLs written to the
metadata log so a second broker over the same log (a restart) has them.
"""

from __future__ import annotations

import pytest

from kafka_net.config import ServerConfig
from kafka_net.network.request_channel import CloseConnectionResponse
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.storage import InMemoryLog
from tests.server.conftest import Broker

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPIC, GROUP, CLUSTER = 2, 3, 4
LITERAL, PREFIXED, ANY, MATCH = 3, 4, 1, 2
READ, WRITE, ALTER, DESCRIBE = 3, 4, 7, 8
DENY, ALLOW = 2, 3


def secured(store=None, **props) -> Broker:
    """A broker with StandardAuthorizer; ``store``: its metadata log's storage
    (two brokers over one store: a restart)."""
    config = ServerConfig.from_properties({"authorizer.class.name": STANDARD, "log.store": "memory",
                                           "super.users": "User:admin", **props})
    b = Broker(config, metadata_log_factory=None if store is None else lambda _: store)
    b.principal = "User:admin"
    return b


def creation(name="t", rtype=TOPIC, pattern=LITERAL, principal="User:alice", host="*",
             op=READ, perm=ALLOW) -> dict:
    return {"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": host, "operation": op, "permission_type": perm}


def acl_filter(rtype=1, name=None, pattern=ANY, principal=None, host=None, op=1,
               perm=1) -> dict:
    return {"resource_type_filter": rtype, "resource_name_filter": name,
            "pattern_type_filter": pattern, "principal_filter": principal,
            "host_filter": host, "operation": op, "permission_type": perm}


def create(b, *creations, version=3):
    return b.call(ApiKey.CREATE_ACLS, version, creations=list(creations))["results"]


def describe(b, version=3, **kw):
    return b.call(ApiKey.DESCRIBE_ACLS, version, **acl_filter(**kw))


@pytest.mark.parametrize("api_key", [ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS,
                                     ApiKey.DELETE_ACLS])
def test_without_an_authorizer_the_acl_apis_answer_security_disabled(api_key):
    b = Broker()
    if api_key == ApiKey.DESCRIBE_ACLS:
        body = describe(b)
        assert (body["error_code"], body["error_message"]) == (
            ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    elif api_key == ApiKey.CREATE_ACLS:
        [result] = create(b, creation())
        assert (result["error_code"], result["error_message"]) == (
            ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    else:
        [result] = b.call(api_key, 3, filters=[acl_filter()])["filter_results"]
        assert result["error_code"] == ErrorCode.SECURITY_DISABLED


def test_create_describe_delete_round_trip():
    b = secured()
    results = create(b, creation(), creation("p-", pattern=PREFIXED, op=WRITE, perm=DENY),
                     creation("g", GROUP, principal="User:*", host="10.0.0.1"))
    assert [r["error_code"] for r in results] == [0, 0, 0]
    body = describe(b)
    assert body["error_code"] == 0
    got = {(r["resource_type"], r["resource_name"], r["pattern_type"], a["principal"],
            a["host"], a["operation"], a["permission_type"])
           for r in body["resources"] for a in r["acls"]}
    assert got == {(TOPIC, "t", LITERAL, "User:alice", "*", READ, ALLOW),
                   (TOPIC, "p-", PREFIXED, "User:alice", "*", WRITE, DENY),
                   (GROUP, "g", LITERAL, "User:*", "10.0.0.1", READ, ALLOW)}
    # MATCH: what applies to topic p-1 (the prefixed ACL only).
    matched = describe(b, rtype=TOPIC, name="p-1", pattern=MATCH)["resources"]
    assert [(r["resource_name"], r["pattern_type"]) for r in matched] == [("p-", PREFIXED)]
    [deleted] = b.call(ApiKey.DELETE_ACLS, 3,
                       filters=[acl_filter(rtype=TOPIC)])["filter_results"]
    assert deleted["error_code"] == 0
    assert sorted(m["resource_name"] for m in deleted["matching_acls"]) == ["p-", "t"]
    assert [r["resource_name"] for r in describe(b)["resources"]] == ["g"]


@pytest.mark.parametrize("bad, message", [
    (creation("other", CLUSTER, op=ALTER),
     "The only valid name for the CLUSTER resource is kafka-cluster"),
    (creation(""), "Invalid empty resource name"),
    (creation(rtype=1), "Invalid resourceType ANY"),
    (creation(pattern=MATCH), "Invalid patternType MATCH"),
    (creation(op=1), "Invalid operation ANY"),
    (creation(perm=1), "Invalid permissionType ANY"),
    (creation(principal="alice"), "Could not parse principal"),
])
def test_create_acls_per_binding_errors(bad, message):
    b = secured()
    good, refused = create(b, creation(), bad)
    assert good["error_code"] == 0
    assert refused["error_code"] == ErrorCode.INVALID_REQUEST
    assert message in refused["error_message"]


@pytest.mark.parametrize("api_key", [ApiKey.CREATE_ACLS, ApiKey.DESCRIBE_ACLS,
                                     ApiKey.DELETE_ACLS])
def test_unknown_elements_close_the_connection(api_key):
    b = secured()
    if api_key == ApiKey.CREATE_ACLS:
        answer = b.call(api_key, 3, creations=[creation(op=0)])
    elif api_key == ApiKey.DESCRIBE_ACLS:
        answer = describe(b, pattern=0)
    else:
        answer = b.call(api_key, 3, filters=[acl_filter(op=99)])
    assert isinstance(answer, CloseConnectionResponse)


def test_the_acl_apis_need_alter_or_describe_on_the_cluster():
    b = secured()
    create(b, creation("kafka-cluster", CLUSTER, principal="User:viewer", op=DESCRIBE))
    b.principal = "User:viewer"
    assert describe(b)["error_code"] == 0
    [refused] = create(b, creation())
    assert refused["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    [refused] = b.call(ApiKey.DELETE_ACLS, 3, filters=[acl_filter()])["filter_results"]
    assert refused["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    b.principal = "User:nobody"
    assert describe(b)["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_acls_survive_a_restart_through_the_metadata_log():
    store = InMemoryLog()
    first = secured(store)
    create(first, creation("t"), creation("u"))
    first.call(ApiKey.DELETE_ACLS, 3, filters=[acl_filter(name="u")])
    again = secured(store)   # a second BrokerCore over the same stored log: a restart
    assert [r["resource_name"] for r in describe(again)["resources"]] == ["t"]
    again.principal = "User:alice"
    again.create_topic("t")
    assert again.call(ApiKey.METADATA, 12, topics=[{"name": "t"}],
                      allow_auto_topic_creation=False,
                      include_topic_authorized_operations=False)["topics"][0]["error_code"] == 0
