"""IncrementalAlterConfigs (44): SET, DELETE, APPEND, SUBTRACT; errors; validate_only."""

from __future__ import annotations

import threading

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import (
    APPEND, BROKER, DELETE, SET, SUBTRACT, create_topic, incremental, overrides, versions)


@pytest.mark.parametrize("version", versions(ApiKey.INCREMENTAL_ALTER_CONFIGS))
def test_set_and_delete_change_single_keys(broker, version):
    create_topic(broker, configs={"retention.ms": "5000", "segment.bytes": "2000000"})
    result = incremental(broker, ("retention.ms", SET, "6000"), ("segment.bytes", DELETE, None),
                         ("flush.ms", DELETE, None), version=version)
    assert (result["error_code"], result["error_message"]) == (ErrorCode.NONE, None)
    assert overrides(broker) == {"retention.ms": "6000"}


def test_append_and_subtract_on_a_list(broker):
    create_topic(broker)
    assert incremental(broker, ("cleanup.policy", APPEND, "compact"))["error_code"] == 0
    assert overrides(broker) == {"cleanup.policy": "delete,compact"}  # from the default
    assert incremental(broker, ("cleanup.policy", APPEND, "compact"))["error_code"] == 0
    assert overrides(broker) == {"cleanup.policy": "delete,compact"}  # no duplicate
    assert incremental(broker, ("cleanup.policy", SUBTRACT, "delete"))["error_code"] == 0
    assert overrides(broker) == {"cleanup.policy": "compact"}


def test_append_to_a_non_list_is_invalid_config(broker):
    create_topic(broker)
    result = incremental(broker, ("retention.ms", APPEND, "1"))
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        "Can't APPEND to key retention.ms because its type is not LIST.")


def test_bad_values_and_unknown_names(broker):
    create_topic(broker)
    bad = incremental(broker, ("cleanup.policy", SET, "nonsense"))
    assert (bad["error_code"], bad["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        "Invalid value nonsense for configuration cleanup.policy: String must be one of: "
        "compact, delete")
    small = incremental(broker, ("segment.bytes", SET, "1024"))
    assert (small["error_code"], small["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        "Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576")
    unknown = incremental(broker, ("bogus", SET, "1"))
    assert unknown["error_message"] == "Unknown topic config name: bogus"
    assert incremental(broker, ("retention.ms", 7, "1"))["error_code"] == \
        ErrorCode.INVALID_REQUEST
    null = incremental(broker, ("retention.ms", SET, None))
    assert null["error_message"] == "Null value not supported for : retention.ms"
    assert overrides(broker) == {}


def test_validate_only_changes_nothing(broker):
    create_topic(broker)
    assert incremental(broker, ("retention.ms", SET, "1"), validate_only=True)["error_code"] == 0
    assert overrides(broker) == {}


def test_unknown_topic_and_broker(broker):
    missing = incremental(broker, ("retention.ms", SET, "1"), name="missing")
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    refused = incremental(broker, ("num.partitions", SET, "1"), name="",
                          resource_type=BROKER)
    assert refused["error_code"] == ErrorCode.INVALID_REQUEST
    assert refused["error_message"] == \
        "Cannot update these configs dynamically: Set(num.partitions)"
    not_a_node = incremental(broker, ("log.retention.ms", SET, "1"), name="x",
                             resource_type=BROKER)
    assert not_a_node["error_message"] == "Node id must be an integer, but it is: x"


def test_concurrent_changes_to_different_keys_all_land(broker):
    create_topic(broker)
    keys = [("retention.ms", "1000"), ("segment.bytes", "2000000"), ("flush.ms", "3000"),
            ("retention.bytes", "4000"), ("segment.ms", "5000"), ("flush.messages", "6000")]
    barrier = threading.Barrier(len(keys))

    def change(name, value):
        barrier.wait()
        assert incremental(broker, (name, SET, value))["error_code"] == 0

    threads = [threading.Thread(target=change, args=kv) for kv in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert overrides(broker) == dict(keys)


def test_sasl_login_refresh_keys_are_per_broker_only(broker):
    """Kafka's per-broker SASL keys (librdkafka 0081): set for this node, refused at
    the cluster-default level as Kafka refuses them, and checked as Kafka's ConfigDef
    checks them."""
    key = "sasl.kerberos.min.time.before.relogin"
    assert incremental(broker, (key, SET, "58000"), name="1",
                       resource_type=BROKER)["error_code"] == ErrorCode.NONE
    assert broker.apis.dynamic_config.scope_values("1")[key] == "58000"
    cluster = incremental(broker, (key, SET, "58000"), name="", resource_type=BROKER)
    assert (cluster["error_code"], cluster["error_message"]) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs at default cluster level, "
        f"broker id must be specified: Set({key})")
    for name, bad in (("sasl.login.refresh.window.factor", "0.2"),
                      ("sasl.login.refresh.min.period.seconds", "lots"), (key, "1.5")):
        refused = incremental(broker, (name, SET, bad), name="1", resource_type=BROKER)
        assert refused["error_code"] == ErrorCode.INVALID_REQUEST
        assert refused["error_message"].startswith(f"Invalid value {bad} for configuration {name}")
