"""Metadata (API key 3): serves v0-v13.

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
* leader_epoch (v7+) is the partition's leader epoch (0 from creation on one
  node), the epoch stamped in every batch it appends: clients (librdkafka,
  the Java consumer) then validate their positions with OffsetForLeaderEpoch
  (KIP-320).
* authorized-operations fields: with no authorizer every operation is
  allowed, so when asked we return the full bit set, as Kafka does; with one,
  the operations the principal is allowed (the cluster's only with DESCRIBE
  on it, else 0).
* v13's top-level error_code (KIP-1102) is 0 in every answer: the only value
  defined for it, REBOOTSTRAP_REQUIRED (129, "rebootstrap from
  bootstrap.servers"), is one Kafka 4.2's KafkaApis never sets either (its
  clients act on it when ``metadata.recovery.strategy=rebootstrap``).  A
  request refused as a whole (MetadataRequest.getErrorResponse) carries its
  error there as well as in each topic.
* With an authorizer (Kafka's handleTopicMetadataRequest): all topics lists
  only those the principal may DESCRIBE; a named topic it may not describe
  answers TOPIC_AUTHORIZATION_FAILED whether it exists or not (by id: with
  its id and a null name); auto-creating a topic also needs CREATE on the
  cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.messages.metadata import AUTHORIZED_OPERATIONS_OMITTED
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.internal_topics import is_internal
from kafka_net.server.metadata_cache import topic_name_error
from kafka_net.server.partition_limits import TopicCreationError

API_KEY = ApiKey.METADATA

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
        "cluster_authorized_operations": cluster_operations(
            ctx, request.get("include_cluster_authorized_operations")),
        "error_code": ErrorCode.NONE,
    }


def cluster_operations(ctx, wanted: bool) -> int:
    """The cluster_authorized_operations field (Metadata v8-v10, DescribeCluster)."""
    if not wanted:
        return AUTHORIZED_OPERATIONS_OMITTED
    if ctx.authorizer is None:
        return CLUSTER_OPERATIONS
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return 0
    return ctx.authorized_operations(ResourceType.CLUSTER, "kafka-cluster", CLUSTER_OPERATIONS)


def error_response(request: dict, version: int, error_code: int) -> dict:
    topics = request.get("topics") or []
    return {"brokers": [], "error_code": error_code, "topics": [
        {"error_code": error_code, "partitions": [],
         "name": t.get("name") if version >= 12 else (t.get("name") or "")} for t in topics]}


def _requested_topics(ctx, request: dict) -> list:
    """Topic descriptors: a TopicMetadata, or (name, topic_id, error_code)."""
    wanted = request["topics"]
    if wanted is None or (ctx.api_version == 0 and not wanted):
        topics = ctx.metadata_cache.topics()
        if ctx.authorizer is None:
            return topics
        # Listing all: what the principal may not describe is left out, unlogged.
        allowed = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                        [t.name for t in topics], log_if_denied=False)
        return [t for t in topics if t.name in allowed]
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
        if topic is not None and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                   topic.name):
            return (None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return topic or (None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
    # Never say whether a topic the principal may not describe exists.
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        return (name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if topic_name_error(name):
        return (name, ZERO_UUID, ErrorCode.INVALID_TOPIC_EXCEPTION)
    topic = cache.topic(name)
    if topic is not None:
        return topic
    allowed = ctx.config.auto_create_topics_enable and (
        ctx.api_version < 4 or request["allow_auto_topic_creation"])
    if not allowed:
        return (name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not (ctx.authorize_cluster(AclOperation.CREATE, log_if_denied=False)
            or ctx.authorize(AclOperation.CREATE, ResourceType.TOPIC, name)):
        return (name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
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
    if ctx.authorizer is not None and ops != AUTHORIZED_OPERATIONS_OMITTED:
        name = topic[0] if isinstance(topic, tuple) else topic.name
        ops = ctx.authorized_operations(ResourceType.TOPIC, name or "", TOPIC_OPERATIONS)
    if isinstance(topic, tuple):
        name, topic_id, error = topic
        return {"error_code": error, "name": name, "topic_id": topic_id, "partitions": [],
                "topic_authorized_operations": ops}
    node = ctx.metadata_cache.node_id
    epoch_of = ctx.replica_manager.leader_epoch
    name = topic.name
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": [
            {"error_code": ErrorCode.NONE, "partition_index": p, "leader_id": node,
             "leader_epoch": epoch_of(name, p), "replica_nodes": [node], "isr_nodes": [node],
             "offline_replicas": []}
            for p in range(topic.num_partitions)],
        "topic_authorized_operations": ops,
    }
