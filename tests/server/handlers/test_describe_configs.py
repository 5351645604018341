"""DescribeConfigs (32): topic and broker resources, sources, synonyms, docs, errors."""

from __future__ import annotations

import pytest

from kafka_net.config.topic_keys import TOPIC_CONFIGS
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import make_broker
from tests.server.handlers.conftest import (
    BROKER, DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, config_values,
    create_topic, describe, versions)


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CONFIGS))
def test_a_new_topic_reports_every_config_at_its_default(broker, version):
    create_topic(broker)
    result = describe(broker, version=version)
    assert result["error_code"] == ErrorCode.NONE and result["error_message"] is None
    values = config_values(result)
    # every config but the internal ones (internal.segment.bytes), which a topic
    # that does not set them does not list
    assert set(values) == {n for n, d in TOPIC_CONFIGS.items() if not d.internal}
    assert values["retention.ms"] == "604800000"
    assert values["cleanup.policy"] == "delete"
    assert values["max.message.bytes"] == "1048588"
    assert values["min.cleanable.dirty.ratio"] == "0.5"
    assert values["unclean.leader.election.enable"] == "false"
    for c in result["configs"]:
        assert not c["read_only"] and not c["is_sensitive"]
        assert c["config_source"] == DEFAULT_CONFIG


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CONFIGS))
def test_an_override_is_a_dynamic_topic_config(broker, version):
    create_topic(broker, configs={"retention.ms": " 5000 ", "cleanup.policy": "compact,delete"})
    result = describe(broker, keys=["retention.ms", "cleanup.policy", "segment.bytes"],
                      version=version)
    got = {c["name"]: (c["value"], c["config_source"]) for c in result["configs"]}
    assert got == {"retention.ms": ("5000", DYNAMIC_TOPIC_CONFIG),
                   "cleanup.policy": ("compact,delete", DYNAMIC_TOPIC_CONFIG),
                   "segment.bytes": ("1073741824", DEFAULT_CONFIG)}


def test_synonyms_name_the_override_then_the_broker_setting(broker):
    create_topic(broker, configs={"segment.bytes": "2000000"})
    result = describe(broker, keys=["segment.bytes", "retention.ms"], synonyms=True)
    synonyms = {c["name"]: [(s["name"], s["value"], s["source"]) for s in c["synonyms"]]
                for c in result["configs"]}
    assert synonyms == {
        "segment.bytes": [("segment.bytes", "2000000", DYNAMIC_TOPIC_CONFIG),
                          ("log.segment.bytes", "1073741824", DEFAULT_CONFIG)],
        # log.retention.ms has no default of its own (log.retention.hours does).
        "retention.ms": []}


def test_internal_segment_bytes_is_listed_where_a_topic_sets_it(broker):
    create_topic(broker, configs={"internal.segment.bytes": "1024"})
    values = config_values(describe(broker))
    assert values["internal.segment.bytes"] == "1024"
    assert values["segment.bytes"] == "1073741824"


def test_synonyms_and_documentation_only_when_asked(broker):
    create_topic(broker, configs={"segment.bytes": "2000000"})
    plain = describe(broker, keys=["segment.bytes"])["configs"][0]
    assert plain["synonyms"] == [] and plain["documentation"] is None
    rich = describe(broker, keys=["segment.bytes"], synonyms=True, documentation=True)
    [entry] = rich["configs"]
    assert entry["synonyms"] and "segment" in entry["documentation"]
    assert entry["config_type"] == 3   # INT


def test_a_broker_message_max_bytes_is_the_topic_default():
    b = make_broker(message_max_bytes=2000000)
    create_topic(b)
    [entry] = describe(b, keys=["max.message.bytes"], synonyms=True)["configs"]
    assert (entry["value"], entry["config_source"]) == ("2000000", STATIC_BROKER_CONFIG)
    assert [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]] == [
        ("message.max.bytes", "2000000", STATIC_BROKER_CONFIG),
        ("message.max.bytes", "1048588", DEFAULT_CONFIG)]


def test_unknown_and_illegal_topics_are_errors_for_that_resource_only(broker):
    create_topic(broker)
    body = broker.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
        {"resource_type": 2, "resource_name": "missing", "configuration_keys": None},
        {"resource_type": 2, "resource_name": "bad name", "configuration_keys": None},
        {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]}])
    got = [(r["resource_name"], r["error_code"], len(r["configs"])) for r in body["results"]]
    assert got == [("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0),
                   ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION, 0),
                   ("t", ErrorCode.NONE, 1)]


def test_the_broker_resource_lists_kafka_net_settings_and_what_may_change():
    b = make_broker(num_partitions=3)
    result = describe(b, name="1", resource_type=BROKER, synonyms=True)
    entries = {c["name"]: c for c in result["configs"]}
    assert entries["num.partitions"]["value"] == "3"
    assert entries["num.partitions"]["config_source"] == STATIC_BROKER_CONFIG
    assert entries["message.max.bytes"]["config_source"] == DEFAULT_CONFIG
    assert entries["auto.create.topics.enable"]["value"] == "true"
    assert [s["source"] for s in entries["num.partitions"]["synonyms"]] == \
        [STATIC_BROKER_CONFIG, DEFAULT_CONFIG]
    writable = {c["name"] for c in result["configs"] if not c["read_only"]}
    assert {"max.connections", "max.connections.per.ip", "max.connection.creation.rate",
            "max.connections.per.ip.overrides", "message.max.bytes", "log.retention.ms",
            "log.segment.bytes", "log.cleanup.policy"} <= writable
    assert not writable & {"num.partitions", "node.id", "num.io.threads", "listeners"}


def test_broker_resource_names(broker):
    assert describe(broker, name="", resource_type=BROKER)["configs"] == []
    wrong = describe(broker, name="7", resource_type=BROKER)
    assert wrong["error_code"] == ErrorCode.INVALID_REQUEST
    assert wrong["error_message"] == \
        "Unexpected broker id, expected 1 or empty string, but received 7"


def test_other_resource_types_are_invalid_requests(broker):
    for resource_type in (8, 0, 99):   # CLIENT_METRICS (16): test_client_metrics_configs.py
        result = describe(broker, name="x", resource_type=resource_type)
        assert result["error_code"] == ErrorCode.INVALID_REQUEST
        assert "Unsupported resource type" in result["error_message"]


def test_v0_is_not_served_as_in_kafka_4(broker):
    assert versions(ApiKey.DESCRIBE_CONFIGS) == [1, 2, 3, 4]
