"""Topic configs as data: Kafka's names, types, defaults, validators and broker synonyms.

Source: apache/kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(``LogConfig.java``'s ``CONFIG`` definitions, ``TopicConfig.java``'s names,
``ServerLogConfigs.java``'s defaults and ``ServerTopicConfigSynonyms.java``'s
broker synonyms).  That commit (October 2024) predates Kafka 4.0, which
dropped ``message.format.version`` and ``message.timestamp.difference.max.ms``
(KIP-724, KIP-937); they are kept here as the source has them.  This is a
declarative table, so it is longer than most modules.

Values are parsed as Kafka's ``ConfigDef.parseType`` does (trimmed; a list
is split on commas) and reported as ``ConfigDef.convertToString`` writes
them; a bad value raises :class:`InvalidConfig` with Kafka's wording
(``Invalid value X for configuration Y: ...``).

Only some configs change what this broker does (:data:`EFFECTIVE`); the
others are validated, stored and described, as a single node has nothing for
them to act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from kafka_net.config.errors import InvalidConfig
from kafka_net.config.values import INT_MAX, LONG_MAX

# DescribeConfigsResponse.ConfigType
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7
_TYPE_NAMES = {BOOLEAN: "BOOLEAN", STRING: "STRING", INT: "INT", SHORT: "SHORT",
               LONG: "LONG", DOUBLE: "DOUBLE", LIST: "LIST"}


def _invalid(name: str, value: Any, message: str) -> InvalidConfig:
    # ConfigException(name, value, message)
    return InvalidConfig(f"Invalid value {value} for configuration {name}: {message}")


# -- validators (ConfigDef.Range, ValidString, ValidList, ...) -------------------------

Validator = Callable[[str, Any], None]


def at_least(low: int) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < low:
            raise _invalid(name, value, f"Value must be at least {low}")
    return check


def between(low, high) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < low:
            raise _invalid(name, value, f"Value must be at least {low}")
        if value > high:
            raise _invalid(name, value, f"Value must be no more than {high}")
    return check


def one_of(*choices: str) -> Validator:
    def check(name: str, value: Any) -> None:
        for item in (value if isinstance(value, list) else [value]):
            if item not in choices:
                raise _invalid(name, item, "String must be one of: " + ", ".join(choices))
    return check


def _level(low: int, high: int, default: int | None = None) -> Validator:
    """Compression level ranges (``CompressionType.X.levelValidator()``)."""
    def check(name: str, value: Any) -> None:
        if low <= value <= high or value == default:
            return
        also = f" or equal to {default}" if default is not None else ""
        raise _invalid(name, value, f"Value must be between {low} and {high}{also}")
    return check


# MetadataVersion's ibpVersion strings, oldest first (Kafka's MetadataVersion enum,
# 0.8.0 to 4.0-IV3).  message.format.version is validated against them and then
# ignored: every version from 3.0 writes record batch v2 (KIP-724).
_IBP_VERSIONS = (
    "0.8.0 0.8.1 0.8.2 0.9.0 0.10.0-IV0 0.10.0-IV1 0.10.1-IV0 0.10.1-IV1 0.10.1-IV2 "
    "0.10.2-IV0 0.11.0-IV0 0.11.0-IV1 0.11.0-IV2 1.0-IV0 1.1-IV0 2.0-IV0 2.0-IV1 2.1-IV0 "
    "2.1-IV1 2.1-IV2 2.2-IV0 2.2-IV1 2.3-IV0 2.3-IV1 2.4-IV0 2.4-IV1 2.5-IV0 2.6-IV0 "
    "2.7-IV0 2.7-IV1 2.7-IV2 2.8-IV0 2.8-IV1 3.0-IV0 3.0-IV1 3.1-IV0 3.2-IV0 3.3-IV0 "
    "3.3-IV1 3.3-IV2 3.3-IV3 3.4-IV0 3.5-IV0 3.5-IV1 3.5-IV2 3.6-IV0 3.6-IV1 3.6-IV2 "
    "3.7-IV0 3.7-IV1 3.7-IV2 3.7-IV3 3.7-IV4 3.8-IV0 3.9-IV0 4.0-IV0 4.0-IV1 4.0-IV2 "
    "4.0-IV3").split()
# A release alone ("2.8", "0.10.0") names its latest internal version.
_VERSION_KEYS = frozenset(_IBP_VERSIONS) | {v.split("-")[0] for v in _IBP_VERSIONS}


def _metadata_version(name: str, value: Any) -> None:
    """Kafka's MetadataVersionValidator (``MetadataVersion.fromVersionString``): the
    first three dot-separated parts of a 0.x version, the first two otherwise, must
    name a version, so "0.10.0.0", "2.8.1" and "3.0-IV1" are accepted."""
    segments = value.split(".")
    count = 3 if value.startswith("0.") else 2
    key = value if count >= len(segments) else ".".join(segments[:count])
    if key not in _VERSION_KEYS:
        raise _invalid(name, value, f"Version {value} is not a valid version")


_REPLICA = re.compile(r"^\d+:\d+$")


def _throttled_replicas(name: str, value: Any) -> None:
    # ThrottledReplicaListValidator: "" or "*" or partition:broker,...
    if value in ([], ["*"]) or all(_REPLICA.match(item) for item in value):
        return
    raise _invalid(name, ",".join(value),
                   "must be the literal '*' or a list of replicas in the following "
                   "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


# -- the table ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TopicConfigDef:
    """One topic config key: type, default, validator, doc, and the broker key that sets
    its default."""

    name: str
    type: int
    default: Any                    # parsed, as LogConfig holds it
    validator: Validator | None
    doc: str
    # ServerTopicConfigSynonyms: the broker config that sets this topic config's
    # default, if any, and whether that broker config itself has a default
    # (log.retention.ms has none: log.retention.hours supplies it).
    broker_synonym: str | None = None
    broker_default: bool = True
    # Kafka's defineInternal: accepted and acted on, but listed by DescribeConfigs
    # (and CreateTopics' answer) only where a topic sets it.
    internal: bool = False


_T = TopicConfigDef
_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

TOPIC_CONFIGS: dict[str, TopicConfigDef] = {c.name: c for c in (
    _T("segment.bytes", INT, 1073741824, at_least(1024 * 1024),
       "Size of a log segment file.", "log.segment.bytes"),
    # LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG (Kafka 4): set, it replaces segment.bytes
    # and has no minimum, so tests roll small segments where users cannot.
    _T("internal.segment.bytes", INT, None, None,
       "The maximum size of a single log file. This should be used for testing only.",
       internal=True),
    _T("segment.ms", LONG, 604800000, at_least(1),
       "Time after which a segment is rolled.", "log.roll.ms", False),
    _T("segment.jitter.ms", LONG, 0, at_least(0),
       "Random jitter subtracted from segment.ms.", "log.roll.jitter.ms", False),
    _T("segment.index.bytes", INT, 10485760, at_least(4),
       "Size of a segment's offset index.", "log.index.size.max.bytes"),
    _T("flush.messages", LONG, LONG_MAX, at_least(1),
       "Messages between forced fsyncs.", "log.flush.interval.messages"),
    _T("flush.ms", LONG, LONG_MAX, at_least(0),
       "Time between forced fsyncs.", "log.flush.interval.ms", False),
    _T("retention.bytes", LONG, -1, None,
       "Largest size the partition log may keep before old batches are deleted; "
       "-1 = no limit.", "log.retention.bytes"),
    _T("retention.ms", LONG, 604800000, at_least(-1),
       "How long a batch is kept after its max timestamp; -1 = forever.",
       "log.retention.ms", False),
    _T("max.message.bytes", INT, 1048588, at_least(0),
       "Largest record batch the topic accepts.", "message.max.bytes"),
    _T("index.interval.bytes", INT, 4096, at_least(0),
       "Bytes between offset index entries.", "log.index.interval.bytes"),
    _T("delete.retention.ms", LONG, 86400000, at_least(0),
       "How long delete tombstones are kept on compacted topics.",
       "log.cleaner.delete.retention.ms"),
    _T("min.compaction.lag.ms", LONG, 0, at_least(0),
       "Minimum time a message stays uncompacted.", "log.cleaner.min.compaction.lag.ms"),
    _T("max.compaction.lag.ms", LONG, LONG_MAX, at_least(1),
       "Maximum time a message stays uncompacted.", "log.cleaner.max.compaction.lag.ms"),
    _T("file.delete.delay.ms", LONG, 60000, at_least(0),
       "Wait before a deleted segment file is removed.", "log.segment.delete.delay.ms"),
    _T("min.cleanable.dirty.ratio", DOUBLE, 0.5, between(0, 1),
       "Dirty fraction of the log that triggers compaction.",
       "log.cleaner.min.cleanable.ratio"),
    _T("cleanup.policy", LIST, ["delete"], one_of("compact", "delete"),
       "delete (retention) and/or compact (the LogCleaner keeps each key's latest value).",
       "log.cleanup.policy"),
    _T("unclean.leader.election.enable", BOOLEAN, False, None,
       "Whether an out-of-sync replica may become leader.",
       "unclean.leader.election.enable"),
    _T("min.insync.replicas", INT, 1, at_least(1),
       "Replicas that must acknowledge an acks=all write.", "min.insync.replicas"),
    _T("compression.type", STRING, "producer", one_of(*_COMPRESSION_TYPES),
       "Final compression of the topic's batches.", "compression.type"),
    _T("compression.gzip.level", INT, -1, _level(1, 9, -1),
       "gzip level when compression.type is gzip.", "compression.gzip.level"),
    _T("compression.lz4.level", INT, 9, _level(1, 17),
       "lz4 level when compression.type is lz4.", "compression.lz4.level"),
    _T("compression.zstd.level", INT, 3, _level(-131072, 22),
       "zstd level when compression.type is zstd.", "compression.zstd.level"),
    _T("preallocate", BOOLEAN, False, None,
       "Preallocate segment files.", "log.preallocate"),
    _T("message.format.version", STRING, "3.0-IV1", _metadata_version,
       "Deprecated; ignored from inter-broker protocol 3.0.", "log.message.format.version"),
    _T("message.timestamp.type", STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
       "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches on append.",
       "log.message.timestamp.type"),
    _T("message.timestamp.difference.max.ms", LONG, LONG_MAX, at_least(0),
       "Deprecated; see message.timestamp.before/after.max.ms.",
       "log.message.timestamp.difference.max.ms"),
    _T("message.timestamp.before.max.ms", LONG, LONG_MAX, at_least(0),
       "How far before the broker's time a CreateTime timestamp may be.",
       "log.message.timestamp.before.max.ms"),
    _T("message.timestamp.after.max.ms", LONG, LONG_MAX, at_least(0),
       "How far after the broker's time a CreateTime timestamp may be.",
       "log.message.timestamp.after.max.ms"),
    _T("leader.replication.throttled.replicas", LIST, [], _throttled_replicas,
       "Replicas throttled on the leader side."),
    _T("follower.replication.throttled.replicas", LIST, [], _throttled_replicas,
       "Replicas throttled on the follower side."),
    _T("message.downconversion.enable", BOOLEAN, True, None,
       "Whether old fetch versions get down-converted batches.",
       "log.message.downconversion.enable"),
    _T("remote.storage.enable", BOOLEAN, False, None,
       "Tiered storage for this topic (not available in kafka-net)."),
    _T("local.retention.ms", LONG, -2, at_least(-2),
       "Local retention with tiered storage; -2 = retention.ms.",
       "log.local.retention.ms"),
    _T("local.retention.bytes", LONG, -2, at_least(-2),
       "Local retention with tiered storage; -2 = retention.bytes.",
       "log.local.retention.bytes"),
    _T("remote.log.copy.disable", BOOLEAN, False, None,
       "Stop copying segments to tiered storage."),
    _T("remote.log.delete.on.disable", BOOLEAN, False, None,
       "Delete tiered data when tiered storage is disabled."),
    _T("errors.deadletterqueue.group.enable", BOOLEAN, False, None,
       "Whether share groups may write dead letters to this topic (KIP-1191)."),
)}

# The configs that change this broker's behaviour (see ReplicaManager).
EFFECTIVE = ("retention.ms", "retention.bytes", "max.message.bytes", "segment.bytes",
             "internal.segment.bytes",
             "message.timestamp.type", "cleanup.policy",
             # the durable log's (log.store=disk; kafka_net/server/storage/segment.py)
             "segment.ms", "segment.jitter.ms", "segment.index.bytes", "index.interval.bytes",
             "flush.messages", "flush.ms", "file.delete.delay.ms",
             # the LogCleaner's (kafka_net/server/log_cleaner.py)
             "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms",
             "min.cleanable.dirty.ratio")


# -- parsing and printing (ConfigDef.parseType / convertToString) --------------------------

_INTEGER = re.compile(r"^[+-]?[0-9]+$")          # Java's parseInt: no "_", ASCII digits
_DECIMAL = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")


def _parse_int(name: str, raw: str, low: int, high: int, type_name: str) -> int:
    text = raw.strip()
    if not _INTEGER.match(text) or not low <= int(text) <= high:
        raise _invalid(name, raw, f"Not a number of type {type_name}")
    return int(text)


def parse_value(name: str, raw: str | None) -> Any:
    """``raw`` parsed and validated as topic config ``name``; raises InvalidConfig."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        raise InvalidConfig(f"Unknown topic config name: {name}")
    if raw is None:
        raise InvalidConfig(f"Null value not supported for topic configs: {name}")
    value = _parse(definition, raw)
    if definition.validator is not None:
        definition.validator(name, value)
    return value


def _parse(definition: TopicConfigDef, raw: str) -> Any:
    name, kind, text = definition.name, definition.type, raw.strip()
    if kind == BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise _invalid(name, raw, "Expected value to be either true or false")
        return text.lower() == "true"
    if kind == INT:
        return _parse_int(name, raw, -2**31, INT_MAX, "INT")
    if kind == LONG:
        return _parse_int(name, raw, -2**63, LONG_MAX, "LONG")
    if kind == DOUBLE:
        if not _DECIMAL.match(text):
            raise _invalid(name, raw, "Not a number of type DOUBLE")
        return float(text)
    if kind == LIST:
        return [] if not text else [item.strip() for item in text.split(",")]
    return text


def to_string(definition: TopicConfigDef, value: Any) -> str:
    """ConfigDef.convertToString: how DescribeConfigs reports a parsed value."""
    if definition.type == BOOLEAN:
        return "true" if value else "false"
    if definition.type == LIST:
        return ",".join(value)
    if definition.type == DOUBLE:
        return repr(float(value))   # Java's Double.toString: 0.5, 1.0
    return str(value)


def validate_values(values: dict[str, Any]) -> None:
    """Cross-config checks (``LogConfig.validateValues``) on the effective values."""
    low = values["min.compaction.lag.ms"]
    high = values["max.compaction.lag.ms"]
    if low > high:
        raise InvalidConfig(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                            f"max.compaction.lag.ms ({high})")
    if values["remote.storage.enable"]:
        raise InvalidConfig("Tiered Storage functionality is disabled in the broker. "
                            "Topic cannot be configured with remote log storage.")


def type_name(kind: int) -> str:
    return _TYPE_NAMES.get(kind, "UNKNOWN")
