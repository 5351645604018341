"""Configuration: every key kafka-net reads, with Kafka's names, defaults and checks.

This package is where configuration is defined (``kafka-net serve --help`` names
its modules): the broker's keys, the topic, group and client metrics configs the
admin APIs take, the client quota keys, and which broker keys may change while the broker runs.  The
machinery that uses them stays in :mod:`kafka_net.server`: the repositories that
hold topic and group overrides and dynamic broker values, and the describe and
alter code of the config APIs.

``kafka-net serve --config server.properties --override key=value`` reads a
Java ``.properties`` file (the format Kafka's ``server.properties`` uses) and
applies overrides on top.  Every key is Kafka's, with Kafka's default, except
the few marked "kafka-net" in the key table.

Unknown keys are refused with a suggestion, so a typo such as
``num.network.thread`` never silently falls back to a default.  Keys that are
real Kafka broker settings but mean nothing here (``log.dirs``,
``zookeeper.connect``, ...) are accepted and reported once as ignored, so an
existing ``server.properties`` can be used as it is.  For the same reason
the listeners named in ``controller.listener.names`` (a KRaft controller's
port) are accepted and not opened: kafka-net has no controller.

The package, by subject:

* :mod:`~kafka_net.config.listeners`: ``NAME://host:port`` entries (:class:`EndPoint`,
  :func:`parse_listeners`) and ``listener.security.protocol.map``;
* :mod:`~kafka_net.config.values`: the converters from a key's text to its value;
* :mod:`~kafka_net.config.sasl`: the SASL keys' values (mechanisms, JAAS, SCRAM users);
* :mod:`~kafka_net.config.errors`: :class:`ConfigError` (a bad broker key or value),
  :class:`InvalidConfig` (a bad topic or group config in a request) and
  :class:`DynamicConfigError` (a broker config that cannot change so);
* :mod:`~kafka_net.config.broker_keys`: the broker key table :data:`KEYS` (name,
  default, doc; each default written only there), aliases, ignored Kafka keys, the
  dev profile;
* :mod:`~kafka_net.config.kafka_broker_names`: the names of every key a Kafka broker
  knows (only names: what kafka-net accepts and ignores is derived from it);
* :mod:`~kafka_net.config.topic_keys`: every topic config (:data:`TOPIC_CONFIGS`: Kafka's
  name, type, default, validator and broker synonym), parsed and validated as Kafka's
  ``LogConfig`` does;
* :mod:`~kafka_net.config.group_keys`: every group config (:data:`GROUP_CONFIGS`, the
  GROUP resource of KIP-848: Kafka's name, default, bounds and broker synonym) and
  Kafka's ``GroupConfig.validate``;
* :mod:`~kafka_net.config.client_metrics_keys`: the keys of a KIP-714 client metrics
  subscription (``metrics``, ``interval.ms``, ``match``) and Kafka's
  ``ClientMetricsConfigs.validate``;
* :mod:`~kafka_net.config.quota_keys`: the client quota keys of KIP-546
  (``producer_byte_rate``...), their types and Kafka's checks of a value;
* :mod:`~kafka_net.config.dynamic_rules`: which broker keys may change while the
  broker runs (:data:`APPLIED`, per-broker, dynamic only in Kafka, read-only) and the
  checks a change passes (Kafka's ``DynamicBrokerConfig`` rules);
* :mod:`~kafka_net.config.server_config`: :class:`ServerConfig`, built from
  string key/values and checked as a whole;
* :mod:`~kafka_net.config.properties`: Java's ``.properties`` format and
  :func:`load_config`.

The broker's names and the errors are re-exported here (``from kafka_net.config
import X``); the topic, group, client metrics, quota and dynamic-update tables are
imported from their modules, so that reading a ``server.properties`` file does not
load them.
"""

from kafka_net.config.broker_keys import (
    DEV_PROFILE, IGNORED_KAFKA_KEYS, KEYS, canonical_key, default_of)
from kafka_net.config.errors import ConfigError, DynamicConfigError, InvalidConfig
from kafka_net.config.listeners import (
    DEFAULT_PROTOCOL_MAP, SECURITY_PROTOCOLS, EndPoint, parse_listeners, parse_protocol_map)
from kafka_net.config.properties import load_config, parse_properties
from kafka_net.config.server_config import ServerConfig
from kafka_net.config.values import INT_MAX, LONG_MAX

__all__ = [
    "DEFAULT_PROTOCOL_MAP", "DEV_PROFILE", "IGNORED_KAFKA_KEYS", "INT_MAX", "KEYS",
    "LONG_MAX", "SECURITY_PROTOCOLS", "ConfigError", "DynamicConfigError", "EndPoint",
    "InvalidConfig", "ServerConfig", "canonical_key", "default_of", "load_config",
    "parse_listeners", "parse_properties", "parse_protocol_map",
]
