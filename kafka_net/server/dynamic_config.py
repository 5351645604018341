"""DynamicBrokerConfig: the broker configs AlterConfigs changes while the broker runs.

Kafka's ``DynamicBrokerConfig``.  Two scopes of dynamic values, as Kafka keeps
them in its metadata (``ConfigRecord`` of resource BROKER): the cluster-wide
default (resource name "") and this node's own (its id).  The value in effect
is, first found: this node's, the cluster default, server.properties (static),
Kafka's default; DescribeConfigs reports that chain as synonyms with sources
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG,
DEFAULT_CONFIG.

Which keys:

* **Applied at once** (:data:`APPLIED`): the connection quotas
  (``max.connections``, ``max.connections.per.ip``,
  ``max.connections.per.ip.overrides``, ``max.connection.creation.rate``:
  the Acceptors' ConnectionQuotas, Kafka's ``SocketServer.reconfigure``) and
  the log defaults Kafka's ``DynamicLogConfig`` reconfigures (the broker
  synonyms of topic configs, ``log.retention.ms``, ``log.segment.bytes``,
  ``message.max.bytes``..., except ``log.message.format.version``): every
  topic that does not override the key follows the new default; and
  ``errors.deadletterqueue.auto.create.topics.enable`` (KIP-1191), read at
  each dead letter a share group writes.
* **Kept per broker** (:data:`PER_BROKER_STORED`): the SASL/Kerberos login and
  ticket-refresh keys Kafka reconfigures per listener
  (``sasl.kerberos.min.time.before.relogin``, ``sasl.login.refresh.*``, ...).
  Accepted for this node (resource name = its id) with Kafka's value checks,
  refused at the cluster-default scope as Kafka refuses a per-broker config
  there, stored and replayed like every other; kafka-net's SASL (PLAIN,
  SCRAM, OAUTHBEARER) logs nobody in to a KDC, so they change nothing else.
* **Dynamic in Kafka, not in kafka-net** (thread pools, listeners, SSL and
  SASL settings, the log cleaner...): refused as read-only ones are, with
  INVALID_REQUEST ``Cannot update these configs dynamically: Set(...)``, and
  a note that kafka-net does not change them at run time.
* **Read-only** (every other broker config Kafka or kafka-net knows):
  INVALID_REQUEST ``Cannot update these configs dynamically: Set(...)``.
* A key that is no Kafka config at all is stored as Kafka stores custom
  configs (``customPropsAllowed``), and has no effect.

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

from kafka_net.config import ConfigError, ServerConfig
from kafka_net.config.broker_keys import BY_NAME
from kafka_net.config.kafka_broker_names import KAFKA_BROKER_KEYS
from kafka_net.config.topic_keys import TOPIC_CONFIGS, InvalidConfig, parse_value
from kafka_net.log_safety import escape
from kafka_net.network.connection_quotas import resolve_host
from kafka_net.server.config_repository import ConfigRepository

log = logging.getLogger(__name__)

CONNECTION_QUOTA_KEYS = ("max.connections", "max.connections.per.ip",
                         "max.connections.per.ip.overrides", "max.connection.creation.rate")

# Broker name -> topic config name, for the log defaults Kafka reconfigures
# (ServerTopicConfigSynonyms minus DynamicLogConfig.NonReconfigrableLogConfigs).
LOG_KEYS: dict[str, str] = {
    d.broker_synonym: name for name, d in TOPIC_CONFIGS.items()
    if d.broker_synonym and name != "message.format.version"}

# The log cleaner's keys kafka-net changes at run time (LogCleaner.reconfigure).
CLEANER_KEYS = ("log.cleaner.backoff.ms",)

# Group coordinator keys read where they are used (Kafka's
# GroupCoordinatorConfig.RECONFIGURABLE_CONFIGS kafka-net has): the share
# partition manager reads the dead-letter one at each dead letter.
GROUP_COORDINATOR_KEYS = ("errors.deadletterqueue.auto.create.topics.enable",)

APPLIED = (frozenset(CONNECTION_QUOTA_KEYS) | frozenset(LOG_KEYS) | frozenset(CLEANER_KEYS)
           | frozenset(GROUP_COORDINATOR_KEYS))

# The rest of Kafka's DynamicBrokerConfig.AllDynamicConfigs (plus the
# listener.name.<l>. forms of the listener, SSL and SASL ones).
KAFKA_ONLY_DYNAMIC = frozenset({
    "num.io.threads", "num.network.threads", "num.replica.fetchers",
    "num.recovery.threads.per.data.dir", "background.threads", "metric.reporters",
    "listeners", "advertised.listeners", "listener.security.protocol.map",
    "principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor", "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "producer.id.expiration.ms", "transaction.partition.verification.enable",
    "remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second",
    "remote.list.offsets.request.timeout.ms"})

# Kafka's per-broker SASL keys (DynamicListenerConfig's SaslConfigs, login and
# Kerberos ticket refresh): name -> (kind, low, high, Kafka's default), Kafka's
# ConfigDef checks.
PER_BROKER_STORED: dict[str, tuple[str, float | None, float | None, str | None]] = {
    "sasl.kerberos.service.name": ("string", None, None, None),
    "sasl.kerberos.kinit.cmd": ("string", None, None, "/usr/bin/kinit"),
    "sasl.kerberos.ticket.renew.window.factor": ("double", None, None, "0.8"),
    "sasl.kerberos.ticket.renew.jitter": ("double", None, None, "0.05"),
    "sasl.kerberos.min.time.before.relogin": ("long", None, None, "60000"),
    "sasl.kerberos.principal.to.local.rules": ("list", None, None, "DEFAULT"),
    "sasl.login.refresh.window.factor": ("double", 0.5, 1.0, "0.8"),
    "sasl.login.refresh.window.jitter": ("double", 0.0, 0.25, "0.05"),
    "sasl.login.refresh.min.period.seconds": ("short", 0, 900, "60"),
    "sasl.login.refresh.buffer.seconds": ("short", 0, 3600, "300"),
}

DEFAULT_SCOPE = ""


class DynamicConfigError(Exception):
    """A change refused; the config APIs answer it INVALID_REQUEST with this message."""


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
        per_broker = sorted(n for n in values if _base(n) in PER_BROKER_STORED)
        if per_broker and scope == DEFAULT_SCOPE:
            raise DynamicConfigError(
                "Cannot update these configs at default cluster level, broker id must be "
                "specified: Set(" + ", ".join(per_broker) + ")")
        for name in per_broker:
            check_per_broker(name, values[name])
        refused = sorted(name for name in values if not _may_change(name))
        if refused:
            note = ""
            if any(_base(n) in KAFKA_ONLY_DYNAMIC for n in refused):
                note = " (dynamic in Kafka; kafka-net does not change them at run time)"
            raise DynamicConfigError(
                "Cannot update these configs dynamically: Set(" + ", ".join(refused) + ")"
                + note)
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


def _base(name: str) -> str:
    """``listener.name.<l>.<key>`` -> ``<key>`` (Kafka's ListenerConfigRegex)."""
    if name.startswith("listener.name."):
        parts = name.split(".", 3)
        if len(parts) == 4:
            return parts[3]
    return name


def _may_change(name: str) -> bool:
    if name in APPLIED or _base(name) in PER_BROKER_STORED:
        return True
    # A key neither Kafka nor kafka-net knows is a custom config: kept, as Kafka keeps it.
    known = name in BY_NAME or name in KAFKA_BROKER_KEYS or _base(name) in KAFKA_ONLY_DYNAMIC
    return not known


def check_per_broker(name: str, raw: str) -> None:
    """A :data:`PER_BROKER_STORED` value checked as Kafka's ConfigDef checks it."""
    kind, low, high, _ = PER_BROKER_STORED[_base(name)]
    if kind in ("string", "list"):
        return
    try:
        value = float(raw) if kind == "double" else int(raw.strip())
    except ValueError:
        raise DynamicConfigError(f"Invalid value {raw} for configuration {name}: "
                                 f"Not a number of type {kind.upper()}") from None
    if kind == "short" and not -2**15 <= value < 2**15 or \
            kind == "long" and not -2**63 <= value < 2**63:
        raise DynamicConfigError(f"Invalid value {raw} for configuration {name}: "
                                 f"Not a number of type {kind.upper()}")
    if low is not None and value < low:
        raise DynamicConfigError(f"Invalid value {raw} for configuration {name}: "
                                 f"Value must be at least {low}")
    if high is not None and value > high:
        raise DynamicConfigError(f"Invalid value {raw} for configuration {name}: "
                                 f"Value must be no more than {high}")


def parse(name: str, raw: str) -> Any:
    """An APPLIED key's value parsed as a broker config; raises DynamicConfigError."""
    if name in LOG_KEYS:
        try:
            return parse_value(LOG_KEYS[name], raw)
        except InvalidConfig as exc:
            # The topic key's wording, under the broker key's name.
            raise DynamicConfigError(str(exc).replace(
                f"configuration {LOG_KEYS[name]}:", f"configuration {name}:")) from None
    key = BY_NAME[name]
    try:
        value = key.convert(name, raw)
        if name == "max.connections.per.ip.overrides":
            for host, _ in value:
                resolve_host(host)
    except ConfigError as exc:
        detail = str(exc).removeprefix(f"{name}: ")
        raise DynamicConfigError(
            f"Invalid value {raw} for configuration {name}: {detail}") from None
    except OSError as exc:
        raise DynamicConfigError(f"Invalid value {raw} for configuration {name}: "
                                 f"cannot resolve a host: {exc}") from None
    return value
