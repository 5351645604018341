"""ListConfigResources (API key 74; ListClientMetricsResources until Kafka 4.1): serves v0-v1.

Behaviour (Kafka 4.2's ``KafkaApis.handleListConfigResources``, KIP-1142):

* DESCRIBE_CONFIGS on the cluster is required: CLUSTER_AUTHORIZATION_FAILED
  otherwise (nothing listed);
* v0 lists the client metrics subscriptions (KIP-714's
  ListClientMetricsResources);
* v1 lists the resources of the types asked for, all five when none is
  named: TOPIC (every topic), BROKER and BROKER_LOGGER (this node's id),
  GROUP (every group the coordinator knows and every group with config
  overrides), CLIENT_METRICS (every subscription).  A type outside those
  five is UNSUPPORTED_VERSION, as Kafka answers it (the types v1 covers
  are fixed; a new type needs a new version).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation
from kafka_net.server.config_helper import ConfigResourceType

API_KEY = ApiKey.LIST_CLIENT_METRICS_RESOURCES

V1_TYPES = (ConfigResourceType.TOPIC, ConfigResourceType.BROKER,
            ConfigResourceType.BROKER_LOGGER, ConfigResourceType.CLIENT_METRICS,
            ConfigResourceType.GROUP)


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE_CONFIGS):
        return error_response(request, ctx.api_version,
                              ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if ctx.api_version == 0:
        types = [ConfigResourceType.CLIENT_METRICS]
    else:
        types = list(dict.fromkeys(request["resource_types"])) or list(V1_TYPES)
        if any(t not in V1_TYPES for t in types):
            return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    resources = [{"resource_name": name, "resource_type": int(kind)}
                 for kind in types for name in _names(ctx, kind)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "config_resources": resources}


def _names(ctx, kind: int) -> list[str]:
    if kind == ConfigResourceType.CLIENT_METRICS:
        return ctx.client_metrics.list_resources()
    if kind == ConfigResourceType.TOPIC:
        return sorted(t.name for t in ctx.metadata_cache.topics())
    if kind in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
        return [str(ctx.metadata_cache.node_id)]
    groups = set(ctx.group_configs.all_overrides())
    if ctx.group_coordinator is not None:
        groups.update(g.group_id for g in ctx.group_coordinator.list_groups())
    return sorted(groups)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "config_resources": []}
