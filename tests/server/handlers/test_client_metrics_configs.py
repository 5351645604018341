"""Client metrics subscriptions (KIP-714) as CLIENT_METRICS config resources:
altered and described as Kafka does, validated with Kafka's messages, listed by
ListConfigResources (API key 74, v0 and v1), kept in the metadata log across a
restart, and guarded by ACLs on the cluster."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.config_helper import ConfigSource
from tests.server.handlers.conftest import (
    APPEND, DELETE, SET, SUBTRACT, ConfigResource, incremental)
from tests.server.handlers.test_acl_checks import answer, grant, secured_broker
from tests.server.test_metadata_restart import Store, restart

CLIENT_METRICS = 16
alter, described = ConfigResource(CLIENT_METRICS).alter, ConfigResource(CLIENT_METRICS).described


def listed(broker, version=1, types=()):
    body = broker.call(ApiKey.LIST_CLIENT_METRICS_RESOURCES, version, resource_types=list(types))
    return body["error_code"], [(r["resource_name"], r["resource_type"])
                                for r in body["config_resources"]]


def test_a_subscription_is_set_described_listed_and_removed(broker):
    assert alter(broker, "sub", ("metrics", SET, "org.apache.kafka.producer."),
                 ("interval.ms", SET, "1000"),
                 ("match", SET, "client_id=app.*"))["error_code"] == ErrorCode.NONE
    result = described(broker, "sub")
    assert result["error_code"] == ErrorCode.NONE
    assert {c["name"]: (c["value"], c["config_source"], c["read_only"])
            for c in result["configs"]} == {
        "interval.ms": ("1000", ConfigSource.CLIENT_METRICS_CONFIG, False),
        "match": ("client_id=app.*", ConfigSource.CLIENT_METRICS_CONFIG, False),
        "metrics": ("org.apache.kafka.producer.", ConfigSource.CLIENT_METRICS_CONFIG, False)}
    assert listed(broker, 0) == (ErrorCode.NONE, [("sub", CLIENT_METRICS)])
    assert listed(broker, 1, [CLIENT_METRICS]) == (ErrorCode.NONE, [("sub", CLIENT_METRICS)])
    # APPEND / SUBTRACT work on the LIST keys.
    assert alter(broker, "sub", ("metrics", APPEND, "org.apache.kafka.consumer."),
                 ("match", SUBTRACT, "client_id=app.*"))["error_code"] == ErrorCode.NONE
    assert broker.apis.client_metrics.configs("sub") == {
        "metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.",
        "interval.ms": "1000", "match": ""}
    # Every key deleted: the subscription is gone (Kafka's updateSubscription).
    assert alter(broker, "sub", ("metrics", DELETE, None), ("interval.ms", DELETE, None),
                 ("match", DELETE, None))["error_code"] == ErrorCode.NONE
    assert listed(broker, 0) == (ErrorCode.NONE, [])
    assert described(broker, "sub")["configs"] == []   # unknown: no entries, no error


def test_alter_configs_replaces_the_whole_set(broker):
    alter(broker, "s", ("metrics", SET, "a"), ("interval.ms", SET, "500"))
    body = broker.call(ApiKey.ALTER_CONFIGS, 2, validate_only=False, resources=[
        {"resource_type": CLIENT_METRICS, "resource_name": "s",
         "configs": [{"name": "metrics", "value": "b"}]}])
    assert body["responses"][0]["error_code"] == ErrorCode.NONE
    assert broker.apis.client_metrics.configs("s") == {"metrics": "b"}


def test_validate_only_stores_nothing(broker):
    assert alter(broker, "s", ("metrics", SET, "*"), validate_only=True)["error_code"] == 0
    assert broker.apis.client_metrics.list_resources() == []


def test_kafkas_validation_and_messages(broker):
    def refused(*ops, name="s"):
        result = alter(broker, name, *ops)
        return result["error_code"], result["error_message"]
    assert refused(("metrics", SET, "*"), name="") == (
        ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    assert refused(("bogus", SET, "1")) == (
        ErrorCode.INVALID_REQUEST, "Unknown client metrics configuration: bogus")
    for interval in ("99", "3600001"):
        assert refused(("interval.ms", SET, interval)) == (
            ErrorCode.INVALID_REQUEST, f"Invalid value {interval} for interval.ms, interval "
                                       "must be between 100 and 3600000 (1 hour)")
    assert refused(("interval.ms", SET, "soon")) == (
        ErrorCode.INVALID_CONFIG,
        "Invalid value soon for configuration interval.ms: Not a number of type INT")
    for pattern in ("client_id", "client_id=a=b", "hostname=x", "client_id=(", "=x"):
        assert refused(("match", SET, pattern)) == (
            ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
    assert refused(("interval.ms", APPEND, "5")) == (
        ErrorCode.INVALID_CONFIG, "Can't APPEND to key interval.ms because its type is not LIST.")
    assert broker.apis.client_metrics.list_resources() == []
    empty = described(broker, "")
    assert (empty["error_code"], empty["error_message"]) == (
        ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")


def test_list_config_resources_v1_lists_the_five_types(rich):
    alter(rich, "sub", ("metrics", SET, "*"))
    incremental(rich, ("consumer.session.timeout.ms", SET, "50000"), name="configured",
                resource_type=32)
    error, resources = listed(rich, 1)
    assert error == ErrorCode.NONE
    assert sorted(resources) == sorted([
        ("__consumer_offsets", 2), ("t", 2), ("u", 2), ("1", 4), ("1", 8), ("sub", CLIENT_METRICS),
        ("configured", 32), ("g", 32)])
    assert listed(rich, 1, [4, 4]) == (ErrorCode.NONE, [("1", 4)])
    # A type v1 does not cover is UNSUPPORTED_VERSION, as Kafka answers it.
    assert listed(rich, 1, [2, 1]) == (ErrorCode.UNSUPPORTED_VERSION, [])


def test_subscriptions_are_replayed_from_the_metadata_log():
    store = Store()
    b = store.broker()
    alter(b, "kept", ("metrics", SET, "org.apache.kafka."), ("interval.ms", SET, "2000"))
    alter(b, "gone", ("metrics", SET, "*"))
    alter(b, "gone", ("metrics", DELETE, None))
    b.apis.controller.metadata_log.snapshot()   # the snapshot writes them too
    b = restart(store, b)
    try:
        assert b.apis.client_metrics.list_resources() == ["kept"]
        assert b.apis.client_metrics.configs("kept") == {
            "metrics": "org.apache.kafka.", "interval.ms": "2000"}
    finally:
        b.stop()


def test_acls_on_the_cluster_guard_client_metrics():
    b = secured_broker()
    try:
        b.principal = "User:nobody"
        assert alter(b, "s", ("metrics", SET, "*"))["error_code"] == \
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert described(b, "s")["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        body = answer(b, ApiKey.LIST_CLIENT_METRICS_RESOURCES, 0, {})
        assert body["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        grant(b, ResourceType.CLUSTER, "kafka-cluster", "User:nobody", AclOperation.ALTER_CONFIGS)
        grant(b, ResourceType.CLUSTER, "kafka-cluster", "User:nobody",
              AclOperation.DESCRIBE_CONFIGS)
        assert alter(b, "s", ("metrics", SET, "*"))["error_code"] == ErrorCode.NONE
        assert described(b, "s")["error_code"] == ErrorCode.NONE
        assert answer(b, ApiKey.LIST_CLIENT_METRICS_RESOURCES, 0, {})["config_resources"] == [
            {"resource_name": "s", "resource_type": CLIENT_METRICS}]   # v0: the default
    finally:
        b.stop()
