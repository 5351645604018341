"""Which broker configs may change while the broker runs (Kafka's ``DynamicBrokerConfig``
rules), and the checks a change passes before it is applied.

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

The values themselves are kept and applied by
:class:`kafka_net.server.dynamic_config.DynamicBrokerConfig`.
"""

from __future__ import annotations

from typing import Any

from kafka_net.config.broker_keys import BY_NAME
from kafka_net.config.errors import ConfigError, DynamicConfigError, InvalidConfig
from kafka_net.config.kafka_broker_names import KAFKA_BROKER_KEYS
from kafka_net.config.topic_keys import TOPIC_CONFIGS, parse_value

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


def refuse_unchangeable(values: dict[str, str], cluster_default: bool) -> None:
    """Kafka's ``DynamicBrokerConfig.validate`` of the keys of a scope's complete new
    set (``cluster_default``: the resource name ""); the values of APPLIED keys are
    parsed by the caller.  Raises DynamicConfigError with Kafka's wording."""
    per_broker = sorted(n for n in values if base_name(n) in PER_BROKER_STORED)
    if per_broker and cluster_default:
        raise DynamicConfigError(
            "Cannot update these configs at default cluster level, broker id must be "
            "specified: Set(" + ", ".join(per_broker) + ")")
    for name in per_broker:
        check_per_broker(name, values[name])
    refused = sorted(name for name in values if not may_change(name))
    if refused:
        note = ""
        if any(base_name(n) in KAFKA_ONLY_DYNAMIC for n in refused):
            note = " (dynamic in Kafka; kafka-net does not change them at run time)"
        raise DynamicConfigError(
            "Cannot update these configs dynamically: Set(" + ", ".join(refused) + ")"
            + note)


def base_name(name: str) -> str:
    """``listener.name.<l>.<key>`` -> ``<key>`` (Kafka's ListenerConfigRegex)."""
    if name.startswith("listener.name."):
        parts = name.split(".", 3)
        if len(parts) == 4:
            return parts[3]
    return name


def may_change(name: str) -> bool:
    """Whether ``name`` may be set dynamically: an APPLIED or per-broker key, or a
    custom one."""
    if name in APPLIED or base_name(name) in PER_BROKER_STORED:
        return True
    # A key neither Kafka nor kafka-net knows is a custom config: kept, as Kafka keeps it.
    base = base_name(name)
    known = name in BY_NAME or name in KAFKA_BROKER_KEYS or base in KAFKA_ONLY_DYNAMIC
    return not known


def check_per_broker(name: str, raw: str) -> None:
    """A :data:`PER_BROKER_STORED` value checked as Kafka's ConfigDef checks it."""
    kind, low, high, _ = PER_BROKER_STORED[base_name(name)]
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


def parse_applied(name: str, raw: str) -> Any:
    """An APPLIED key's value parsed as a broker config (a log default as its topic
    config is); raises DynamicConfigError with Kafka's ConfigException wording."""
    if name in LOG_KEYS:
        try:
            return parse_value(LOG_KEYS[name], raw)
        except InvalidConfig as exc:
            # The topic key's wording, under the broker key's name.
            raise DynamicConfigError(str(exc).replace(
                f"configuration {LOG_KEYS[name]}:", f"configuration {name}:")) from None
    try:
        return BY_NAME[name].convert(name, raw)
    except ConfigError as exc:
        detail = str(exc).removeprefix(f"{name}: ")
        raise DynamicConfigError(
            f"Invalid value {raw} for configuration {name}: {detail}") from None
