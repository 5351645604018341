"""ConfigRepository: each topic's config overrides, and the values in effect.

Named after Kafka's ``ConfigRepository`` (where a broker reads a topic's
dynamic configs).  A topic's overrides come from CreateTopics, AlterConfigs
and IncrementalAlterConfigs; everything it does not override falls back to
the broker's synonym (``message.max.bytes`` -> ``max.message.bytes``, and the
log keys ``log.segment.bytes``, ``log.roll.ms``/``hours``, ``log.index.*``,
``log.flush.interval.*``, ``log.segment.delete.delay.ms``) and then to Kafka's default
(:mod:`kafka_net.server.topic_config`).  Handler threads read and write it
concurrently, so the table sits behind a lock and values are replaced, never
mutated in place.  Each topic's :class:`LogConfig` is built once and kept
until its overrides change (Kafka's ``UnifiedLog`` holds its ``LogConfig``
the same way): every Produce asks for it, and building it walks every topic
config.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from kafka_net.server.storage.segment import SegmentConfig
from kafka_net.server.topic_config import (
    TOPIC_CONFIGS, InvalidConfig, parse_value, validate_values)


@dataclass(frozen=True)
class LogConfig:
    """The topic configs the broker acts on (Kafka's ``LogConfig`` fields)."""

    retention_ms: int
    retention_bytes: int
    max_message_bytes: int
    segment_bytes: int
    log_append_time: bool      # message.timestamp.type=LogAppendTime
    delete: bool               # cleanup.policy contains delete
    compact: bool              # cleanup.policy contains compact (not acted on)
    retention_overridden: bool  # the topic sets retention.ms or retention.bytes
    # segment.*, index.interval.bytes, flush.*, file.delete.delay.ms: the durable log's
    segment: SegmentConfig = SegmentConfig()


class ConfigRepository:
    def __init__(self, max_message_bytes: int = 1048588) -> None:
        # Broker settings that are synonyms of topic configs (name -> parsed value).
        self.broker_values: dict[str, Any] = {}
        if max_message_bytes != TOPIC_CONFIGS["max.message.bytes"].default:
            self.broker_values["max.message.bytes"] = max_message_bytes
        self._overrides: dict[str, dict[str, Any]] = {}
        # Dynamic broker configs as ConfigRecords hold them: resource name ("" is the
        # cluster-wide default, else a broker id) -> {name: value as text}.
        self._broker_configs: dict[str, dict[str, str]] = {}
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
        segment = SegmentConfig(v["segment.bytes"], v["segment.ms"], v["segment.jitter.ms"],
                                v["segment.index.bytes"], v["index.interval.bytes"],
                                v["flush.messages"], v["flush.ms"], v["file.delete.delay.ms"])
        return LogConfig(v["retention.ms"], v["retention.bytes"], v["max.message.bytes"],
                         v["segment.bytes"], v["message.timestamp.type"] == "LogAppendTime",
                         "delete" in policy, "compact" in policy,
                         "retention.ms" in overrides or "retention.bytes" in overrides,
                         segment)

    def set_broker_default(self, name: str, value: Any) -> None:
        """A broker key that is a topic config's synonym (``log.segment.bytes`` ->
        ``segment.bytes``): what topics not overriding ``name`` get."""
        with self._lock:
            if value == TOPIC_CONFIGS[name].default:
                self.broker_values.pop(name, None)
            else:
                self.broker_values[name] = value
            self._log_configs.clear()

    # -- writing --------------------------------------------------------------------------

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
            overrides = dict(self._overrides.get(topic, {}))
            if value is None:
                overrides.pop(name, None)
            else:
                overrides[name] = value
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
        """Set (or with None remove) one dynamic broker config: a ConfigRecord applied."""
        with self._lock:
            configs = self._broker_configs.setdefault(resource_name, {})
            if value is None:
                configs.pop(name, None)
            else:
                configs[name] = value
            if not configs:
                del self._broker_configs[resource_name]

    def delete_topic(self, topic: str) -> None:
        with self._lock:
            self._log_configs.pop(topic, None)
            self._overrides.pop(topic, None)


__all__ = ["ConfigRepository", "InvalidConfig", "LogConfig"]
