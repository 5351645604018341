"""DescribeQuorum (API key 55): serves v0-v2.

Behaviour (Kafka's ``KafkaRaftClient.handleDescribeQuorumRequest`` with
``RaftUtil.singletonDescribeQuorumResponse``), as a single node in KRaft
combined mode answers: the metadata quorum is this node alone, its one voter
and leader, with no observers.

* The request must name exactly the partition ``__cluster_metadata``-0;
  anything else gets UNKNOWN_TOPIC_OR_PARTITION on each partition named
  (with Kafka's message from v2).
* leader_id: this node; leader_epoch: 1, the epoch a freshly formatted
  single voter elects itself at; high_watermark: the metadata log's end
  offset (:class:`~kafka_net.server.metadata_log.MetadataLog`, 0 while the
  broker has none); the voter's log_end_offset is the same, and its
  last_fetch / last_caught_up timestamps (v1+) are now, as Kafka reports the
  leader's own.
* v2: the voter's replica_directory_id (a stable id derived from the cluster
  id and node id: kafka-net has no meta.properties directory.id) and
  ``nodes``, the voter's listeners: the advertised listeners clients reach
  (kafka-net opens no controller listener).

ACL: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED without it).
"""

from __future__ import annotations

import time
import uuid

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation

API_KEY = ApiKey.DESCRIBE_QUORUM

METADATA_TOPIC = "__cluster_metadata"
QUORUM_EPOCH = 1
UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    topics = request["topics"]
    if not (len(topics) == 1 and topics[0]["topic_name"] == METADATA_TOPIC
            and [p["partition_index"] for p in topics[0]["partitions"]] == [0]):
        return _partition_errors(request, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    cache = ctx.metadata_cache
    node = cache.node_id
    end_offset = metadata_log_end_offset(ctx)
    now = int(time.time() * 1000)
    voter = {"replica_id": node, "replica_directory_id": directory_id(cache.cluster_id, node),
             "log_end_offset": end_offset, "last_fetch_timestamp": now,
             "last_caught_up_timestamp": now}
    return {
        "error_code": ErrorCode.NONE, "error_message": None,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "leader_id": node, "leader_epoch": QUORUM_EPOCH, "high_watermark": end_offset,
            "current_voters": [voter], "observers": []}]}],
        "nodes": [{"node_id": node, "listeners": [
            {"name": e.listener_name, "host": e.host, "port": e.port}
            for e in cache.advertised_endpoints()]}],
    }


def metadata_log_end_offset(ctx) -> int:
    metadata_log = ctx.metadata_log
    return 0 if metadata_log is None else metadata_log.log.log_end_offset


def directory_id(cluster_id: str, node_id: int) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-net:{cluster_id}:{node_id}:metadata")


def _partition_errors(request: dict, error_code: int) -> dict:
    message = UNKNOWN_PARTITION_MESSAGE if error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION \
        else None
    return {"error_code": ErrorCode.NONE, "error_message": None, "nodes": [], "topics": [
        {"topic_name": t["topic_name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": error_code,
             "error_message": message, "leader_id": -1, "leader_epoch": -1,
             "high_watermark": -1, "current_voters": [], "observers": []}
            for p in t["partitions"]]}
        for t in request["topics"]]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "error_message": None, "topics": [], "nodes": []}
