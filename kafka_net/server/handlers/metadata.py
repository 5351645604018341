"""Metadata (API key 3): serves v0-v12.

Behaviour:

* Brokers: this node only, at the advertised address of the listener the
  request came in on (clients reconnect to exactly that address).  It is also
  the controller and the leader of every partition, with an ISR of itself.
* Which topics: v0 with an empty list, or v1+ with a null list, means all;
  v1+ with an empty list means none.  From v10 a topic may be named by id;
  an unknown id gets UNKNOWN_TOPIC_ID.
* An unknown topic is created when ``auto.create.topics.enable`` is true and
  the request allows it (always before v4, ``allow_auto_topic_creation`` from
  v4), with ``num.partitions`` partitions; otherwise it gets
  UNKNOWN_TOPIC_OR_PARTITION.  Creation is synchronous here, so the answer
  already holds the new partitions (Kafka answers LEADER_NOT_AVAILABLE once
  while a new topic's leader is elected; clients retry either way).
* ``__consumer_offsets`` and ``__transaction_state`` are internal (flagged
  ``is_internal``): when auto-creation applies they are created as the broker
  creates them (:mod:`kafka_net.server.internal_topics`: 50 partitions,
  compacted), never as ordinary topics of ``num.partitions``.
* An illegal name gets INVALID_TOPIC_EXCEPTION and is never created; so does
  a name that collides with an existing topic ('.' against '_').  An
  auto-create past ``max.broker.partitions`` gets POLICY_VIOLATION.
* leader_epoch is -1: the log keeps no leader epochs, and -1 tells clients
  not to validate positions with OffsetForLeaderEpoch.
* authorized-operations fields: with no authorizer every operation is
  allowed, so when asked we return the full bit set, as Kafka does.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.messages.metadata import AUTHORIZED_OPERATIONS_OMITTED
from kafka_net.protocol.schema import ZERO_UUID, Versions
from kafka_net.server.internal_topics import is_internal
from kafka_net.server.metadata_cache import topic_name_error
from kafka_net.server.partition_limits import TopicCreationError

API_KEY = ApiKey.METADATA
VERSIONS = Versions(0, 12)

# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def handle(ctx, request: dict) -> dict:
    cache = ctx.metadata_cache
    endpoint = cache.endpoint_for(ctx.listener_name)
    brokers = [] if endpoint is None else [
        {"node_id": cache.node_id, "host": endpoint.host, "port": endpoint.port, "rack": None}]
    return {
        "throttle_time_ms": 0,
        "brokers": brokers,
        "cluster_id": cache.cluster_id,
        "controller_id": cache.node_id,
        "topics": [_describe(ctx, request, t) for t in _requested_topics(ctx, request)],
        "cluster_authorized_operations": (
            CLUSTER_OPERATIONS if request.get("include_cluster_authorized_operations")
            else AUTHORIZED_OPERATIONS_OMITTED),
    }


def error_response(request: dict, version: int, error_code: int) -> dict:
    topics = request.get("topics") or []
    return {"brokers": [], "topics": [
        {"error_code": error_code, "partitions": [],
         "name": t.get("name") if version >= 12 else (t.get("name") or "")} for t in topics]}


def _requested_topics(ctx, request: dict) -> list:
    """Topic descriptors: a TopicMetadata, or (name, topic_id, error_code)."""
    wanted = request["topics"]
    if wanted is None or (ctx.api_version == 0 and not wanted):
        return ctx.metadata_cache.topics()
    return [_lookup(ctx, request, t) for t in wanted]


def _lookup(ctx, request: dict, wanted: dict):
    cache = ctx.metadata_cache
    name, topic_id = wanted.get("name"), wanted.get("topic_id", ZERO_UUID)
    if name is None:
        if ctx.api_version < 12:
            # Names may be null in requests from v10 but in responses only from
            # v12; Kafka refuses lookups by id before v12.
            return ("", topic_id, ErrorCode.INVALID_REQUEST)
        topic = cache.topic_by_id(topic_id) if topic_id != ZERO_UUID else None
        return topic or (None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
    if topic_name_error(name):
        return (name, ZERO_UUID, ErrorCode.INVALID_TOPIC_EXCEPTION)
    topic = cache.topic(name)
    if topic is not None:
        return topic
    allowed = ctx.config.auto_create_topics_enable and (
        ctx.api_version < 4 or request["allow_auto_topic_creation"])
    if not allowed:
        return (name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if is_internal(name):   # AutoTopicCreationManager.creatableTopic: the broker's layout
        internal = ctx.internal_topics
        if internal is None or not internal.try_ensure(name):
            return (name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return cache.topic(name)
    try:
        return ctx.create_topic(name, ctx.config.num_partitions)
    except TopicCreationError as exc:
        return (name, ZERO_UUID, exc.error_code)


def _describe(ctx, request: dict, topic) -> dict:
    ops = (TOPIC_OPERATIONS if request.get("include_topic_authorized_operations")
           else AUTHORIZED_OPERATIONS_OMITTED)
    if isinstance(topic, tuple):
        name, topic_id, error = topic
        return {"error_code": error, "name": name, "topic_id": topic_id, "partitions": [],
                "topic_authorized_operations": ops}
    node = ctx.metadata_cache.node_id
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": [
            {"error_code": ErrorCode.NONE, "partition_index": p, "leader_id": node,
             "leader_epoch": -1, "replica_nodes": [node], "isr_nodes": [node],
             "offline_replicas": []}
            for p in range(topic.num_partitions)],
        "topic_authorized_operations": ops,
    }
