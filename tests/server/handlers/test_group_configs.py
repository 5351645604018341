"""GROUP config resources (Kafka 4.0, KIP-848): described, altered with Kafka's
GroupConfig validation, and read by the consumer group coordinator per group."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.config_helper import ConfigSource
from tests.server.handlers.conftest import APPEND, DELETE, SET, ConfigResource

GROUP = 32
alter, described = ConfigResource(GROUP).alter, ConfigResource(GROUP).described


def test_a_group_describes_every_group_config_with_its_source(broker):
    result = described(broker, "no-such-group-yet")
    assert result["error_code"] == ErrorCode.NONE
    entries = {c["name"]: (c["value"], c["config_source"]) for c in result["configs"]}
    assert entries == {
        "consumer.heartbeat.interval.ms": ("5000", ConfigSource.DEFAULT_CONFIG),
        "consumer.session.timeout.ms": ("45000", ConfigSource.DEFAULT_CONFIG),
        "errors.deadletterqueue.copy.record.enable": ("false", ConfigSource.DEFAULT_CONFIG),
        "errors.deadletterqueue.topic.name": ("", ConfigSource.DEFAULT_CONFIG),
        "share.auto.offset.reset": ("latest", ConfigSource.DEFAULT_CONFIG),
        "share.heartbeat.interval.ms": ("5000", ConfigSource.DEFAULT_CONFIG),
        "share.isolation.level": ("read_uncommitted", ConfigSource.DEFAULT_CONFIG),
        "share.record.lock.duration.ms": ("30000", ConfigSource.DEFAULT_CONFIG),
        "share.session.timeout.ms": ("45000", ConfigSource.DEFAULT_CONFIG),
        "streams.acceptable.recovery.lag": ("10000", ConfigSource.DEFAULT_CONFIG),
        "streams.heartbeat.interval.ms": ("5000", ConfigSource.DEFAULT_CONFIG),
        "streams.initial.rebalance.delay.ms": ("3000", ConfigSource.DEFAULT_CONFIG),
        "streams.num.standby.replicas": ("0", ConfigSource.DEFAULT_CONFIG),
        "streams.num.warmup.replicas": ("2", ConfigSource.DEFAULT_CONFIG),
        "streams.session.timeout.ms": ("45000", ConfigSource.DEFAULT_CONFIG),
        "streams.task.offset.interval.ms": ("60000", ConfigSource.DEFAULT_CONFIG)}
    assert alter(broker, "g1", ("consumer.session.timeout.ms", SET, "50000"))["error_code"] == 0
    entries = {c["name"]: c for c in described(broker, "g1")["configs"]}
    assert (entries["consumer.session.timeout.ms"]["value"],
            entries["consumer.session.timeout.ms"]["config_source"]) == (
        "50000", ConfigSource.GROUP_CONFIG)
    assert alter(broker, "g1", ("consumer.session.timeout.ms", DELETE, None))["error_code"] == 0
    assert broker.apis.group_configs.overrides("g1") == {}


def test_a_dead_letter_topic_is_named_with_kafka_s_prefix(broker):
    """KIP-1191: the group's dead-letter topic starts with dlq. (Kafka's default
    errors.deadletterqueue.topic.name.prefix), is no internal topic; copy is a boolean."""
    name = "errors.deadletterqueue.topic.name"
    assert alter(broker, "g1", (name, SET, "dlq.orders"))["error_code"] == 0
    for bad in ("orders", "__consumer_offsets"):
        refused = alter(broker, "g1", (name, SET, bad))
        assert refused["error_code"] == ErrorCode.INVALID_CONFIG, bad
        assert name in refused["error_message"]
    refused = alter(broker, "g1", ("errors.deadletterqueue.copy.record.enable", SET, "yes"))
    assert refused["error_code"] == ErrorCode.INVALID_CONFIG


def test_kafkas_group_config_validation(broker):
    def refused(*ops):
        result = alter(broker, "g", *ops)
        assert result["error_code"] == ErrorCode.INVALID_CONFIG, result
        return result["error_message"]
    assert refused(("bogus", SET, "1")) == "Unknown group config name: bogus"
    assert refused(("consumer.session.timeout.ms", SET, "x")) == \
        "Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT"
    assert refused(("consumer.session.timeout.ms", SET, "0")) == \
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"
    assert refused(("consumer.session.timeout.ms", SET, "30000")) == \
        "consumer.session.timeout.ms must be greater than or equal to " \
        "group.consumer.min.session.timeout.ms"
    assert refused(("consumer.heartbeat.interval.ms", SET, "20000")) == \
        "consumer.heartbeat.interval.ms must be less than or equal to " \
        "group.consumer.max.heartbeat.interval.ms"
    assert refused(("share.record.lock.duration.ms", SET, "1000")) == \
        "share.record.lock.duration.ms must be greater than or equal to " \
        "group.share.min.record.lock.duration.ms"
    assert refused(("consumer.session.timeout.ms", APPEND, "1")) == \
        "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."
    empty = alter(broker, "", ("consumer.session.timeout.ms", SET, "50000"))
    assert (empty["error_code"], empty["error_message"]) == (
        ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    assert described(broker, "")["error_code"] == ErrorCode.INVALID_REQUEST
    assert alter(broker, "g", ("consumer.heartbeat.interval.ms", SET, "6000"),
                 validate_only=True)["error_code"] == 0
    assert broker.apis.group_configs.overrides("g") == {}


def test_legacy_alter_configs_replaces_a_groups_set(broker):
    alter(broker, "g", ("consumer.heartbeat.interval.ms", SET, "6000"))
    body = broker.call(ApiKey.ALTER_CONFIGS, 2, resources=[
        {"resource_type": GROUP, "resource_name": "g",
         "configs": [{"name": "consumer.session.timeout.ms", "value": "55000"}]}])
    assert body["responses"][0]["error_code"] == 0
    assert broker.apis.group_configs.overrides("g") == {"consumer.session.timeout.ms": 55000}


def test_the_consumer_group_heartbeat_interval_follows_the_group_config(broker):
    broker.create_topic("t")

    def join(group):
        body = broker.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id="",
                           member_epoch=0, rebalance_timeout_ms=30000,
                           subscribed_topic_names=["t"], topic_partitions=[])
        assert body["error_code"] == ErrorCode.NONE, body
        return body["heartbeat_interval_ms"]
    assert alter(broker, "tuned", ("consumer.heartbeat.interval.ms", SET, "7000"))[
        "error_code"] == 0
    assert join("tuned") == 7000
    assert join("plain") == 5000


def test_share_auto_offset_reset_is_a_string_config_kafka_validates(broker):
    assert alter(broker, "sg", ("share.auto.offset.reset", SET, "earliest"))["error_code"] == 0
    assert broker.apis.group_configs.value("sg", "share.auto.offset.reset") == "earliest"
    assert alter(broker, "sg", ("share.auto.offset.reset", SET, "by_duration:PT1H30M")
                 )["error_code"] == 0
    entries = {c["name"]: c for c in described(broker, "sg")["configs"]}
    assert entries["share.auto.offset.reset"]["value"] == "by_duration:PT1H30M"
    for bad in ("newest", "by_duration:1h", "by_duration:"):
        result = alter(broker, "sg", ("share.auto.offset.reset", SET, bad))
        assert result["error_code"] == ErrorCode.INVALID_CONFIG, bad
    assert alter(broker, "sg", ("share.isolation.level", SET, "read_committed"))["error_code"] == 0
    assert alter(broker, "sg", ("share.isolation.level", SET, "dirty"))["error_code"] == \
        ErrorCode.INVALID_CONFIG


def test_streams_group_configs_are_validated_against_the_broker_bounds(broker):
    refused = alter(broker, "sg", ("streams.num.standby.replicas", SET, "3"))
    assert (refused["error_code"], refused["error_message"]) == (
        ErrorCode.INVALID_CONFIG, "streams.num.standby.replicas must be less than or equal "
        "to group.streams.max.standby.replicas")
    assert alter(broker, "sg", ("streams.heartbeat.interval.ms", SET, "4000"))[
        "error_message"] == ("streams.heartbeat.interval.ms must be greater than or equal "
                             "to group.streams.min.heartbeat.interval.ms")
    assert alter(broker, "sg", ("streams.num.standby.replicas", SET, "1"))["error_code"] == 0
    assert broker.apis.group_configs.overrides("sg") == {"streams.num.standby.replicas": 1}


def test_kafka_4_4_streams_warmup_configs(broker):
    """streams.acceptable.recovery.lag is a LONG (Kafka's ConfigDef), the warm-up
    budget and the offset interval INTs with Kafka's lower bounds."""
    lag = "streams.acceptable.recovery.lag"
    assert alter(broker, "sw", (lag, SET, str(2**40)))["error_code"] == 0
    assert alter(broker, "sw", ("streams.num.warmup.replicas", SET, "0"))["error_code"] == 0
    assert broker.apis.group_configs.overrides("sw") == {
        lag: 2**40, "streams.num.warmup.replicas": 0}
    types = {c["name"]: c["config_type"] for c in described(broker, "sw")["configs"]}
    assert (types[lag], types["streams.num.warmup.replicas"]) == (5, 3)   # LONG, INT
    for name, bad, why in ((lag, "-1", "Value must be at least 0"),
                           (lag, str(2**63), "Not a number of type LONG"),
                           ("streams.num.warmup.replicas", "-1", "Value must be at least 0"),
                           ("streams.task.offset.interval.ms", "0",
                            "Value must be at least 1")):
        refused = alter(broker, "sw", (name, SET, bad))
        assert refused["error_code"] == ErrorCode.INVALID_CONFIG, (name, bad)
        assert why in refused["error_message"], refused["error_message"]
