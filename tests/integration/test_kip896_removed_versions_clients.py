"""A real client held to the offset APIs Kafka 4.0 removed (KIP-896), against
kafka-net playing Kafka 2.8 (``as.version``): what a Kafka 2.8 broker served it.

kafka-python 3.0.12 pinned to an 0.8 broker (``api_version``) commits and fetches
offsets with the oldest versions (its kafka/protocol/broker_version_data.py):

* ``(0, 8, 1)``: OffsetCommit v0 / OffsetFetch v0, the ZooKeeper-stored offsets,
  sent to any broker (there was no coordinator yet);
* ``(0, 8, 2)``: OffsetCommit v1 / OffsetFetch v1, to the coordinator
  (FindCoordinator v0).

Both consume with Fetch v0 and ListOffsets v0 (legacy formats, also served
before 4.0).  Each checks the versions the broker saw and that a second
consumer of the group starts where the first committed.

Its admin client pinned to ``(1, 0)`` sends DescribeAcls, CreateAcls,
DeleteAcls, DescribeConfigs and DescribeLogDirs v0.
"""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (
    ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ConfigResource,
    ConfigResourceType, KafkaAdminClient, ResourcePattern, ResourcePatternFilter, ResourceType)

from kafka_net.protocol.api_keys import ApiKey
from tests.integration.client_support import bootstrap
from tests.support import make_config, running_server

pytestmark = pytest.mark.interop

N = 10
TIMEOUT_S = 30


@pytest.fixture
def fresh_2_8():
    """A broker of its own, so that its request metrics are this test's."""
    with running_server(make_config(as_version="2.8")) as server:
        yield server


def produce(server, topic: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap(server), api_version=(0, 10, 1))
    try:
        for i in range(N):
            producer.send(topic, value=b"v%d" % i, partition=0)
        producer.flush(timeout=TIMEOUT_S)
    finally:
        producer.close(timeout=TIMEOUT_S)


def consumer(server, api_version: tuple, group: str) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=bootstrap(server), api_version=api_version,
                         group_id=group, enable_auto_commit=False,
                         auto_offset_reset="earliest", consumer_timeout_ms=TIMEOUT_S * 1000)


@pytest.mark.parametrize("api_version, offsets_version", [((0, 8, 1), 0), ((0, 8, 2), 1)])
def test_kafka_python_0_8_commits_and_resumes(fresh_2_8, api_version, offsets_version):
    topic, group = f"kafka-python-0-8-{offsets_version}", f"group-{offsets_version}"
    fresh_2_8.apis.create_topic(topic, 1)
    produce(fresh_2_8, topic)
    tp = TopicPartition(topic, 0)

    first = consumer(fresh_2_8, api_version, group)
    try:
        first.assign([tp])
        got = [next(first).offset for _ in range(4)]
        first.commit()
        assert first.committed(tp) == 4
    finally:
        first.close(autocommit=False)
    assert got == [0, 1, 2, 3]

    second = consumer(fresh_2_8, api_version, group)
    try:
        second.assign([tp])
        rest = [next(second).offset for _ in range(N - 4)]
    finally:
        second.close(autocommit=False)
    assert rest == list(range(4, N))
    seen = fresh_2_8.apis.metrics.requests_seen
    assert seen(ApiKey.OFFSET_COMMIT) == [offsets_version]
    assert seen(ApiKey.OFFSET_FETCH) == [offsets_version]
    assert seen(ApiKey.FETCH) == [0]


# --- the admin APIs at v0 -------------------------------------------------------------------

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture
def secured_2_8():
    """Kafka 2.8 with StandardAuthorizer; the plaintext client (User:ANONYMOUS) a super user."""
    with running_server(make_config(as_version="2.8", authorizer_class_name=STANDARD,
                                    super_users=("User:ANONYMOUS",))) as server:
        yield server


def topic_acl(name: str, operation) -> ACL:
    return ACL("User:alice", "*", operation, ACLPermissionType.ALLOW,
               ResourcePattern(ResourceType.TOPIC, name, ACLResourcePatternType.LITERAL))


def test_kafka_python_1_0_admin_uses_the_v0_admin_apis(secured_2_8):
    server = secured_2_8
    server.apis.create_topic("orders", 1, {"retention.ms": 3_600_000})
    everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(ResourceType.ANY, None,
                                                 ACLResourcePatternType.ANY))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(server), api_version=(1, 0))
    try:
        created = admin.create_acls([topic_acl("orders", ACLOperation.READ),
                                     topic_acl("orders", ACLOperation.WRITE)])
        assert created["failed"] == [] and len(created["succeeded"]) == 2
        acls, error = admin.describe_acls(everything)
        assert error.errno == 0
        assert sorted(a.operation.name for a in acls) == ["READ", "WRITE"]
        # kafka-python lists the configs whose is_default is false as "modified";
        # Kafka 2.8's broker set it on none (see describe_configs.py), so all are
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")])
        entries = modified["topic"]["orders"]
        assert len(entries) > 20 and not any(e["is_default"] for e in entries.values())
        entry = entries["retention.ms"]
        assert entry["value"] == "3600000"
        assert entry["config_source"] == "DYNAMIC_TOPIC_CONFIG"   # kafka-python reads v0 so
        [dirs] = admin.describe_log_dirs()
        assert [t["name"] for d in dirs["log_dirs"] for t in d["topics"]] == ["orders"]
        [(_, deleted, error)] = admin.delete_acls([everything])
        assert error.errno == 0 and len(deleted) == 2
        assert admin.describe_acls(everything)[0] == []
    finally:
        admin.close()
    seen = server.apis.metrics.requests_seen
    for key in (ApiKey.CREATE_ACLS, ApiKey.DESCRIBE_ACLS, ApiKey.DELETE_ACLS,
                ApiKey.DESCRIBE_CONFIGS, ApiKey.DESCRIBE_LOG_DIRS):
        assert seen(key) == [0], key
