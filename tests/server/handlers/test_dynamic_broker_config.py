"""Dynamic broker configs: AlterConfigs / IncrementalAlterConfigs on BROKER resources
(Kafka's DynamicBrokerConfig and ConfigAdminManager), DescribeConfigs' sources."""

from __future__ import annotations

import time

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.config_helper import ConfigSource
from kafka_net.server import dynamic_config
from kafka_net.server.dynamic_config import DynamicBrokerConfig
from kafka_net.config import ServerConfig
from tests.server.handlers.conftest import (
    BROKER, DELETE, SET, APPEND, create_topic, incremental, produce, records)


def alter(broker, name, *ops, validate_only=False):
    return incremental(broker, *ops, name=name, resource_type=BROKER,
                       validate_only=validate_only)


def broker_config(broker, name="1"):
    body = broker.call(ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=True, resources=[
        {"resource_type": BROKER, "resource_name": name, "configuration_keys": None}])
    [result] = body["results"]
    assert result["error_code"] == ErrorCode.NONE, result
    return {c["name"]: c for c in result["configs"]}


def sources(entry):
    return [(s["value"], s["source"]) for s in entry["synonyms"]]


def test_per_broker_and_default_values_and_their_sources(broker):
    assert alter(broker, "", ("max.connections", SET, "500"))["error_code"] == 0
    entry = broker_config(broker)["max.connections"]
    assert (entry["value"], entry["config_source"], entry["read_only"]) == (
        "500", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False)
    assert alter(broker, "1", ("max.connections", SET, "300"))["error_code"] == 0
    entry = broker_config(broker)["max.connections"]
    assert entry["value"] == "300"
    assert sources(entry) == [("300", ConfigSource.DYNAMIC_BROKER_CONFIG),
                              ("500", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                              ("2147483647", ConfigSource.DEFAULT_CONFIG)]
    defaults = broker_config(broker, "")
    assert list(defaults) == ["max.connections"]
    assert defaults["max.connections"]["config_source"] == \
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert alter(broker, "1", ("max.connections", DELETE, None))["error_code"] == 0
    assert broker_config(broker)["max.connections"]["value"] == "500"


def test_log_defaults_apply_to_topics_without_overrides(broker):
    create_topic(broker, "plain")
    create_topic(broker, "own", configs={"segment.bytes": "2000000"})
    assert alter(broker, "", ("log.segment.bytes", SET, "1500000"),
                 ("log.cleanup.policy", APPEND, "compact"))["error_code"] == 0
    repository = broker.apis.config_repository
    assert repository.log_config("plain").segment_bytes == 1500000
    assert repository.log_config("plain").compact
    assert repository.log_config("own").segment_bytes == 2000000
    topic = broker.call(ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=True, resources=[
        {"resource_type": 2, "resource_name": "plain", "configuration_keys": ["segment.bytes"]}])
    [entry] = topic["results"][0]["configs"]
    assert entry["value"] == "1500000"


def test_message_max_bytes_bounds_produce_at_once(broker):
    create_topic(broker)
    assert produce(broker, data=records(1))["error_code"] == ErrorCode.NONE
    assert alter(broker, "1", ("message.max.bytes", SET, "20"))["error_code"] == 0
    assert produce(broker, data=records(1))["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
    assert alter(broker, "1", ("message.max.bytes", DELETE, None))["error_code"] == 0
    assert produce(broker, data=records(1))["error_code"] == ErrorCode.NONE


def test_dynamic_log_retention_is_enforced(broker):
    create_topic(broker)
    old = int(time.time() * 1000) - 3_600_000
    produce(broker, data=records(old))
    produce(broker, data=records(int(time.time() * 1000)))
    assert alter(broker, "", ("log.retention.ms", SET, "60000"))["error_code"] == 0
    assert broker.replica_manager.partition("t", 0).log.log_start_offset == 1


def test_an_override_host_that_does_not_resolve_is_an_invalid_request(broker, monkeypatch):
    # Resolution fails as it would for an unknown name, without asking a DNS server.
    def no_such_host(host):
        raise OSError(f"no address for {host}")
    monkeypatch.setattr(dynamic_config, "resolve_host", no_such_host)
    result = alter(broker, "1", ("max.connections.per.ip.overrides", SET, "db.example:3"))
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Invalid value db.example:3 for configuration max.connections.per.ip.overrides: "
        "cannot resolve a host: no address for db.example")
    assert broker.apis.dynamic_config.scope_values("1") == {}


def test_bad_values_and_validate_only(broker):
    result = alter(broker, "1", ("max.connections", SET, "many"))
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Invalid value many for configuration max.connections: 'many' is not an integer")
    result = alter(broker, "1", ("log.retention.ms", SET, "x"))
    assert result["error_code"] == ErrorCode.INVALID_REQUEST
    assert "for configuration log.retention.ms:" in result["error_message"]
    result = alter(broker, "1", ("log.segment.bytes", SET, "1024"))
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Invalid value 1024 for configuration log.segment.bytes: Value must be at least 1048576")
    result = alter(broker, "1", ("max.connections.per.ip.overrides", SET, "nohost"))
    assert result["error_code"] == ErrorCode.INVALID_REQUEST
    result = alter(broker, "1", ("max.connections", APPEND, "1"))
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_CONFIG, "Config value append is not allowed for config key: "
                                  "max.connections")
    assert alter(broker, "1", ("max.connections", SET, "5"),
                 validate_only=True)["error_code"] == 0
    assert broker.apis.dynamic_config.scope_values("1") == {}


def test_a_custom_key_is_kept_as_kafka_keeps_it(broker):
    assert alter(broker, "1", ("my.own.setting", SET, "x"))["error_code"] == 0
    assert broker.apis.dynamic_config.scope_values("1") == {"my.own.setting": "x"}


def test_legacy_alter_configs_replaces_the_scope(broker):
    assert alter(broker, "1", ("max.connections", SET, "10"))["error_code"] == 0
    body = broker.call(ApiKey.ALTER_CONFIGS, 2, resources=[
        {"resource_type": BROKER, "resource_name": "1",
         "configs": [{"name": "max.connections.per.ip", "value": "7"}]}])
    assert body["responses"][0]["error_code"] == 0
    assert broker.apis.dynamic_config.scope_values("1") == {"max.connections.per.ip": "7"}


def test_reconfigurables_see_the_values_in_effect():
    dynamic = DynamicBrokerConfig(ServerConfig(), 1)
    seen = []
    dynamic.add_reconfigurable(seen.append)
    dynamic.alter("", {"max.connections": "50", "log.retention.ms": "1000"})
    dynamic.alter("1", {"max.connections": "40"})
    assert seen[-1]["max.connections"] == 40 and seen[-1]["log.retention.ms"] == 1000
    assert seen[0]["max.connections"] == 2**31 - 1 and "log.retention.ms" not in seen[0]


def test_dynamic_and_group_configs_survive_a_restart():
    """Written as ConfigRecords (BROKER and GROUP resources) and replayed: the
    restarted broker acts on them (the log default here) before any request."""
    from tests.server.test_metadata_restart import Store, restart
    store = Store()
    broker = store.broker()
    try:
        assert alter(broker, "", ("log.segment.bytes", SET, "1500000"))["error_code"] == 0
        assert alter(broker, "1", ("max.connections", SET, "77"))["error_code"] == 0
        assert incremental(broker, ("consumer.heartbeat.interval.ms", SET, "6000"),
                           name="cg", resource_type=32)["error_code"] == 0
        broker = restart(store, broker)
        dynamic = broker.apis.dynamic_config
        assert dynamic.scope_values("") == {"log.segment.bytes": "1500000"}
        assert dynamic.effective()["max.connections"] == 77
        create_topic(broker, "after")
        assert broker.apis.config_repository.log_config("after").segment_bytes == 1500000
        assert broker.apis.group_configs.overrides("cg") == {
            "consumer.heartbeat.interval.ms": 6000}
    finally:
        broker.stop()
        broker.shutdown()
