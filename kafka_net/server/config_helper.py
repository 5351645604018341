"""Describing configs (Kafka's ``ConfigHelper``), for DescribeConfigs.

A topic's entry names its value, where the value comes from and, when asked,
the chain of synonyms behind it, as Kafka's ``createTopicConfigEntry``
reports them:

* a topic override: source DYNAMIC_TOPIC_CONFIG, first synonym the override;
* then the broker setting it falls back to (``message.max.bytes`` for
  ``max.message.bytes``), STATIC_BROKER_CONFIG when the broker sets it;
* then that broker setting's Kafka default, DEFAULT_CONFIG.  A broker
  setting without a default of its own (``log.retention.ms``) adds nothing.

The broker's own settings (:data:`kafka_net.config.KEYS`) and the log
defaults a broker may change at run time are described with the chain
DYNAMIC_BROKER_CONFIG (this node's dynamic value), DYNAMIC_DEFAULT_BROKER_CONFIG
(the cluster-wide one), STATIC_BROKER_CONFIG (server.properties, when it
differs from the default), DEFAULT_CONFIG; the first is the value in effect.
Only the keys kafka-net changes at run time
(:data:`kafka_net.config.dynamic_rules.APPLIED`) are not read-only.
"""

from __future__ import annotations

from dataclasses import fields
from enum import IntEnum
from typing import Any

from kafka_net.config import KEYS, ServerConfig
from kafka_net.config.broker_keys import BY_NAME, LONG_KEYS
from kafka_net.config.client_metrics_keys import CONFIG_DOCS
from kafka_net.config.dynamic_rules import APPLIED, LOG_KEYS, PER_BROKER_STORED
from kafka_net.config.group_keys import GROUP_CONFIGS
from kafka_net.config.topic_keys import (
    BOOLEAN, DOUBLE, INT, LIST, LONG, SHORT, STRING, TOPIC_CONFIGS, TopicConfigDef, to_string)
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import CLUSTER_NAME, ResourceType
from kafka_net.server.config_repository import ConfigRepository


class ConfigResourceType(IntEnum):
    """Kafka's ``ConfigResource.Type``."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource``."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


def resource_type_name(value: int) -> str:
    try:
        return ConfigResourceType(value).name
    except ValueError:
        return "UNKNOWN"


# The release whose ConfigResource.Type first had these: before it, the id is
# Kafka's UNKNOWN (GROUP came with 4.0's group configs, KIP-848; CLIENT_METRICS
# with 3.7, KIP-714).
_RESOURCE_TYPE_SINCE = {ConfigResourceType.GROUP: "4.0", ConfigResourceType.CLIENT_METRICS: "3.7"}


def unknown_to_release(resource_type: int, name: str, release: str | None) -> str | None:
    """With ``as.version`` playing a release that had no such config resource type,
    the INVALID_REQUEST message that release's broker gave; else None."""
    since = _RESOURCE_TYPE_SINCE.get(resource_type)
    if release is None or since is None or \
            tuple(map(int, release.split("."))) >= tuple(map(int, since.split("."))):
        return None
    return f"Unexpected resource type UNKNOWN for resource {name}"


# -- topics ------------------------------------------------------------------------------

def topic_entries(repository: ConfigRepository, topic: str,
                  documentation: bool) -> list[dict]:
    overrides = repository.topic_overrides(topic)
    return [_topic_entry(repository, definition, overrides, documentation)
            for definition in _listed(overrides)]


def _listed(overrides: dict[str, Any]) -> list[TopicConfigDef]:
    """The topic configs described: an internal one only where the topic sets it."""
    return [d for _, d in sorted(TOPIC_CONFIGS.items()) if not d.internal or d.name in overrides]


def _topic_entry(repository: ConfigRepository, definition: TopicConfigDef,
                 overrides: dict[str, Any], documentation: bool) -> dict:
    name = definition.name
    synonyms = []
    if name in overrides:
        synonyms.append(_synonym(name, to_string(definition, overrides[name]),
                                 ConfigSource.DYNAMIC_TOPIC_CONFIG))
    broker_name = definition.broker_synonym
    if broker_name is not None:
        if name in repository.broker_values:
            synonyms.append(_synonym(broker_name,
                                     to_string(definition, repository.broker_values[name]),
                                     ConfigSource.STATIC_BROKER_CONFIG))
        if definition.broker_default:
            synonyms.append(_synonym(broker_name, to_string(definition, definition.default),
                                     ConfigSource.DEFAULT_CONFIG))
    value = overrides.get(name, repository.default_value(name))
    source = synonyms[0]["source"] if synonyms else ConfigSource.DEFAULT_CONFIG
    return _entry(name, to_string(definition, value), source, read_only=False,
                  synonyms=synonyms, config_type=definition.type,
                  doc=definition.doc if documentation else None)


def created_topic_configs(repository: ConfigRepository, topic: str,
                          overrides: dict[str, Any]) -> list[dict]:
    """The configs a CreateTopics v5+ response lists: all of them, as described."""
    return [{k: e[k] for k in ("name", "value", "read_only", "config_source", "is_sensitive")}
            for e in (_topic_entry(repository, d, overrides, False)
                      for d in _listed(overrides))]


# -- the broker ----------------------------------------------------------------------------

def broker_entries(config: ServerConfig, dynamic=None) -> list[dict]:
    """This node's configs: kafka-net's keys, then the log defaults Kafka lets a
    broker change at run time (``log.retention.ms`` ...), each with its source
    chain (this node's dynamic value, the cluster default, the static one, Kafka's
    default).  Read-only unless kafka-net changes it at run time."""
    defaults = ServerConfig()
    by_attr = {f.name for f in fields(ServerConfig)}
    entries = []
    for key in KEYS:
        if key.attr not in by_attr:
            continue
        value, default = getattr(config, key.attr), getattr(defaults, key.attr)
        chain = [] if dynamic is None else [
            _synonym(key.name, raw, source) for raw, source in dynamic.dynamic_synonyms(key.name)]
        if value != default:
            chain.append(_synonym(key.name, _broker_value(value),
                                  ConfigSource.STATIC_BROKER_CONFIG))
        chain.append(_synonym(key.name, _broker_value(default), ConfigSource.DEFAULT_CONFIG))
        entries.append(_entry(key.name, chain[0]["value"], chain[0]["source"],
                              read_only=key.name not in APPLIED, synonyms=chain,
                              config_type=_broker_type(key.name, value), doc=key.doc))
    for name, topic_name in sorted(LOG_KEYS.items()):
        if name in BY_NAME:
            continue   # message.max.bytes: a kafka-net key, listed above
        definition = TOPIC_CONFIGS[topic_name]
        chain = [] if dynamic is None else [
            _synonym(name, raw, source) for raw, source in dynamic.dynamic_synonyms(name)]
        chain.append(_synonym(name, to_string(definition, definition.default),
                              ConfigSource.DEFAULT_CONFIG))
        entries.append(_entry(name, chain[0]["value"], chain[0]["source"], read_only=False,
                              synonyms=chain, config_type=definition.type, doc=definition.doc))
    entries += _per_broker_sasl_entries(dynamic)
    return entries


_SASL_TYPES = {"string": STRING, "double": DOUBLE, "long": LONG, "short": SHORT, "list": LIST}


def _per_broker_sasl_entries(dynamic) -> list[dict]:
    """The SASL login / ticket refresh keys Kafka lets a broker change (kept, no
    effect in kafka-net: dynamic_rules.PER_BROKER_STORED): this node's value, else
    Kafka's default."""
    entries = []
    for name, (kind, _, _, default) in sorted(PER_BROKER_STORED.items()):
        chain = [] if dynamic is None else [
            _synonym(name, raw, source) for raw, source in dynamic.dynamic_synonyms(name)]
        chain.append(_synonym(name, default, ConfigSource.DEFAULT_CONFIG))
        entries.append(_entry(name, chain[0]["value"], chain[0]["source"], read_only=False,
                              synonyms=chain, config_type=_SASL_TYPES[kind], doc=None))
    return entries


def default_broker_entries(dynamic) -> list[dict]:
    """The cluster-wide dynamic defaults (resource name ""): only those set, as Kafka
    describes that resource."""
    entries = []
    for name, raw in sorted(dynamic.scope_values("").items()):
        topic_name = LOG_KEYS.get(name)
        config_type = TOPIC_CONFIGS[topic_name].type if topic_name else STRING
        synonym = _synonym(name, raw, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        entries.append(_entry(name, raw, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                              read_only=False, synonyms=[synonym], config_type=config_type,
                              doc=None))
    return entries


def _broker_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(":".join(map(str, v)) if isinstance(v, tuple) else str(v)
                        for v in value)
    return str(value)


def _broker_type(name: str, value: Any) -> int:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return LONG if name in LONG_KEYS else INT
    return STRING


# -- groups --------------------------------------------------------------------------------

def group_entries(repository, group_id: str) -> list[dict]:
    """Every group config (Kafka's ``createGroupConfigEntry``): the group's override,
    source GROUP_CONFIG, else the broker's default, DEFAULT_CONFIG."""
    overrides = repository.overrides(group_id)
    entries = []
    for name, definition in sorted(GROUP_CONFIGS.items()):
        if name in overrides:
            value, source = overrides[name], ConfigSource.GROUP_CONFIG
        else:
            value, source = repository.default(name), ConfigSource.DEFAULT_CONFIG
        entries.append(_entry(name, str(value), source, read_only=False,
                              synonyms=[_synonym(name, str(value), source)],
                              config_type={"STRING": STRING, "LONG": LONG}.get(
                                  definition.kind, INT),
                              doc=definition.doc))
    return entries


# -- client metrics subscriptions ------------------------------------------------------------

_CLIENT_METRICS_TYPES = {"metrics": LIST, "match": LIST, "interval.ms": INT}


def client_metrics_entries(manager, name: str) -> list[dict]:
    """A subscription's keys that are set, source CLIENT_METRICS_CONFIG (Kafka's
    ConfigHelper lists the stored entries only, no defaults)."""
    return [_entry(key, value, ConfigSource.CLIENT_METRICS_CONFIG, read_only=False,
                   synonyms=[], config_type=_CLIENT_METRICS_TYPES.get(key, STRING),
                   doc=CONFIG_DOCS.get(key))
            for key, value in sorted(manager.configs(name).items())]


# -- shared -------------------------------------------------------------------------------

def _synonym(name: str, value: str, source: int) -> dict:
    return {"name": name, "value": value, "source": int(source)}


def _entry(name: str, value: str, source: int, *, read_only: bool, synonyms: list,
           config_type: int, doc: str | None) -> dict:
    return {"name": name, "value": value, "read_only": read_only,
            "config_source": int(source), "is_sensitive": False, "synonyms": synonyms,
            "config_type": config_type, "documentation": doc}


def select(entries: list[dict], keys: list[str] | None, synonyms: bool,
           documentation: bool) -> list[dict]:
    """Only the asked-for keys (null or empty = all); synonyms and docs only if asked."""
    chosen = entries if not keys else [e for e in entries if e["name"] in keys]
    return [{**e, "synonyms": e["synonyms"] if synonyms else [],
             "documentation": e["documentation"] if documentation else None}
            for e in chosen]


# Which ACL resource guards a config resource, and the error when refused
# (Kafka's ConfigHelper / KafkaApis.configsAuthorizationApiError).
_GUARDS = {
    ConfigResourceType.TOPIC: ("TOPIC", "TOPIC_AUTHORIZATION_FAILED"),
    ConfigResourceType.GROUP: ("GROUP", "GROUP_AUTHORIZATION_FAILED"),
    ConfigResourceType.BROKER: ("CLUSTER", "CLUSTER_AUTHORIZATION_FAILED"),
    ConfigResourceType.BROKER_LOGGER: ("CLUSTER", "CLUSTER_AUTHORIZATION_FAILED"),
    ConfigResourceType.CLIENT_METRICS: ("CLUSTER", "CLUSTER_AUTHORIZATION_FAILED"),
}


def config_authorization_error(ctx, operation, resource_type: int, name: str) -> int | None:
    """None if the principal may ``operation`` (DESCRIBE_CONFIGS or ALTER_CONFIGS)
    the config resource, else the error its result carries.  A type with no
    guard is left to the handler's own INVALID_REQUEST."""
    guard = _GUARDS.get(resource_type)
    if guard is None or ctx.authorizer is None:
        return None
    acl_type = ResourceType[guard[0]]
    acl_name = CLUSTER_NAME if acl_type == ResourceType.CLUSTER else name
    if ctx.authorize(operation, acl_type, acl_name):
        return None
    return ErrorCode[guard[1]]
