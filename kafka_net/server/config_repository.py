"""ConfigRepository: each topic's config overrides, and the values in effect.

Named after Kafka's ``ConfigRepository`` (where a broker reads a topic's
dynamic configs).  A topic's overrides come from CreateTopics, AlterConfigs
and IncrementalAlterConfigs; everything it does not override falls back to
the broker's synonym (``message.max.bytes`` -> ``max.message.bytes``, the
log keys ``log.segment.bytes``, ``log.roll.ms``/``hours``, ``log.index.*``,
``log.flush.interval.*``, ``log.segment.delete.delay.ms``, and the
``log.cleaner.*`` keys -> ``delete.retention.ms``, ``min.compaction.lag.ms``,
``max.compaction.lag.ms``, ``min.cleanable.dirty.ratio``) and then to Kafka's default
(:mod:`kafka_net.config.topic_keys`).  Handler threads read and write it
concurrently, so the table sits behind a lock and values are replaced, never
mutated in place.  Each topic's :class:`LogConfig` is built once and kept
until its overrides change (Kafka's ``UnifiedLog`` holds its ``LogConfig``
the same way): every Produce asks for it, and building it walks every topic
config.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from kafka_net.config.errors import InvalidConfig
from kafka_net.config.topic_keys import TOPIC_CONFIGS, parse_value, validate_values
from kafka_net.server.storage.segment import SegmentConfig


def with_config(values: dict | None, name: str, value):
    """A resource's configs after one ConfigRecord (of a TOPIC, GROUP or
    CLIENT_METRICS resource alike, as Kafka's ConfigurationDelta replays them): a
    copy with ``name`` set to ``value``, or without it where ``value`` is None."""
    values = dict(values or {})
    if value is None:
        values.pop(name, None)
    else:
        values[name] = value
    return values


@dataclass(frozen=True)
class LogConfig:
    """The topic configs the broker acts on (Kafka's ``LogConfig`` fields)."""

    retention_ms: int
    retention_bytes: int
    max_message_bytes: int
    segment_bytes: int
    log_append_time: bool      # message.timestamp.type=LogAppendTime
    delete: bool               # cleanup.policy contains delete
    compact: bool              # cleanup.policy contains compact (the LogCleaner's)
    retention_overridden: bool  # the topic sets retention.ms or retention.bytes
    # segment.*, index.interval.bytes, flush.*, file.delete.delay.ms: the durable log's
    segment: SegmentConfig = SegmentConfig()
    # The LogCleaner's per-topic settings.
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 2**63 - 1
    min_cleanable_ratio: float = 0.5
    # Acted on where the broker builds a batch itself: a legacy producer's messages
    # converted to magic 2 (Kafka's LogValidator; "producer" keeps the source's codec).
    compression_type: str = "producer"


class ConfigRepository:
    def __init__(self, max_message_bytes: int = 1048588) -> None:
        # Broker settings that are synonyms of topic configs (name -> parsed value):
        # the static ones (server.properties: log.segment.bytes, ...) with the dynamic
        # ones (AlterConfigs on the BROKER resource) over them.
        self._static_values: dict[str, Any] = {}
        self._dynamic_values: dict[str, Any] = {}
        if max_message_bytes != TOPIC_CONFIGS["max.message.bytes"].default:
            self._static_values["max.message.bytes"] = max_message_bytes
        self.broker_values: dict[str, Any] = dict(self._static_values)
        self._overrides: dict[str, dict[str, Any]] = {}
        # Dynamic broker configs as ConfigRecords hold them: resource name ("" is the
        # cluster-wide default, else a broker id) -> {name: value as text}.
        self._broker_configs: dict[str, dict[str, str]] = {}
        # Called after each dynamic broker config change (DynamicBrokerConfig).
        self.broker_config_listener: Callable[[], None] | None = None
        self._log_configs: dict[str, LogConfig] = {}   # built from _overrides, under _lock
        self._lock = threading.Lock()

    # -- reading --------------------------------------------------------------------------

    def topic_overrides(self, topic: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._overrides.get(topic, {}))

    def default_value(self, name: str) -> Any:
        """What a topic gets for ``name`` when it does not override it."""
        return self.broker_values.get(name, TOPIC_CONFIGS[name].default)

    def effective(self, topic: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        values = {name: self.default_value(name) for name in TOPIC_CONFIGS}
        values.update(self.topic_overrides(topic) if overrides is None else overrides)
        return values

    def log_config(self, topic: str) -> LogConfig:
        config = self._log_configs.get(topic)
        if config is None:
            with self._lock:   # built and dropped under the lock: never from stale overrides
                config = self._log_configs.get(topic)
                if config is None:
                    config = self._log_configs[topic] = self._build_log_config(
                        topic, dict(self._overrides.get(topic, {})))
        return config

    def _build_log_config(self, topic: str, overrides: dict[str, Any]) -> LogConfig:
        v = self.effective(topic, overrides)
        policy = [p.lower() for p in v["cleanup.policy"]]
        # LogConfig.maxSegmentMs: a compacted log also rolls by max.compaction.lag.ms,
        # so no record waits in the never-cleaned active segment past that lag
        segment_ms = (min(v["segment.ms"], v["max.compaction.lag.ms"]) if "compact" in policy
                      else v["segment.ms"])
        # LogConfig.segmentSize(): internal.segment.bytes, where a topic sets it
        segment_bytes = v["internal.segment.bytes"] or v["segment.bytes"]
        segment = SegmentConfig(segment_bytes, segment_ms, v["segment.jitter.ms"],
                                v["segment.index.bytes"], v["index.interval.bytes"],
                                v["flush.messages"], v["flush.ms"], v["file.delete.delay.ms"])
        # A topic's own retention or a dynamic broker default for it (log.retention.ms,
        # log.retention.bytes) is enforced; Kafka's 7-day default is left to the
        # periodic task's policy (see ReplicaManager).
        retention_set = any(k in overrides or k in self.broker_values
                            for k in ("retention.ms", "retention.bytes"))
        return LogConfig(v["retention.ms"], v["retention.bytes"], v["max.message.bytes"],
                         segment_bytes, v["message.timestamp.type"] == "LogAppendTime",
                         "delete" in policy, "compact" in policy, retention_set,
                         segment, v["delete.retention.ms"], v["min.compaction.lag.ms"],
                         v["max.compaction.lag.ms"], v["min.cleanable.dirty.ratio"],
                         v["compression.type"])

    def set_broker_default(self, name: str, value: Any) -> None:
        """A static broker key that is a topic config's synonym (``log.segment.bytes``
        -> ``segment.bytes``): what topics not overriding ``name`` get, unless a
        dynamic broker config sets it."""
        with self._lock:
            if value == TOPIC_CONFIGS[name].default:
                self._static_values.pop(name, None)
            else:
                self._static_values[name] = value
            self._rebuild_broker_values()

    def _rebuild_broker_values(self) -> None:
        """Under the lock: the values topics fall back to, every LogConfig rebuilt
        on its next use."""
        self.broker_values = {**self._static_values, **self._dynamic_values}
        self._log_configs.clear()

    # -- writing --------------------------------------------------------------------------

    def set_broker_defaults(self, values: dict[str, Any]) -> None:
        """The broker settings in effect for the topic configs' synonyms, by topic
        config name (``message.max.bytes`` as ``max.message.bytes``), as
        DynamicBrokerConfig computes them after AlterConfigs on the BROKER resource
        (Kafka's ``DynamicLogConfig``): over the static ones of
        :meth:`set_broker_default`."""
        with self._lock:
            self._dynamic_values = dict(values)
            self._rebuild_broker_values()

    def validate(self, topic: str, raw: dict[str, str | None]) -> dict[str, Any]:
        """Parse and check a complete set of overrides; raises InvalidConfig."""
        parsed = {name: parse_value(name, value) for name, value in raw.items()}
        validate_values(self.effective(topic, parsed))
        return parsed

    def set_topic_config(self, topic: str, overrides: dict[str, Any]) -> None:
        """Replace ``topic``'s overrides (already validated)."""
        with self._lock:
            self._log_configs.pop(topic, None)
            if overrides:
                self._overrides[topic] = dict(overrides)
            else:
                self._overrides.pop(topic, None)

    def set_topic_key(self, topic: str, name: str, value: Any | None) -> None:
        """Set (or with None remove) one override: a ConfigRecord applied."""
        with self._lock:
            self._log_configs.pop(topic, None)
            overrides = with_config(self._overrides.get(topic), name, value)
            if overrides:
                self._overrides[topic] = overrides
            else:
                self._overrides.pop(topic, None)

    def broker_configs(self, resource_name: str = "") -> dict[str, str]:
        """The dynamic configs of broker ``resource_name`` ("": the cluster default)."""
        with self._lock:
            return dict(self._broker_configs.get(resource_name, {}))

    def broker_resources(self) -> list[str]:
        """The broker resource names that have dynamic configs."""
        with self._lock:
            return sorted(self._broker_configs)

    def set_broker_config(self, resource_name: str, name: str, value: str | None) -> None:
        """Set (or with None remove) one dynamic broker config: a ConfigRecord applied.
        The DynamicBrokerConfig listening is told after (outside the lock): it makes
        the broker act on the values now in effect."""
        with self._lock:
            configs = self._broker_configs.setdefault(resource_name, {})
            if value is None:
                configs.pop(name, None)
            else:
                configs[name] = value
            if not configs:
                del self._broker_configs[resource_name]
        listener = self.broker_config_listener
        if listener is not None:
            listener()

    def delete_topic(self, topic: str) -> None:
        with self._lock:
            self._log_configs.pop(topic, None)
            self._overrides.pop(topic, None)


__all__ = ["ConfigRepository", "InvalidConfig", "LogConfig"]
