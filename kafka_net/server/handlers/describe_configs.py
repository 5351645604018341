"""DescribeConfigs (API key 32): serves v1-v4; v0 while playing a release before 4.0.

Behaviour (an error is per resource, never a closed connection):

* TOPIC: every topic config (:mod:`kafka_net.config.topic_keys`) with its
  value and source (DYNAMIC_TOPIC_CONFIG for an override, else the broker
  synonym's or the default), as :mod:`kafka_net.server.config_helper`
  describes them.  An illegal name: INVALID_TOPIC_EXCEPTION; an unknown
  topic: UNKNOWN_TOPIC_OR_PARTITION (no message, as Kafka).
* BROKER named after this node's id: kafka-net's own settings and the log
  defaults, each with its source (DYNAMIC_BROKER_CONFIG,
  DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG) and
  read-only unless kafka-net changes it at run time
  (:mod:`kafka_net.server.dynamic_config`).  The empty name: the
  cluster-wide dynamic defaults that are set.  Another id:
  INVALID_REQUEST ``Unexpected broker id, expected 1 or empty string, but
  received 2``.
* GROUP (Kafka 4.0): the five group configs, each the group's override
  (source GROUP_CONFIG) or the broker's default (DEFAULT_CONFIG); the group
  need not exist; the empty name is INVALID_REQUEST ``Group name must not be
  empty``.  Playing a release before 4.0 (``as.version``), whose
  ConfigResource.Type had no GROUP, INVALID_REQUEST ``Unexpected resource type
  UNKNOWN for resource <name>``, as that broker refused an unknown type (so
  CLIENT_METRICS before 3.7).
* CLIENT_METRICS (KIP-714): the subscription's keys that are set, source
  CLIENT_METRICS_CONFIG, as Kafka's ConfigHelper lists them (an unknown
  subscription: no entries, no error); the empty name is INVALID_REQUEST
  ``Client metrics subscription name must not be empty``.
* BROKER_LOGGER and unknown types: INVALID_REQUEST (kafka-net keeps no such
  configs).
* configuration_keys selects entries (null or empty: all); include_synonyms
  and include_documentation (v3+) add those fields.
* v0 (Kafka 4.0 removed it, KIP-896; kafka-python 3's bundled
  DescribeConfigsRequest.json: "Version 1 is the new baseline") is served
  only while playing a release before 4.0 (``as.version``; ``legacy_low``).
  It has no include_synonyms (so no synonyms), no config_source and no
  documentation; each entry says is_default instead.  Brokers up to 2.6 set
  it true exactly when the value is the default (source DEFAULT_CONFIG);
  from 2.7, once their messages were generated, Kafka's brokers no longer
  set it and sent false for every entry, so playing 2.7-3.9 kafka-net does
  the same: a client that lists "modified" configs by is_default (as
  kafka-python does) sees every entry, as against the real release.

With an authorizer: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED),
the group (GROUP_AUTHORIZATION_FAILED) or, for BROKER, BROKER_LOGGER and
CLIENT_METRICS, the cluster (CLUSTER_AUTHORIZATION_FAILED), per resource
(Kafka's ConfigHelper).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.kafka_releases import RELEASES as KAFKA_RELEASES
from kafka_net.server.authorizer import AclOperation
from kafka_net.server.config_helper import (
    ConfigResourceType, ConfigSource, broker_entries, client_metrics_entries,
    config_authorization_error, default_broker_entries, group_entries, resource_type_name,
    select, topic_entries, unknown_to_release)
from kafka_net.server.metadata_cache import topic_name_error

API_KEY = ApiKey.DESCRIBE_CONFIGS


class ResourceError(Exception):
    def __init__(self, error_code: int, message: str | None) -> None:
        super().__init__(message)
        self.error_code, self.message = error_code, message


def handle(ctx, request: dict) -> dict:
    synonyms = request.get("include_synonyms", False)
    documentation = request.get("include_documentation", False)
    results = [_describe(ctx, resource, synonyms, documentation)
               for resource in request["resources"]]
    if ctx.api_version == 0:
        sets_is_default = _sets_is_default(ctx.config.as_version)
        for result in results:
            result["configs"] = [_with_is_default(c, sets_is_default)
                                 for c in result["configs"]]
    return {"throttle_time_ms": 0, "results": results}


# The first release whose broker no longer set DescribeConfigs v0's is_default.
_IS_DEFAULT_UNSET_FROM = "2.7"


def _sets_is_default(release: str | None) -> bool:
    return release is not None and \
        KAFKA_RELEASES.index(release) < KAFKA_RELEASES.index(_IS_DEFAULT_UNSET_FROM)


def _with_is_default(entry: dict, sets_is_default: bool) -> dict:
    """v0's is_default in place of config_source (see the module docstring)."""
    return {**entry, "is_default": sets_is_default
            and entry["config_source"] == ConfigSource.DEFAULT_CONFIG}


def _describe(ctx, resource: dict, synonyms: bool, documentation: bool) -> dict:
    out = {"resource_type": resource["resource_type"],
           "resource_name": resource["resource_name"]}
    unknown = unknown_to_release(resource["resource_type"], resource["resource_name"],
                                 ctx.config.as_version)
    if unknown is not None:
        return {**out, "error_code": ErrorCode.INVALID_REQUEST, "error_message": unknown,
                "configs": []}
    refused = config_authorization_error(ctx, AclOperation.DESCRIBE_CONFIGS,
                                         resource["resource_type"], resource["resource_name"])
    if refused is not None:
        return {**out, "error_code": refused, "error_message": None, "configs": []}
    try:
        entries = _entries(ctx, resource["resource_type"], resource["resource_name"],
                           documentation)
    except ResourceError as exc:
        return {**out, "error_code": exc.error_code, "error_message": exc.message,
                "configs": []}
    return {**out, "error_code": ErrorCode.NONE, "error_message": None,
            "configs": select(entries, resource["configuration_keys"], synonyms,
                              documentation)}


def _entries(ctx, resource_type: int, name: str, documentation: bool) -> list[dict]:
    if resource_type == ConfigResourceType.TOPIC:
        problem = topic_name_error(name)
        if problem:
            raise ResourceError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if ctx.metadata_cache.topic(name) is None:
            raise ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        return topic_entries(ctx.config_repository, name, documentation)
    if resource_type == ConfigResourceType.BROKER:
        if not name:
            return default_broker_entries(ctx.dynamic_config)
        node = ctx.metadata_cache.node_id
        if name != str(node):
            raise ResourceError(ErrorCode.INVALID_REQUEST,
                                f"Unexpected broker id, expected {node} or empty string, "
                                f"but received {name}")
        return broker_entries(ctx.config, ctx.dynamic_config)
    if resource_type == ConfigResourceType.GROUP:
        if not name:
            raise ResourceError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        return group_entries(ctx.group_configs, name)
    if resource_type == ConfigResourceType.CLIENT_METRICS:
        if not name:
            raise ResourceError(ErrorCode.INVALID_REQUEST,
                                "Client metrics subscription name must not be empty")
        return client_metrics_entries(ctx.client_metrics, name)
    raise ResourceError(ErrorCode.INVALID_REQUEST,
                        f"Unsupported resource type: {resource_type_name(resource_type)} "
                        "(kafka-net describes TOPIC, BROKER, GROUP and CLIENT_METRICS configs)")


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "results": [
        {"error_code": error_code, "error_message": None,
         "resource_type": r["resource_type"], "resource_name": r["resource_name"],
         "configs": []}
        for r in request.get("resources", [])]}
