"""CreateTopics (19) validates and stores topic configs."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.handlers.conftest import create_topic, describe, overrides


def test_configs_are_stored_and_described(broker):
    result = create_topic(broker, configs={"retention.ms": "5000", "cleanup.policy": "compact"})
    assert result["error_code"] == ErrorCode.NONE
    listed = {c["name"]: (c["value"], c["config_source"]) for c in result["configs"]}
    assert listed["retention.ms"] == ("5000", 1) and listed["segment.bytes"][1] == 5
    assert overrides(broker) == {"retention.ms": "5000", "cleanup.policy": "compact"}


def test_an_invalid_config_refuses_the_topic(broker):
    result = create_topic(broker, configs={"cleanup.policy": "nonsense"})
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        "Invalid value nonsense for configuration cleanup.policy: String must be one of: "
        "compact, delete")
    assert broker.metadata_cache.topic("t") is None
    small = create_topic(broker, configs={"segment.bytes": "1048575"})
    assert (small["error_code"], small["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576")
    unknown = create_topic(broker, configs={"retention.hours": "1"})
    assert unknown["error_message"] == "Unknown topic config name: retention.hours"


def test_validate_only_stores_nothing(broker):
    result = create_topic(broker, configs={"retention.ms": "5000"}, validate_only=True)
    assert result["error_code"] == ErrorCode.NONE
    assert broker.metadata_cache.topic("t") is None
    assert broker.apis.config_repository.topic_overrides("t") == {}


def test_a_deleted_and_recreated_topic_starts_from_the_defaults(broker):
    create_topic(broker, configs={"retention.ms": "5000"})
    assert broker.apis.delete_topic("t")
    create_topic(broker)
    assert overrides(broker) == {}
    assert describe(broker, keys=["retention.ms"])["configs"][0]["value"] == "604800000"
