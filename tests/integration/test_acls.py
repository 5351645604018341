"""Kafka's ACLs on the wire: a SASL_SSL broker with StandardAuthorizer and three
principals, driven by confluent-kafka (librdkafka) and kafka-python.

* ``User:admin`` is in ``super.users``: it creates the topics and, with both
  admin clients, the ACLs;
* ``User:producer`` may WRITE topic ``orders`` (and so DESCRIBE it);
* ``User:consumer`` may READ topic ``orders`` and the groups prefixed ``orders-``.

Each client is then allowed and refused where Kafka would allow and refuse it,
with Kafka's error codes: TOPIC_AUTHORIZATION_FAILED (29) for a topic,
GROUP_AUTHORIZATION_FAILED (30) for a group, CLUSTER_AUTHORIZATION_FAILED (31)
for the ACL APIs and cluster operations.  Metadata hides the topics a
principal may not describe, and an unknown topic is refused like a secret one
(no existence leak).  A DENY wins over a wildcard PREFIXED ALLOW, for its
operation only.  A broker without an authorizer answers the ACL APIs
SECURITY_DISABLED (54).
"""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, NewTopic,
    ResourcePatternType, ResourceType)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kerrors
from kafka.admin import (
    ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern,
    ResourcePatternFilter)
from kafka.admin import ResourceType as KResourceType

from kafka_net.protocol.api_keys import ApiKey
from tests.integration.sasl_support import plain_login, sasl_config, sasl_port
from tests.support import LOOPBACK, RawClient, running_server, server_fixture
from tests.tls_support import pki, tls_raw_client  # noqa: F401 (pki: fixture)

pytestmark = pytest.mark.interop
TIMEOUT_S = 20
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORDS = {"admin": "admin-secret", "producer": "producer-secret",
             "consumer": "consumer-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" '
        + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")


class Cluster:
    def __init__(self, server, ca: str) -> None:
        self.server, self.ca = server, ca
        self.bootstrap = f"{LOOPBACK}:{sasl_port(server, 'SASL_SSL')}"

    def confluent(self, user: str, **extra) -> dict:
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN", "sasl.username": user,
                "sasl.password": PASSWORDS[user], "ssl.ca.location": self.ca, **extra}

    def python(self, user: str, **extra) -> dict:
        return dict(bootstrap_servers=self.bootstrap, security_protocol="SASL_SSL",
                    sasl_mechanism="PLAIN", sasl_plain_username=user,
                    sasl_plain_password=PASSWORDS[user], ssl_cafile=self.ca, **extra)


def literal(rtype, name, principal, op) -> AclBinding:
    return AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op,
                      AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def cluster(pki):
    config = sasl_config("SASL_SSL", pki, **{
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": STANDARD, "super.users": "User:admin"})
    with running_server(config) as server:
        c = Cluster(server, pki.ca)
        admin = AdminClient(c.confluent("admin"))
        for future in admin.create_topics([NewTopic("orders", 1, 1),
                                           NewTopic("secret", 1, 1)]).values():
            future.result(TIMEOUT_S)
        # confluent-kafka's CreateAcls: the topic ACLs.
        for future in admin.create_acls([
                literal(ResourceType.TOPIC, "orders", "User:producer", AclOperation.WRITE),
                literal(ResourceType.TOPIC, "orders", "User:consumer", AclOperation.READ),
        ]).values():
            assert future.result(TIMEOUT_S) is None
        # kafka-python's CreateAcls: the consumer's groups, by prefix.
        python_admin = KafkaAdminClient(**c.python("admin"))
        try:
            result = python_admin.create_acls([ACL(
                "User:consumer", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                ResourcePattern(KResourceType.GROUP, "orders-", ACLResourcePatternType.PREFIXED))])
            assert result["failed"] == [] and len(result["succeeded"]) == 1
        finally:
            python_admin.close()
        producer = Producer(c.confluent("admin"))
        producer.produce("orders", b"first")
        assert producer.flush(TIMEOUT_S) == 0
        yield c


ANY_BINDING = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                               AclOperation.ANY, AclPermissionType.ANY)
ANY_FILTER_FIELDS = {"resource_type_filter": 1, "resource_name_filter": None,
                     "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                     "operation": 1, "permission_type": 1}


def error_of(future) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT_S)
    return info.value.args[0]


# -- the ACL APIs ------------------------------------------------------------------------


def test_the_acl_apis_are_advertised(cluster, pki):
    context = pki.client_context()
    with tls_raw_client(sasl_port(cluster.server, "SASL_SSL"), context) as client:
        answer = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t",
                                                      "client_software_version": "1"})
    served = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
    assert served[ApiKey.DESCRIBE_ACLS] == served[ApiKey.CREATE_ACLS] == \
        served[ApiKey.DELETE_ACLS] == (1, 3)


def test_both_admin_clients_describe_the_acls(cluster):
    admin = AdminClient(cluster.confluent("admin"))
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    found = admin.describe_acls(everything).result(TIMEOUT_S)
    assert {(b.restype, b.name, b.resource_pattern_type, b.principal, b.operation)
            for b in found} >= {
        (ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:producer",
         AclOperation.WRITE),
        (ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:consumer",
         AclOperation.READ),
        (ResourceType.GROUP, "orders-", ResourcePatternType.PREFIXED, "User:consumer",
         AclOperation.READ)}
    python_admin = KafkaAdminClient(**cluster.python("admin"))
    try:
        acls, error = python_admin.describe_acls(ACLFilter(
            principal="User:consumer", host=None, operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KResourceType.ANY, None,
                                                   ACLResourcePatternType.ANY)))
    finally:
        python_admin.close()
    assert error is kerrors.NoError
    assert {(a.resource_pattern.resource_type, a.resource_pattern.resource_name)
            for a in acls} == {(KResourceType.TOPIC, "orders"), (KResourceType.GROUP, "orders-")}


def test_both_admin_clients_delete_acls(cluster):
    admin = AdminClient(cluster.confluent("admin"))
    temporary = [literal(ResourceType.TOPIC, "scratch", "User:producer", AclOperation.READ),
                 literal(ResourceType.GROUP, "scratch", "User:producer", AclOperation.READ)]
    for future in admin.create_acls(temporary).values():
        future.result(TIMEOUT_S)
    [(_, future)] = admin.delete_acls([AclBindingFilter(
        ResourceType.TOPIC, "scratch", ResourcePatternType.LITERAL, None, None,
        AclOperation.ANY, AclPermissionType.ANY)]).items()
    assert [b.name for b in future.result(TIMEOUT_S)] == ["scratch"]
    python_admin = KafkaAdminClient(**cluster.python("admin"))
    try:
        [(_, matched, error)] = python_admin.delete_acls([ACLFilter(
            principal=None, host=None, operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KResourceType.GROUP, "scratch",
                                                   ACLResourcePatternType.LITERAL))])
    finally:
        python_admin.close()
    assert error is kerrors.NoError and len(matched) == 1
    left = admin.describe_acls(AclBindingFilter(
        ResourceType.ANY, "scratch", ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(TIMEOUT_S)
    assert left == []


def test_only_the_super_user_manages_acls(cluster, pki):
    admin = AdminClient(cluster.confluent("producer"))
    [future] = admin.create_acls([literal(ResourceType.TOPIC, "secret", "User:producer",
                                          AclOperation.ALL)]).values()
    assert error_of(future).code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # librdkafka 2.16 drops DescribeAcls' response-level error: the refused caller
    # gets an empty list, never the ACLs.  The wire carries Kafka's answer:
    assert admin.describe_acls(ANY_BINDING).result(TIMEOUT_S) == []
    with tls_raw_client(sasl_port(cluster.server, "SASL_SSL"), pki.client_context()) as raw:
        assert plain_login(raw, "producer", PASSWORDS["producer"])["error_code"] == 0
        answer = raw.call(ApiKey.DESCRIBE_ACLS, 3, ANY_FILTER_FIELDS)
    assert (answer["error_code"], answer["error_message"], answer["resources"]) == (
        31, "Request DescribeAcls is not authorized.", [])
    python_admin = KafkaAdminClient(**cluster.python("consumer"))
    try:
        with pytest.raises(kerrors.ClusterAuthorizationFailedError):
            python_admin.describe_acls(ACLFilter(
                principal=None, host=None, operation=ACLOperation.ANY,
                permission_type=ACLPermissionType.ANY,
                resource_pattern=ResourcePatternFilter(KResourceType.ANY, None,
                                                       ACLResourcePatternType.ANY)))
    finally:
        python_admin.close()


# -- the producer ------------------------------------------------------------------------


def delivery_errors(settings: dict, topic: str) -> list:
    errors = []
    producer = Producer({**settings, "message.timeout.ms": 10_000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(TIMEOUT_S)
    return errors


def test_the_producer_writes_orders_and_nothing_else(cluster, caplog):
    caplog.set_level(logging.INFO, "kafka.authorizer.logger")
    assert delivery_errors(cluster.confluent("producer"), "orders") == [None]
    [refused] = delivery_errors(cluster.confluent("producer"), "secret")
    assert refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # The consumer may read orders, not write it.
    [refused] = delivery_errors(cluster.confluent("consumer"), "orders")
    assert refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert any("Principal = User:producer is Denied operation = " in r.getMessage()
               and "Topic:LITERAL:secret" in r.getMessage() for r in caplog.records)


def test_kafka_python_producer_is_refused_where_confluent_is(cluster):
    producer = KafkaProducer(**cluster.python("producer", max_block_ms=10_000))
    try:
        producer.send("orders", b"from kafka-python").get(TIMEOUT_S)   # idempotent: allowed
        with pytest.raises(kerrors.TopicAuthorizationFailedError):
            producer.send("secret", b"nope").get(TIMEOUT_S)
    finally:
        producer.close(5)


def test_producer_admin_cannot_create_or_delete_topics(cluster):
    admin = AdminClient(cluster.confluent("producer"))
    [future] = admin.create_topics([NewTopic("new-topic", 1, 1)]).values()
    assert error_of(future).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    futures = admin.delete_topics(["orders", "never-existed"])
    # Refused the same way whether the topic exists or not.
    for future in futures.values():
        assert error_of(future).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


# -- metadata ----------------------------------------------------------------------------


def test_metadata_hides_what_a_principal_may_not_describe(cluster):
    def visible(user):
        admin = AdminClient(cluster.confluent(user))
        return {t for t in admin.list_topics(timeout=TIMEOUT_S).topics}
    assert visible("admin") >= {"orders", "secret"}
    assert visible("producer") == {"orders"}
    assert visible("consumer") == {"orders"}
    consumer = KafkaConsumer(**cluster.python("consumer"))
    try:
        assert consumer.topics() == {"orders"}
    finally:
        consumer.close()
    admin = AdminClient(cluster.confluent("consumer"))
    named = admin.list_topics("secret", timeout=TIMEOUT_S).topics["secret"]
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


# -- the consumer ------------------------------------------------------------------------


def poll_until(consumer, predicate, timeout: float = TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and predicate(message):
            return message
    return None


def test_the_consumer_reads_orders_in_its_groups(cluster):
    consumer = Consumer(cluster.confluent("consumer", **{
        "group.id": "orders-app", "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe(["orders"])
        message = poll_until(consumer, lambda m: m.error() is None)
        assert message is not None and message.topic() == "orders"
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def test_the_consumer_is_refused_another_group(cluster):
    consumer = Consumer(cluster.confluent("consumer", **{
        "group.id": "elsewhere", "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe(["orders"])
        refused = poll_until(consumer, lambda m: m.error() is not None)
        assert refused is not None
        assert refused.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_a_kip_848_consumer_subscribed_to_a_denied_topic_is_told(cluster):
    """KAFKA-18813 (Kafka 4.0): a consumer-protocol member subscribing by name to a
    topic it may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED from its heartbeat,
    which librdkafka reports, instead of silently consuming the others only."""
    consumer = Consumer(cluster.confluent("consumer", **{
        "group.id": "orders-848", "group.protocol": "consumer",
        "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe(["orders", "secret"])
        refused = poll_until(consumer, lambda m: m.error() is not None)
        assert refused is not None
        assert refused.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, refused.error()
    finally:
        consumer.close()


def test_kafka_python_consumer_is_refused_the_secret_topic(cluster, caplog):
    consumer = KafkaConsumer(**cluster.python("consumer", group_id="orders-py",
                                              auto_offset_reset="earliest"))
    try:
        # Subscribed, kafka-python logs the refusal from Metadata and goes on.
        consumer.subscribe(["secret"])
        consumer.poll(timeout_ms=2000)
        assert "Topic secret is not authorized for this client" in caplog.text
        # Assigned, the Fetch's TOPIC_AUTHORIZATION_FAILED is raised to the caller.
        consumer.unsubscribe()
        consumer.assign([TopicPartition("secret", 0)])
        with pytest.raises(kerrors.TopicAuthorizationFailedError):
            deadline = time.monotonic() + TIMEOUT_S
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=500)
    finally:
        consumer.close()


def test_deny_wins_and_denies_only_its_operation(cluster):
    """User:* may READ topics prefixed audit; a DENY READ for the consumer on
    audit-log wins for it, yet (Kafka's rule: implication widens ALLOWs only)
    it may still DESCRIBE the topic through the wildcard ALLOW READ."""
    admin = AdminClient(cluster.confluent("admin"))
    [future] = admin.create_topics([NewTopic("audit-log", 1, 1)]).values()
    future.result(TIMEOUT_S)
    bindings = [
        AclBinding(ResourceType.TOPIC, "audit", ResourcePatternType.PREFIXED, "User:*", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "audit-log", ResourcePatternType.LITERAL,
                   "User:consumer", "*", AclOperation.READ, AclPermissionType.DENY),
        AclBinding(ResourceType.GROUP, "audit", ResourcePatternType.PREFIXED, "User:*", "*",
                   AclOperation.READ, AclPermissionType.ALLOW)]
    for future in admin.create_acls(bindings).values():
        future.result(TIMEOUT_S)
    try:
        producer = Producer(cluster.confluent("admin"))
        producer.produce("audit-log", b"entry")
        assert producer.flush(TIMEOUT_S) == 0
        for user, refused in (("producer", False), ("consumer", True)):
            consumer = Consumer(cluster.confluent(user, **{
                "group.id": f"audit-{user}", "auto.offset.reset": "earliest"}))
            try:
                topics = consumer.list_topics("audit-log", timeout=TIMEOUT_S).topics
                assert topics["audit-log"].error is None   # DESCRIBE, for both
                consumer.subscribe(["audit-log"])
                message = poll_until(consumer, lambda m: True)
                assert message is not None
                if refused:
                    assert message.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
                else:
                    assert message.error() is None and message.value() == b"entry"
            finally:
                consumer.close()
    finally:
        exact = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal,
                                  b.host, b.operation, b.permission_type) for b in bindings]
        for future in admin.delete_acls(exact).values():
            assert len(future.result(TIMEOUT_S)) == 1


# -- no authorizer -----------------------------------------------------------------------

plain_server = server_fixture()


def test_without_an_authorizer_both_admin_clients_see_security_disabled(plain_server):
    bootstrap = f"{LOOPBACK}:{plain_server.bound_port('PLAINTEXT')}"
    with RawClient(plain_server.bound_port("PLAINTEXT")) as raw:
        answer = raw.call(ApiKey.DESCRIBE_ACLS, 3, ANY_FILTER_FIELDS)
    assert (answer["error_code"], answer["error_message"]) == (
        54, "No Authorizer is configured on the broker")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # librdkafka drops DescribeAcls' response-level error (an empty list) ...
    assert admin.describe_acls(ANY_BINDING).result(TIMEOUT_S) == []
    # ... and reports CreateAcls' per-binding one.
    [future] = admin.create_acls([literal(ResourceType.TOPIC, "t", "User:a",
                                          AclOperation.READ)]).values()
    assert error_of(future).code() == KafkaError.SECURITY_DISABLED
    python_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        with pytest.raises(kerrors.SecurityDisabledError):
            python_admin.describe_acls(ACLFilter(
                principal=None, host=None, operation=ACLOperation.ANY,
                permission_type=ACLPermissionType.ANY,
                resource_pattern=ResourcePatternFilter(KResourceType.ANY, None,
                                                       ACLResourcePatternType.ANY)))
    finally:
        python_admin.close()
