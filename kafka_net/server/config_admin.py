"""Changing configs, for AlterConfigs and IncrementalAlterConfigs.

Follows Kafka's ``ConfigAdminManager.preprocess`` (request-level checks) and
``ConfigurationControlManager`` (building the new config set, validating it,
then storing it).  Per resource, in Kafka's order:

1. the same resource twice in a request: INVALID_REQUEST ``Each resource must
   appear at most once.``; the same key twice: ``Error due to duplicate config
   keys``; a null value (except DELETE): ``Null value not supported for : k``;
2. TOPIC: the new override set is built (AlterConfigs replaces the whole set;
   IncrementalAlterConfigs applies SET/DELETE/APPEND/SUBTRACT, the last two on
   list configs only), then validated: INVALID_CONFIG with Kafka's message for
   an unknown name or a bad value; then the topic must exist
   (UNKNOWN_TOPIC_OR_PARTITION ``The topic 'x' does not exist.``); unless
   ``validate_only``, it is stored and retention is applied at once;
3. BROKER ("" = the cluster-wide default, or this node's id; another id or a
   name that is no integer: INVALID_REQUEST with Kafka's message): the new
   set of dynamic values of that scope is built (AlterConfigs: the request's;
   IncrementalAlterConfigs: the ops applied to the scope's current values,
   APPEND/SUBTRACT on list configs only), then validated and applied by
   :class:`~kafka_net.server.dynamic_config.DynamicBrokerConfig` (the rules:
   :mod:`kafka_net.config.dynamic_rules`): a key that cannot change at run
   time or a bad value is INVALID_REQUEST (Kafka's ``Cannot update these
   configs dynamically: Set(...)`` / ConfigException wording).
4. GROUP (Kafka 4.0's group configs, :mod:`kafka_net.config.group_keys`):
   the group's new override set is built as for a topic and validated by
   Kafka's ``GroupConfig.validate`` (INVALID_CONFIG with its message); the
   empty name is INVALID_REQUEST ``Default group resources are not
   allowed.``.  Playing a release before 4.0 (``as.version``): INVALID_REQUEST
   ``Unexpected resource type UNKNOWN for resource <name>`` (CLIENT_METRICS
   likewise before 3.7), as a broker without the type refused it.
5. CLIENT_METRICS (KIP-714 subscriptions; keys: :mod:`kafka_net.config.client_metrics_keys`):
   the subscription's new set is built as for a topic (APPEND / SUBTRACT on
   the LIST keys ``metrics`` and ``match`` only), then validated by Kafka's
   ``ClientMetricsConfigs.validate`` (an unknown key or an interval outside
   100-3600000: INVALID_REQUEST; a bad ``match`` selector or a non-number
   interval: INVALID_CONFIG; the empty name: INVALID_REQUEST ``Subscription
   name can't be empty``); no keys left removes the subscription.
   Other resource types are INVALID_REQUEST.

With an authorizer, ALTER_CONFIGS on the topic, the group or (BROKER,
BROKER_LOGGER, CLIENT_METRICS) the cluster comes right after the duplicate-resource check:
TOPIC_ / GROUP_ / CLUSTER_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

import logging
from enum import IntEnum
from typing import Any

from kafka_net.config import client_metrics_keys
from kafka_net.config.broker_keys import BY_NAME as BROKER_KEYS
from kafka_net.config.dynamic_rules import LOG_KEYS
from kafka_net.config.errors import DynamicConfigError, InvalidConfig
from kafka_net.config.group_keys import parse_group_configs
from kafka_net.config.kafka_broker_names import KAFKA_BROKER_KEYS
from kafka_net.config.topic_keys import LIST, TOPIC_CONFIGS, to_string
from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation
from kafka_net.server.config_helper import (
    ConfigResourceType, config_authorization_error, resource_type_name, unknown_to_release)
from kafka_net.server.metadata_cache import topic_name_error

log = logging.getLogger(__name__)
# A client retrying a bad request must not flood the log: one line per error
# code and resource type every 10 s, with a count of the rest.
_refusals = RateLimitedLog(log)


class OpType(IntEnum):
    """Kafka's ``AlterConfigOp.OpType``."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class AlterError(Exception):
    def __init__(self, error_code: int, message: str | None) -> None:
        super().__init__(message)
        self.error_code, self.message = error_code, message


def alter_resources(ctx, resources: list[dict], validate_only: bool,
                    incremental: bool) -> list[dict]:
    seen: dict[tuple[int, str], int] = {}
    for r in resources:
        key = (r["resource_type"], r["resource_name"])
        seen[key] = seen.get(key, 0) + 1
    results = []
    for r in resources:
        out = {"resource_type": r["resource_type"], "resource_name": r["resource_name"]}
        try:
            if seen[(r["resource_type"], r["resource_name"])] > 1:
                raise AlterError(ErrorCode.INVALID_REQUEST,
                                 "Each resource must appear at most once.")
            unknown = unknown_to_release(r["resource_type"], r["resource_name"],
                                         ctx.config.as_version)
            if unknown is not None:   # as.version: a release without this resource type
                raise AlterError(ErrorCode.INVALID_REQUEST, unknown)
            refused = config_authorization_error(ctx, AclOperation.ALTER_CONFIGS,
                                                 r["resource_type"], r["resource_name"])
            if refused is not None:
                raise AlterError(refused, None)
            _alter(ctx, r, validate_only, incremental)
        except AlterError as exc:
            _refusals.log(logging.INFO, (exc.error_code, r["resource_type"]),
                          "Refused to alter configs of %s %s: %s",
                          resource_type_name(r["resource_type"]), escape(r["resource_name"]),
                          escape(str(exc.message)))
            results.append({**out, "error_code": exc.error_code, "error_message": exc.message})
            continue
        results.append({**out, "error_code": ErrorCode.NONE, "error_message": None})
    return results


def _alter(ctx, resource: dict, validate_only: bool, incremental: bool) -> None:
    configs = resource["configs"]
    names = [c["name"] for c in configs]
    if len(set(names)) != len(names):
        raise AlterError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c["name"] for c in configs
             if c["value"] is None and c.get("config_operation") != OpType.DELETE]
    if nulls:
        raise AlterError(ErrorCode.INVALID_REQUEST,
                         "Null value not supported for : " + ", ".join(nulls))
    kind, name = resource["resource_type"], resource["resource_name"]
    if kind == ConfigResourceType.TOPIC:
        _alter_topic(ctx, name, configs, validate_only, incremental)
    elif kind == ConfigResourceType.BROKER:
        _alter_broker(ctx, name, configs, validate_only, incremental)
    elif kind == ConfigResourceType.GROUP:
        _alter_group(ctx, name, configs, validate_only, incremental)
    elif kind == ConfigResourceType.CLIENT_METRICS:
        _alter_client_metrics(ctx, name, configs, validate_only, incremental)
    else:
        raise AlterError(ErrorCode.INVALID_REQUEST,
                         f"Unsupported resource type: {resource_type_name(kind)} "
                         "(kafka-net alters TOPIC, BROKER, GROUP and CLIENT_METRICS configs)")


def _alter_topic(ctx, topic: str, configs: list[dict], validate_only: bool,
                 incremental: bool) -> None:
    # Kafka's controller applies changes one at a time; so does its lock here, held
    # from reading the current set to writing the records: two IncrementalAlterConfigs
    # on one topic never lose each other's keys, nor race a DeleteTopics.
    with ctx.controller.lock:
        _alter_topic_locked(ctx, topic, configs, validate_only, incremental)


def _alter_topic_locked(ctx, topic: str, configs: list[dict], validate_only: bool,
                        incremental: bool) -> None:
    repository = ctx.config_repository
    if incremental:
        raw = _current_raw(repository.topic_overrides(topic))
        for config in configs:
            _apply_op(raw, config, _topic_list_default(repository))
    else:
        raw = {c["name"]: c["value"] for c in configs}
    problem = topic_name_error(topic)
    if problem:
        raise AlterError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    try:
        parsed = repository.validate(topic, raw)
    except InvalidConfig as exc:
        raise AlterError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if ctx.metadata_cache.topic(topic) is None:
        raise AlterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"The topic '{topic}' does not exist.")
    if validate_only:
        return
    ctx.controller.alter_topic_configs(topic, parsed)
    log.info("Topic %s configs are now %s", topic,
             escape(str({k: _text(k, v) for k, v in sorted(parsed.items())})))
    ctx.replica_manager.apply_retention(topic)


def _current_raw(overrides: dict[str, Any]) -> dict[str, str]:
    return {name: _text(name, value) for name, value in overrides.items()}


def _text(name: str, value: Any) -> str:
    return to_string(TOPIC_CONFIGS[name], value)


def _apply_op(raw: dict[str, str], config: dict, list_default) -> None:
    """ConfigurationControlManager.incrementalAlterConfigResource, for one key of a
    TOPIC, GROUP or CLIENT_METRICS resource: ``list_default(name)`` is a LIST key's
    default items, None for a key that is no LIST (APPEND / SUBTRACT refused)."""
    name, op, value = config["name"], config["config_operation"], config["value"]
    if op == OpType.SET:
        raw[name] = value
    elif op == OpType.DELETE:
        raw.pop(name, None)
    elif op in (OpType.APPEND, OpType.SUBTRACT):
        default = list_default(name)
        if default is None:
            raise AlterError(ErrorCode.INVALID_CONFIG,
                             f"Can't {OpType(op).name} to key {name} because its type "
                             "is not LIST.")
        raw[name] = _append_or_subtract(op, raw.get(name), value, default)
    else:
        raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")


def _topic_list_default(repository):
    def default(name: str) -> list | None:
        definition = TOPIC_CONFIGS.get(name)
        if definition is None or definition.type != LIST:
            return None
        return list(repository.default_value(name))
    return default


def _append_or_subtract(op: int, current: str | None, value: str, default: list) -> str:
    """IncrementalAlterConfigs APPEND / SUBTRACT on a LIST config: ``value``'s items
    added if absent or removed if present, over the current list (else the default)."""
    parts = [p for p in current.split(",") if p] if current is not None else default
    for item in value.split(","):
        if op == OpType.APPEND and item not in parts:
            parts.append(item)
        elif op == OpType.SUBTRACT and item in parts:
            parts.remove(item)
    return ",".join(parts)


def _alter_group(ctx, group_id: str, configs: list[dict], validate_only: bool,
                 incremental: bool) -> None:
    """ControllerConfigurationValidator for a GROUP resource (Kafka 4.0's group configs)."""
    if not group_id:
        raise AlterError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    repository = ctx.group_configs
    with ctx.controller.lock:
        if incremental:
            raw: dict[str, str | None] = {
                k: str(v) for k, v in repository.overrides(group_id).items()}
            for config in configs:
                _apply_op(raw, config, lambda name: None)   # no group config is a LIST
        else:
            raw = {c["name"]: c["value"] for c in configs}
        try:
            parsed = parse_group_configs(raw)
        except InvalidConfig as exc:
            raise AlterError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if validate_only:
            return
        ctx.controller.alter_group_configs(group_id, parsed)
    log.info("Group %s configs are now %s", escape(group_id), dict(sorted(parsed.items())))


def _alter_client_metrics(ctx, name: str, configs: list[dict], validate_only: bool,
                          incremental: bool) -> None:
    """A client metrics subscription (KIP-714): the new set built as for a topic
    (APPEND / SUBTRACT on the LIST keys ``metrics`` and ``match``), then Kafka's
    ``ClientMetricsConfigs.validate``; no keys left removes the subscription."""
    manager = ctx.client_metrics
    with ctx.controller.lock:
        if incremental:
            raw = manager.configs(name)
            for config in configs:
                _apply_op(raw, config,
                          lambda name: [] if name in client_metrics_keys.LIST_CONFIGS else None)
        else:
            raw = {c["name"]: c["value"] for c in configs}
        try:
            client_metrics_keys.validate(name, raw)
        except client_metrics_keys.ClientMetricsConfigError as exc:
            raise AlterError(exc.error_code, exc.message) from None
        if validate_only:
            return
        ctx.controller.alter_client_metrics(name, raw)
    log.info("Client metrics subscription %s is now %s", escape(name),
             escape(str(dict(sorted(raw.items())))) if raw else "removed")


def _alter_broker(ctx, name: str, configs: list[dict], validate_only: bool,
                  incremental: bool) -> None:
    """ConfigAdminManager.preprocess for a BROKER resource, then the change itself
    (:class:`~kafka_net.server.dynamic_config.DynamicBrokerConfig`)."""
    node = ctx.metadata_cache.node_id
    if name:
        try:
            given = int(name)
        except ValueError:
            raise AlterError(ErrorCode.INVALID_REQUEST,
                             f"Node id must be an integer, but it is: {name}") from None
        if given != node:
            raise AlterError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {node}, but received {name}")
    dynamic = ctx.dynamic_config
    with ctx.controller.lock:
        if incremental:
            values = dynamic.scope_values(name)
            for config in configs:
                _apply_broker_op(values, config)
        else:
            values = {c["name"]: c["value"] for c in configs}
        try:
            dynamic.alter(name, values, validate_only)
        except DynamicConfigError as exc:
            raise AlterError(ErrorCode.INVALID_REQUEST, str(exc)) from None


def _apply_broker_op(values: dict[str, str], config: dict) -> None:
    """ConfigAdminManager.prepareIncrementalConfigs, for one key of a broker scope."""
    name, op, value = config["name"], config["config_operation"], config["value"]
    if op == OpType.SET:
        values[name] = value
    elif op == OpType.DELETE:
        values.pop(name, None)
    elif op in (OpType.APPEND, OpType.SUBTRACT):
        topic_name = LOG_KEYS.get(name)
        if topic_name is None and name not in BROKER_KEYS and name not in KAFKA_BROKER_KEYS:
            raise AlterError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
        if topic_name is None or TOPIC_CONFIGS[topic_name].type != LIST:
            verb = "append" if op == OpType.APPEND else "subtract"
            raise AlterError(ErrorCode.INVALID_CONFIG,
                             f"Config value {verb} is not allowed for config key: {name}")
        values[name] = _append_or_subtract(op, values.get(name), value,
                                           [str(v) for v in TOPIC_CONFIGS[topic_name].default])
    else:
        raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
