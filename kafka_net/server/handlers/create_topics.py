"""CreateTopics (API key 19): serves v2-v7; v0-v1 while playing a release before
4.0 (KIP-896 removed them; ``as.version``, ``legacy_low``).

Behaviour (per topic, never a closed connection):

* An illegal name (Kafka's Topic.validate) or one that differs from an
  existing topic only in '.' against '_' (their metric names would clash):
  INVALID_TOPIC_EXCEPTION; an existing topic: TOPIC_ALREADY_EXISTS; the same
  name twice in one request: INVALID_REQUEST.
* num_partitions / replication_factor of -1 (v4+) take ``num.partitions`` /
  ``default.replication.factor``.  A replication factor above 1 gets
  INVALID_REPLICATION_FACTOR: this cluster has one broker.  Zero or negative
  partitions: INVALID_PARTITIONS.
* Manual assignments must place every replica on this broker
  (INVALID_REPLICA_ASSIGNMENT otherwise); their count is the partition count.
* More partitions than ``max.partitions.per.request`` (summed over the
  request's topics in order) or than ``max.broker.partitions`` leave room
  for: POLICY_VIOLATION, checked before anything is allocated
  (:mod:`kafka_net.server.partition_limits`).
* ``validate_only`` checks everything (the limits too) and creates nothing.
* ``__consumer_offsets`` and ``__transaction_state`` are the broker's own
  (:mod:`kafka_net.server.internal_topics`): TOPIC_ALREADY_EXISTS once they
  exist, INVALID_REQUEST "Creation of internal topic ... is prohibited." before
  (the answer Kafka's controller gives for ``__cluster_metadata``), so a client
  never lays one out.
* Topic configs are validated (INVALID_CONFIG with Kafka's message, e.g.
  ``Unknown topic config name: x``) and stored; the v5+ response lists every
  config of the topic with its source (:mod:`kafka_net.server.config_helper`).

With an authorizer (Kafka's handleCreateTopicsRequest): CREATE on the cluster,
or on each topic, else TOPIC_AUTHORIZATION_FAILED "Authorization failed."; the
configs of a created topic are returned only with DESCRIBE_CONFIGS on it
(else topic_config_error_code TOPIC_AUTHORIZATION_FAILED, v5+).
"""

from kafka_net.config.errors import InvalidConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.config_helper import created_topic_configs
from kafka_net.server.internal_topics import is_internal
from kafka_net.server.metadata_cache import topic_name_error
from kafka_net.server.partition_limits import RequestBudget, TopicCreationError

API_KEY = ApiKey.CREATE_TOPICS


def handle(ctx, request: dict) -> dict:
    names = [t["name"] for t in request["topics"]]
    creatable = describable = None   # None: everything (no authorizer)
    if ctx.authorizer is not None:
        creatable = (set(names) if ctx.authorize_cluster(AclOperation.CREATE, False)
                     else ctx.filter_authorized(AclOperation.CREATE, ResourceType.TOPIC, names))
        describable = ctx.filter_authorized(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC,
                                            names, log_if_denied=False)
    budget = RequestBudget(ctx.config.max_partitions_per_request)
    results = []
    for topic in request["topics"]:
        if names.count(topic["name"]) > 1:
            results.append(_result(topic["name"], ErrorCode.INVALID_REQUEST,
                                   "Create topics request from client contains a "
                                   "duplicate topic"))
            continue
        if creatable is not None and topic["name"] not in creatable:
            results.append(_result(topic["name"], ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                   "Authorization failed."))
            continue
        result = _create(ctx, topic, request["validate_only"], budget)
        if describable is not None and topic["name"] not in describable \
                and result["error_code"] == ErrorCode.NONE:
            # Created, but its configs are not the principal's to see.
            result.update(configs=None,
                          topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        results.append(result)
    return {"throttle_time_ms": 0, "topics": results}


def _create(ctx, topic: dict, validate_only: bool, budget: RequestBudget) -> dict:
    name = topic["name"]
    error = topic_name_error(name)
    if error:
        return _result(name, ErrorCode.INVALID_TOPIC_EXCEPTION, error)
    if ctx.metadata_cache.topic(name) is not None:
        return _result(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if is_internal(name):
        return _result(name, ErrorCode.INVALID_REQUEST,
                       f"Creation of internal topic {name} is prohibited.")
    partitions, rf, problem = _layout(ctx, topic)
    if problem:
        return _result(name, *problem)
    repository = ctx.config_repository
    try:
        overrides = repository.validate(name, {c["name"]: c["value"] for c in topic["configs"]})
    except InvalidConfig as exc:
        return _result(name, ErrorCode.INVALID_CONFIG, str(exc))
    refused = budget.error(partitions) or ctx.metadata_cache.creation_error(
        name, partitions, ctx.config.max_broker_partitions)
    if refused:
        return _result(name, refused.error_code, refused.message)
    budget.spend(partitions)
    topic_id = ZERO_UUID
    if not validate_only:
        try:
            created, fresh = ctx.try_create_topic(name, partitions, overrides)
        except TopicCreationError as exc:   # a concurrent creator took the room or the name
            return _result(name, exc.error_code, exc.message)
        if not fresh:  # lost a race with another creator
            return _result(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        topic_id = created.topic_id
    return {"name": name, "topic_id": topic_id, "error_code": ErrorCode.NONE,
            "error_message": None, "num_partitions": partitions, "replication_factor": rf,
            "configs": created_topic_configs(repository, name, overrides)}


def _layout(ctx, topic: dict):
    """(partitions, replication factor, None) or (0, 0, (error_code, message))."""
    node = ctx.metadata_cache.node_id
    if topic["assignments"]:
        if any(b != node for a in topic["assignments"] for b in a["broker_ids"]):
            return 0, 0, (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                          f"Replica assignments may only name broker {node}")
        return len(topic["assignments"]), 1, None
    partitions = topic["num_partitions"]
    rf = topic["replication_factor"]
    partitions = ctx.config.num_partitions if partitions == -1 else partitions
    rf = ctx.config.default_replication_factor if rf == -1 else rf
    if partitions <= 0:
        return 0, 0, (ErrorCode.INVALID_PARTITIONS,
                      f"Number of partitions must be larger than 0, not {partitions}.")
    if rf <= 0 or rf > 1:
        return 0, 0, (ErrorCode.INVALID_REPLICATION_FACTOR,
                      f"Replication factor: {rf} larger than available brokers: 1."
                      if rf > 1 else "Replication factor must be larger than 0.")
    return partitions, rf, None


def _result(name: str, error_code: int, message: str) -> dict:
    return {"name": name, "error_code": error_code, "error_message": message,
            "num_partitions": -1, "replication_factor": -1, "configs": None}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"topics": [_result(t["name"], error_code, None) for t in request.get("topics", [])]}
