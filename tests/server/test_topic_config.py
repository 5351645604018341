"""Topic configs as data: parsing, validation and printing as Kafka's ConfigDef does."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from kafka_net.config.errors import InvalidConfig
from kafka_net.config.topic_keys import TOPIC_CONFIGS, parse_value, to_string
from kafka_net.server.config_repository import ConfigRepository


@pytest.mark.parametrize("name,raw,parsed,printed", [
    ("retention.ms", " 1000 ", 1000, "1000"),
    ("retention.ms", "-1", -1, "-1"),
    ("cleanup.policy", "compact , delete", ["compact", "delete"], "compact,delete"),
    ("cleanup.policy", "", [], ""),
    ("preallocate", "TRUE", True, "true"),
    ("min.cleanable.dirty.ratio", "0.25", 0.25, "0.25"),
    ("min.cleanable.dirty.ratio", "1", 1.0, "1.0"),
    ("message.timestamp.type", "LogAppendTime", "LogAppendTime", "LogAppendTime"),
    ("compression.gzip.level", "-1", -1, "-1"),
    ("leader.replication.throttled.replicas", "0:1,1:1", ["0:1", "1:1"], "0:1,1:1"),
])
def test_values_parse_and_print_as_kafka(name, raw, parsed, printed):
    assert parse_value(name, raw) == parsed
    assert to_string(TOPIC_CONFIGS[name], parsed) == printed


@pytest.mark.parametrize("name,raw,message", [
    ("max.message.bytes", "99999999999",
     "Invalid value 99999999999 for configuration max.message.bytes: Not a number of type INT"),
    ("preallocate", "yes",
     "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ("min.cleanable.dirty.ratio", "1.5",
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more "
     "than 1"),
    ("compression.type", "brotli",
     "Invalid value brotli for configuration compression.type: String must be one of: "
     "uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("compression.lz4.level", "18",
     "Invalid value 18 for configuration compression.lz4.level: Value must be between 1 "
     "and 17"),
    # Kafka 4's floor (KIP-1030); internal.segment.bytes is the tests' way below it
    ("segment.bytes", "1048575",
     "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"),
    ("retention.hours", "1", "Unknown topic config name: retention.hours"),
    ("retention.ms", None, "Null value not supported for topic configs: retention.ms"),
])
def test_bad_values_get_kafkas_messages(name, raw, message):
    with pytest.raises(InvalidConfig) as info:
        parse_value(name, raw)
    assert str(info.value) == message


def test_every_default_passes_its_own_validator():
    for definition in TOPIC_CONFIGS.values():
        if definition.default is None:
            continue   # internal.segment.bytes: unset unless a topic sets it
        printed = to_string(definition, definition.default)
        assert parse_value(definition.name, printed) == definition.default


def test_internal_segment_bytes_goes_below_the_floor_and_wins_over_segment_bytes():
    repository = ConfigRepository()
    overrides = repository.validate("t", {"internal.segment.bytes": "1024",
                                          "segment.bytes": "1048576"})
    repository.set_topic_config("t", overrides)
    config = repository.log_config("t")
    assert config.segment_bytes == config.segment.segment_bytes == 1024
    assert repository.log_config("other").segment_bytes == 1073741824


def test_remote_storage_is_refused_as_kafka_does_without_tiered_storage():
    with pytest.raises(InvalidConfig, match="Tiered Storage functionality is disabled"):
        ConfigRepository().validate("t", {"remote.storage.enable": "true"})


@given(name=st.sampled_from(sorted(TOPIC_CONFIGS)), raw=st.text(max_size=30))
def test_any_string_parses_or_is_invalid_config(name, raw):
    try:
        value = parse_value(name, raw)
    except InvalidConfig as exc:
        assert str(exc)
    else:   # what parses prints back to something that parses to the same value
        assert parse_value(name, to_string(TOPIC_CONFIGS[name], value)) == value


@pytest.mark.parametrize("raw", ["1_000", "\u0661", "0x10", "1.0", ""])
def test_integers_are_read_as_java_reads_them(raw):
    with pytest.raises(InvalidConfig, match="Not a number of type LONG"):
        parse_value("retention.ms", raw)


@pytest.mark.parametrize("value", ["0.10.0.0", "0.10.0", "0.10.0-IV1", "0.8.2.2", "1.0",
                                   "2.8.1", "3.0-IV1", "3.9", "4.0-IV3"])
def test_message_format_version_takes_what_kafkas_validator_takes(value):
    # MetadataVersion.fromVersionString: 3 parts of a 0.x version, 2 otherwise
    assert parse_value("message.format.version", value) == value


@pytest.mark.parametrize("value", ["0.7", "9.9", "3.0-IV9", "abc", ""])
def test_message_format_version_refuses_unknown_versions(value):
    with pytest.raises(InvalidConfig, match=f"Version {value} is not a valid version"):
        parse_value("message.format.version", value)
