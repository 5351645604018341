"""DescribeTopicPartitions (API key 75): serves v0-v0 (KIP-966).

Behaviour (Kafka's ``DescribeTopicPartitionsRequestHandler`` and
``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse``):

* The requested topics (all topics when the list is empty), sorted by name,
  from the cursor's topic on; the cursor's topic starts at its partition.
* At most min(``response_partition_limit``, max.request.partition.size.limit
  = 2000), and at least 1, partitions per answer.  When the limit stops the
  answer inside a topic, or before the next topic, ``next_cursor`` names
  where to go on.
* A requested topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION, an
  illegal name INVALID_TOPIC_EXCEPTION (both left out when listing all).
* A cursor whose topic is not among the requested ones, or with a negative
  partition, is an INVALID_REQUEST (on every requested topic).
* This node leads every partition; its replica set and ISR are itself; it
  keeps no eligible leader replicas (empty ELR lists) and no leader epochs (-1).

With an authorizer (Kafka's DescribeTopicPartitionsRequestHandler): listing
all, only the topics the principal may DESCRIBE; a named topic it may not
describe answers TOPIC_AUTHORIZATION_FAILED, existing or not; the authorized
operations are the principal's.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.handlers.metadata import TOPIC_OPERATIONS
from kafka_net.server.metadata_cache import topic_name_error

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000   # Kafka's max.request.partition.size.limit default


def handle(ctx, request: dict) -> dict:
    cursor = request["cursor"]
    start_topic = cursor["topic_name"] if cursor else ""
    fetch_all = not request["topics"]
    refused: set[str] = set()
    if fetch_all:
        names = [t.name for t in ctx.metadata_cache.topics()]
        if ctx.authorizer is not None:   # listing all: leave out what it may not describe
            names = list(ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                               names, log_if_denied=False))
    else:
        names = [t["name"] for t in request["topics"]]
        if ctx.authorizer is not None:
            refused = set(names) - ctx.filter_authorized(AclOperation.DESCRIBE,
                                                         ResourceType.TOPIC, names)
    names = sorted({n for n in names if n >= start_topic})
    if cursor is not None and ((not fetch_all and cursor["topic_name"] not in names)
                               or cursor["partition_index"] < 0):
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST)
    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT,
                        request["response_partition_limit"]), 1)
    topics, next_cursor = [], None
    for name in names:
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        if name in refused:   # whether it exists or not
            topics.append(_failed(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        topic = ctx.metadata_cache.topic(name)
        if topic is None:
            if not fetch_all:
                topics.append(_unknown(name))
            continue
        first = cursor["partition_index"] if cursor and name == start_topic else 0
        upper = min(topic.num_partitions, first + remaining)
        topics.append(_described(ctx, topic, range(first, upper)))
        if upper < topic.num_partitions:
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= max(upper - first, 0)
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}


def _described(ctx, topic, indexes: range) -> dict:
    node = ctx.metadata_cache.node_id
    epoch_of = ctx.replica_manager.leader_epoch
    return {"error_code": ErrorCode.NONE, "name": topic.name, "topic_id": topic.topic_id,
            "is_internal": topic.is_internal,
            "partitions": [
                {"error_code": ErrorCode.NONE, "partition_index": p, "leader_id": node,
                 "leader_epoch": epoch_of(topic.name, p), "replica_nodes": [node],
                 "isr_nodes": [node], "eligible_leader_replicas": [], "last_known_elr": [],
                 "offline_replicas": []} for p in indexes],
            "topic_authorized_operations": ctx.authorized_operations(
                ResourceType.TOPIC, topic.name, TOPIC_OPERATIONS)}


def _unknown(name: str) -> dict:
    error = (ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_error(name)
             else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return _failed(name, error)


def _failed(name: str, error_code: int) -> dict:
    return {"error_code": error_code, "name": name, "topic_id": ZERO_UUID,
            "is_internal": False, "partitions": []}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        _failed(t["name"], error_code) for t in request.get("topics", [])],
        "next_cursor": None}
