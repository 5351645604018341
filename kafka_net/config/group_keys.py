"""Group configs (KIP-848, Kafka 4.0): the keys a group may override, their defaults and checks.

Kafka's ``GroupConfig``: the keys of the GROUP config resource (type 32) of
DescribeConfigs, AlterConfigs and IncrementalAlterConfigs:

* ``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms``: a
  consumer-protocol group's session timeout and heartbeat interval; the
  ConsumerGroupCoordinator reads them per group (defaults:
  ``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``);
* ``streams.session.timeout.ms``, ``streams.heartbeat.interval.ms``,
  ``streams.num.standby.replicas``, ``streams.initial.rebalance.delay.ms``,
  ``streams.acceptable.recovery.lag`` (LONG), ``streams.task.offset.interval.ms``
  and ``streams.num.warmup.replicas``: a streams group's (KIP-1071), read per
  group by the StreamsGroupCoordinator (defaults: the ``group.streams.*`` keys;
  the standbys at most ``group.streams.max.standby.replicas``, 2; the warm-up
  budget accepted and shown, unused, as by Kafka 4.4's default coordinator);
* ``share.session.timeout.ms``, ``share.heartbeat.interval.ms``,
  ``share.record.lock.duration.ms``: a share group's (KIP-932) session
  timeout, heartbeat interval and acquisition lock duration, read per group by
  the share coordinator (kafka_net.server.share; defaults
  ``group.share.session.timeout.ms``, ``group.share.heartbeat.interval.ms``,
  ``group.share.record.lock.duration.ms``);
* ``share.auto.offset.reset`` (STRING: ``latest``, ``earliest`` or
  ``by_duration:<ISO-8601 duration>``) where a share group without state starts
  in a partition, and ``share.isolation.level`` (``read_uncommitted`` or
  ``read_committed``) what its fetches read.

Validation is Kafka's ``GroupConfig.validate``: an unknown name, a value that
is no INT or below its minimum, or a value outside the broker's bounds
(``group.consumer.min/max.session.timeout.ms`` 45000-60000,
``group.consumer.min/max.heartbeat.interval.ms`` 5000-15000, the share ones
alike, the record lock 15000-60000: Kafka's defaults, as kafka-net has no such
keys), or a session timeout not above the heartbeat interval: INVALID_CONFIG
with Kafka's message.  The group need not exist.  Changes are written as
ConfigRecords of resource GROUP (the Controller) and replayed at a restart;
each group's overrides are kept by
:class:`kafka_net.server.group_config_repository.GroupConfigRepository`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafka_net.config.errors import InvalidConfig
from kafka_net.config.values import INT_MAX, LONG_MAX


@dataclass(frozen=True)
class GroupConfigDef:
    """One group config key (Kafka's GroupConfig): its default, bounds and doc."""

    name: str
    default: int             # Kafka's ConfigDef default (what validation fills in)
    minimum: int             # the ConfigDef's atLeast
    bounds: tuple[str, int, str, int] | None   # (min key, min, max key, max) of the broker
    doc: str
    kind: str = "INT"        # or "LONG", or "STRING" (checked by _STRING_CHECKS)
    # The broker key (Kafka's synonym) whose value a group that does not override this
    # key gets; None: the default above.
    broker_default: str | None = None


GROUP_CONFIGS: dict[str, GroupConfigDef] = {d.name: d for d in (
    GroupConfigDef("consumer.session.timeout.ms", 45000, 1,
                   ("group.consumer.min.session.timeout.ms", 45000,
                    "group.consumer.max.session.timeout.ms", 60000),
                   "The timeout to detect client failures when using the consumer group "
                   "protocol.",
                   broker_default="group.consumer.session.timeout.ms"),
    GroupConfigDef("consumer.heartbeat.interval.ms", 5000, 1,
                   ("group.consumer.min.heartbeat.interval.ms", 5000,
                    "group.consumer.max.heartbeat.interval.ms", 15000),
                   "The heartbeat interval given to the members of a consumer group.",
                   broker_default="group.consumer.heartbeat.interval.ms"),
    GroupConfigDef("share.session.timeout.ms", 45000, 1,
                   ("group.share.min.session.timeout.ms", 45000,
                    "group.share.max.session.timeout.ms", 60000),
                   "The timeout to detect client failures when using the share group "
                   "protocol.",
                   broker_default="group.share.session.timeout.ms"),
    GroupConfigDef("share.heartbeat.interval.ms", 5000, 1,
                   ("group.share.min.heartbeat.interval.ms", 5000,
                    "group.share.max.heartbeat.interval.ms", 15000),
                   "The heartbeat interval given to the members of a share group.",
                   broker_default="group.share.heartbeat.interval.ms"),
    GroupConfigDef("share.record.lock.duration.ms", 30000, 1000,
                   ("group.share.min.record.lock.duration.ms", 15000,
                    "group.share.max.record.lock.duration.ms", 60000),
                   "The record acquisition lock duration in milliseconds for share groups.",
                   broker_default="group.share.record.lock.duration.ms"),
    GroupConfigDef("share.auto.offset.reset", "latest", 0, None,
                   "The strategy to initialize the share-partition start offset.", "STRING"),
    GroupConfigDef("share.isolation.level", "read_uncommitted", 0, None,
                   "Controls how to read records written transactionally.", "STRING"),
    GroupConfigDef("errors.deadletterqueue.topic.name", "", 0, None,
                   "The share group's dead-letter topic (KIP-1191, share.version 2): the "
                   "records its consumers reject or that reach the delivery count limit "
                   "are written there; empty: none.", "STRING"),
    GroupConfigDef("errors.deadletterqueue.copy.record.enable", "false", 0, None,
                   "Whether a dead letter carries the record's key and value, or only the "
                   "headers naming it.", "STRING"),
    GroupConfigDef("streams.session.timeout.ms", 45000, 1,
                   ("group.streams.min.session.timeout.ms", 45000,
                    "group.streams.max.session.timeout.ms", 60000),
                   "The timeout to detect client failures when using the streams group "
                   "protocol.",
                   broker_default="group.streams.session.timeout.ms"),
    GroupConfigDef("streams.heartbeat.interval.ms", 5000, 1,
                   ("group.streams.min.heartbeat.interval.ms", 5000,
                    "group.streams.max.heartbeat.interval.ms", 15000),
                   "The heartbeat interval given to the members of a streams group.",
                   broker_default="group.streams.heartbeat.interval.ms"),
    GroupConfigDef("streams.num.standby.replicas", 0, 0,
                   ("group.streams.num.standby.replicas", 0,
                    "group.streams.max.standby.replicas", 2),
                   "The number of standby replicas for each task.",
                   broker_default="group.streams.num.standby.replicas"),
    GroupConfigDef("streams.initial.rebalance.delay.ms", 3000, 0, None,
                   "The amount of time the group coordinator will wait for more streams "
                   "clients to join a new group before performing the first rebalance.",
                   broker_default="group.streams.initial.rebalance.delay.ms"),
    # Kafka 4.4 (KIP-1071's warm-up tasks): the group's warm-up budget and the lag at
    # which a task counts as caught up, and its members' task offset interval.
    GroupConfigDef("streams.num.warmup.replicas", 2, 0, None,
                   "The maximum number of warm-up replicas (extra standbys beyond the "
                   "configured num.standbys) that can be assigned at once.",
                   broker_default="group.streams.num.warmup.replicas"),
    GroupConfigDef("streams.acceptable.recovery.lag", 10000, 0, None,
                   "The maximum acceptable lag (number of offsets to catch up) for a "
                   "client to be considered caught-up for an active task.", "LONG",
                   broker_default="group.streams.acceptable.recovery.lag"),
    GroupConfigDef("streams.task.offset.interval.ms", 60000, 1, None,
                   "The interval at which streams group members send their task offsets.",
                   broker_default="group.streams.task.offset.interval.ms"),
)}


def parse_group_configs(raw: dict[str, str | None]) -> dict[str, int]:
    """A group's complete new override set, parsed and validated (Kafka's
    ``GroupConfig.validate``); raises InvalidConfig with Kafka's wording."""
    for name in raw:
        if name not in GROUP_CONFIGS:
            raise InvalidConfig(f"Unknown group config name: {name}")
    nulls = [name for name, value in raw.items() if value is None]
    if nulls:
        raise InvalidConfig("Null value not supported for group configs: " + ",".join(nulls))
    parsed = {name: parse_group_value(name, value) for name, value in raw.items()}
    values = {name: parsed.get(name, d.default) for name, d in GROUP_CONFIGS.items()}
    for name, d in GROUP_CONFIGS.items():
        if d.bounds is None:
            continue
        min_key, low, max_key, high = d.bounds
        if values[name] < low:
            raise InvalidConfig(f"{name} must be greater than or equal to {min_key}")
        if values[name] > high:
            raise InvalidConfig(f"{name} must be less than or equal to {max_key}")
    for kind in ("consumer", "share", "streams"):
        if values[f"{kind}.session.timeout.ms"] <= values[f"{kind}.heartbeat.interval.ms"]:
            raise InvalidConfig(f"{kind}.session.timeout.ms must be greater than "
                                f"{kind}.heartbeat.interval.ms")
    return parsed


def parse_group_value(name: str, raw: str) -> int | str:
    """One group config's value from its text (a ConfigRecord replayed, a request)."""
    if GROUP_CONFIGS[name].kind == "STRING":
        value = raw.strip()
        _STRING_CHECKS[name](name, value)
        return value
    return _parse_int(name, raw, LONG_MAX if GROUP_CONFIGS[name].kind == "LONG" else INT_MAX)


def _check_auto_offset_reset(name: str, value: str) -> None:
    """Kafka's ``ShareGroupAutoOffsetResetStrategy`` validator."""
    lowered = value.lower()
    if lowered in ("latest", "earliest"):
        return
    if lowered.startswith("by_duration:") and parse_iso_duration_ms(value[12:]) is not None:
        return
    raise InvalidConfig(f"Invalid value {value} for configuration {name}: Invalid value "
                        "for auto offset reset strategy; the valid ones are latest, earliest "
                        "and by_duration:<ISO 8601 duration>")


def _check_isolation_level(name: str, value: str) -> None:
    if value.lower() not in ("read_uncommitted", "read_committed"):
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: String must be "
                            "one of: read_committed, read_uncommitted")


# Kafka's errors.deadletterqueue.topic.name.prefix default: a dead-letter topic's
# name starts with it (kafka-net does not let the prefix be changed).
DEAD_LETTER_TOPIC_PREFIX = "dlq."


def _check_dead_letter_topic(name: str, value: str) -> None:
    if not value:
        return
    if value.startswith("__"):
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: a dead-letter "
                            "topic cannot be an internal topic.")
    if not value.startswith(DEAD_LETTER_TOPIC_PREFIX):
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: the dead-letter "
                            f"topic name must start with {DEAD_LETTER_TOPIC_PREFIX}")


def _check_boolean(name: str, value: str) -> None:
    if value.lower() not in ("true", "false"):
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: Expected value "
                            "to be either true or false")


_STRING_CHECKS = {"share.auto.offset.reset": _check_auto_offset_reset,
                  "share.isolation.level": _check_isolation_level,
                  "errors.deadletterqueue.topic.name": _check_dead_letter_topic,
                  "errors.deadletterqueue.copy.record.enable": _check_boolean}

_ISO_DURATION = re.compile(
    r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)


def parse_iso_duration_ms(text: str) -> int | None:
    """Java's ``Duration.parse`` for the forms Kafka documents (PnDTnHnMn.nS),
    non-negative; None if it is no such duration."""
    m = _ISO_DURATION.fullmatch(text.strip())
    if m is None or text.strip().upper() in ("P", "PT") or text.strip().upper().endswith("T"):
        return None
    days, hours, minutes, seconds = m.groups()
    total = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
             + float(seconds or 0))
    return int(total * 1000)


def _parse_int(name: str, raw: str, high: int = INT_MAX) -> int:
    kind = "INT" if high == INT_MAX else "LONG"
    text = raw.strip()
    try:
        value = int(text)
    except ValueError:
        raise InvalidConfig(f"Invalid value {raw} for configuration {name}: "
                            f"Not a number of type {kind}") from None
    if not -high - 1 <= value <= high:
        raise InvalidConfig(f"Invalid value {raw} for configuration {name}: "
                            f"Not a number of type {kind}")
    minimum = GROUP_CONFIGS[name].minimum
    if value < minimum:
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: "
                            f"Value must be at least {minimum}")
    return value
