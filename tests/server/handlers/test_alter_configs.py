"""AlterConfigs (33): replace semantics, validation, validate_only, broker refusal."""

from __future__ import annotations

import time

import pytest

from kafka_net.log_safety import RateLimitedLog
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server import config_admin
from tests.server.handlers.conftest import (
    BROKER, alter, create_topic, overrides, produce, records, versions)


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_CONFIGS))
def test_alter_replaces_the_whole_set(broker, version):
    create_topic(broker, configs={"retention.ms": "5000", "segment.bytes": "2000000"})
    result = alter(broker, configs={"cleanup.policy": "compact"}, version=version)
    assert (result["error_code"], result["error_message"]) == (ErrorCode.NONE, None)
    assert (result["resource_type"], result["resource_name"]) == (2, "t")
    assert overrides(broker) == {"cleanup.policy": "compact"}


def test_an_empty_set_removes_every_override(broker):
    create_topic(broker, configs={"retention.ms": "5000"})
    assert alter(broker, configs={})["error_code"] == ErrorCode.NONE
    assert overrides(broker) == {}


@pytest.mark.parametrize("configs,message", [
    ({"cleanup.policy": "nonsense"},
     "Invalid value nonsense for configuration cleanup.policy: String must be one of: "
     "compact, delete"),
    ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
    ({"retention.ms": "soon"},
     "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
    ({"retention.ms": "-2"},
     "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ({"segment.bytes": "1024"},
     "Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
])
def test_bad_configs_are_invalid_config_and_change_nothing(broker, configs, message):
    create_topic(broker, configs={"retention.ms": "5000"})
    result = alter(broker, configs=configs)
    assert (result["error_code"], result["error_message"]) == (ErrorCode.INVALID_CONFIG, message)
    assert overrides(broker) == {"retention.ms": "5000"}


def test_null_values_and_duplicates_are_invalid_requests(broker):
    create_topic(broker)
    body = broker.call(ApiKey.ALTER_CONFIGS, 2, validate_only=False, resources=[
        {"resource_type": 2, "resource_name": "t",
         "configs": [{"name": "retention.ms", "value": None}]}])
    assert body["responses"][0]["error_code"] == ErrorCode.INVALID_REQUEST
    assert body["responses"][0]["error_message"] == "Null value not supported for : retention.ms"
    body = broker.call(ApiKey.ALTER_CONFIGS, 2, validate_only=False, resources=[
        {"resource_type": 2, "resource_name": "t", "configs": [
            {"name": "retention.ms", "value": "1"}, {"name": "retention.ms", "value": "2"}]},
        {"resource_type": 2, "resource_name": "u", "configs": []},
        {"resource_type": 2, "resource_name": "u", "configs": []}])
    assert [(r["error_code"], r["error_message"]) for r in body["responses"]] == [
        (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")]


def test_unknown_topic(broker):
    result = alter(broker, name="missing", configs={"retention.ms": "1"})
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing' does not exist.")


def test_validate_only_checks_and_changes_nothing(broker):
    create_topic(broker)
    assert alter(broker, configs={"retention.ms": "1"}, validate_only=True)["error_code"] == 0
    assert overrides(broker) == {}
    bad = alter(broker, configs={"retention.ms": "x"}, validate_only=True)
    assert bad["error_code"] == ErrorCode.INVALID_CONFIG


def test_read_only_broker_configs_cannot_be_changed(broker):
    result = alter(broker, name="1", resource_type=BROKER,
                   configs={"num.partitions": "4", "node.id": "3", "message.max.bytes": "10"})
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: "
                                   "Set(node.id, num.partitions)")
    # Dynamic in Kafka, but not changed at run time by kafka-net: refused, and said so.
    result = alter(broker, name="1", resource_type=BROKER, configs={"num.io.threads": "4"})
    assert result["error_message"].startswith(
        "Cannot update these configs dynamically: Set(num.io.threads) (dynamic in Kafka")
    assert broker.apis.dynamic_config.scope_values("1") == {}
    other = alter(broker, name="2", resource_type=BROKER, configs={"num.io.threads": "4"})
    assert other["error_message"] == "Unexpected broker id, expected 1, but received 2"


def test_retention_bytes_takes_effect_at_once(broker):
    create_topic(broker)
    now = int(time.time() * 1000)   # recent: retention.ms (7 days) keeps them
    for _ in range(3):
        assert produce(broker, data=records(now))["error_code"] == 0
    log = broker.replica_manager.partition("t", 0).log
    one_batch = log.retained_bytes // 3
    assert alter(broker, configs={"retention.bytes": str(one_batch)})["error_code"] == 0
    assert (log.log_start_offset, log.log_end_offset) == (2, 3)


def test_refusals_are_logged_escaped_and_rate_limited(broker, caplog, monkeypatch):
    # A fresh limiter: other tests' refusals must not suppress this one's line.
    monkeypatch.setattr(config_admin, "_refusals", RateLimitedLog(config_admin.log))
    caplog.set_level("INFO", logger="kafka_net.server.config_admin")
    for _ in range(3):
        assert alter(broker, name="bad\nname", configs={})["error_code"] == \
            ErrorCode.INVALID_TOPIC_EXCEPTION
    lines = [r.getMessage() for r in caplog.records if "Refused" in r.getMessage()]
    assert len(lines) == 1 and "bad\\nname" in lines[0] and "\n" not in lines[0]
