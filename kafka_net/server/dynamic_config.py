"""DynamicBrokerConfig: the broker configs AlterConfigs changes while the broker runs.

Kafka's ``DynamicBrokerConfig``.  Two scopes of dynamic values, as Kafka keeps
them in its metadata (``ConfigRecord`` of resource BROKER): the cluster-wide
default (resource name "") and this node's own (its id).  The value in effect
is, first found: this node's, the cluster default, server.properties (static),
Kafka's default; DescribeConfigs reports that chain as synonyms with sources
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG,
DEFAULT_CONFIG.

Which keys may change, and how a change is checked:
:mod:`kafka_net.config.dynamic_rules`.

A bad value is INVALID_REQUEST with Kafka's ConfigException wording (Kafka
maps every validation failure of a broker config to INVALID_REQUEST,
KAFKA-13609).

The values live in one place, the ConfigRepository's broker configs (raw
strings per scope), written as ConfigRecords of resource BROKER through the
Controller and replayed from the metadata log at a restart; each applied
record calls :meth:`DynamicBrokerConfig.reconfigure`, so a restarted broker
acts on the values it had.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from kafka_net.config import ServerConfig
from kafka_net.config.broker_keys import BY_NAME
from kafka_net.config.dynamic_rules import (
    APPLIED, CLEANER_KEYS, CONNECTION_QUOTA_KEYS, GROUP_COORDINATOR_KEYS, parse_applied,
    refuse_unchangeable)
from kafka_net.config.errors import DynamicConfigError
from kafka_net.config.topic_keys import TOPIC_CONFIGS
from kafka_net.log_safety import escape
from kafka_net.network.connection_quotas import resolve_host
from kafka_net.server.config_repository import ConfigRepository

log = logging.getLogger(__name__)

DEFAULT_SCOPE = ""


# (parsed values of APPLIED keys in effect) -> None: a part of the broker that acts
# on them (Kafka's Reconfigurable).  Called after each change, outside the lock.
Reconfigurable = Callable[[dict[str, Any]], None]


class DynamicBrokerConfig:
    def __init__(self, static: ServerConfig, node_id: int, repository=None,
                 controller=None) -> None:
        """``repository`` (a ConfigRepository) holds the values; ``controller`` writes
        them as ConfigRecords (without one, tests: straight into the repository)."""
        self.static = static
        self.node_id = node_id
        self._repository = ConfigRepository() if repository is None else repository
        self._controller = controller
        self._reconfigurables: list[Reconfigurable] = []
        self._repository.broker_config_listener = self.reconfigure

    # -- reading ------------------------------------------------------------------------

    def scope_values(self, scope: str) -> dict[str, str]:
        """The raw dynamic values of ``scope`` ("" or this node's id)."""
        return self._repository.broker_configs(scope)

    def dynamic_synonyms(self, name: str) -> list[tuple[str, int]]:
        """(raw value, 2 = per broker / 3 = cluster default) set for ``name``, in
        precedence order."""
        out = []
        own = self.scope_values(str(self.node_id))
        if name in own:
            out.append((own[name], 2))
        default = self.scope_values(DEFAULT_SCOPE)
        if name in default:
            out.append((default[name], 3))
        return out

    def effective(self) -> dict[str, Any]:
        """The parsed value in effect of every APPLIED key that has one set dynamically
        or statically (log keys left at Kafka's default are absent)."""
        merged = {**self.scope_values(DEFAULT_SCOPE), **self.scope_values(str(self.node_id))}
        out = {name: getattr(self.static, BY_NAME[name].attr)
               for name in (*CONNECTION_QUOTA_KEYS, *CLEANER_KEYS, *GROUP_COORDINATOR_KEYS)}
        if self.static.message_max_bytes != TOPIC_CONFIGS["max.message.bytes"].default:
            out["message.max.bytes"] = self.static.message_max_bytes
        for name, raw in merged.items():
            if name in APPLIED:
                try:
                    out[name] = parse(name, raw)
                except DynamicConfigError as exc:
                    # A stored value this version cannot parse: Kafka logs and ignores it.
                    log.error("Dynamic broker config %s is ignored: %s", name, exc)
        return out

    # -- writing ------------------------------------------------------------------------

    def add_reconfigurable(self, reconfigurable: Reconfigurable) -> None:
        """Register a part that acts on the values, and hand it the current ones."""
        self._reconfigurables.append(reconfigurable)
        reconfigurable(self.effective())

    def reconfigure(self) -> None:
        """Let every registered part act on the values now in effect (after each
        applied change, and each ConfigRecord replayed at a restart)."""
        effective = self.effective()
        for reconfigurable in list(self._reconfigurables):
            reconfigurable(effective)

    def validate(self, scope: str, values: dict[str, str]) -> None:
        """Kafka's ``DynamicBrokerConfig.validate`` of the complete new set of a scope."""
        refuse_unchangeable(values, cluster_default=scope == DEFAULT_SCOPE)
        for name, raw in values.items():
            if name in APPLIED:
                parse(name, raw)

    def alter(self, scope: str, values: dict[str, str], validate_only: bool = False) -> None:
        """Make ``values`` the whole dynamic set of ``scope`` (validated first): one
        ConfigRecord per key that changes; applying them reconfigures the broker."""
        self.validate(scope, values)
        if validate_only:
            return
        current = self.scope_values(scope)
        changes: dict[str, str | None] = {
            k: v for k, v in values.items() if current.get(k) != v}
        changes.update({k: None for k in current if k not in values})
        if not changes:
            return
        if self._controller is not None:
            self._controller.alter_broker_configs(scope, changes)
        else:
            for name, value in sorted(changes.items()):
                self._repository.set_broker_config(scope, name, value)
        log.info("Dynamic %s config is now %s",
                 "cluster-wide default" if scope == DEFAULT_SCOPE else f"broker {scope}",
                 escape(str(dict(sorted(values.items())))))


def parse(name: str, raw: str) -> Any:
    """An APPLIED key's value parsed as a broker config, the hosts of
    ``max.connections.per.ip.overrides`` resolved (as Kafka's ConnectionQuotas
    resolves them); raises DynamicConfigError."""
    value = parse_applied(name, raw)
    if name == "max.connections.per.ip.overrides":
        try:
            for host, _ in value:
                resolve_host(host)
        except OSError as exc:
            raise DynamicConfigError(f"Invalid value {raw} for configuration {name}: "
                                     f"cannot resolve a host: {exc}") from None
    return value
