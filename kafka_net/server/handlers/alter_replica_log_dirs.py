"""AlterReplicaLogDirs (API key 34): serves v1-v2; v0 while playing a release before 4.0.

What ``kafka-reassign-partitions --reassignment-json-file`` with ``log_dirs``
and the Java AdminClient's ``alterReplicaLogDirs`` (kafka-python's
``alter_replica_log_dirs``) send to move a replica to another of its broker's
log directories (KIP-113).  Kafka's ``KafkaApis.handleAlterReplicaLogDirsRequest``
and ``ReplicaManager.alterReplicaLogDirs``, checked per partition in Kafka's
order:

* a topic too long for a future-log folder name (``<topic>-<partition>.<32 hex
  digits>-future`` over 255 characters): INVALID_TOPIC_EXCEPTION;
* a path that is not one of the broker's log dirs (``log.dirs``, else
  ``log.dir``, as absolute paths, compared as sent, as Kafka compares them):
  LOG_DIR_NOT_FOUND, whether the partition exists or not;
* a destination, or the partition's current log dir, that is offline:
  KAFKA_STORAGE_ERROR;
* a partition this broker does not have: UNKNOWN_TOPIC_OR_PARTITION (Kafka's
  ``getPartitionOrException`` for a topic not in the metadata; this node hosts
  every partition that is);
* the partition already in that dir: NONE, nothing moves.  The in-memory log
  (``log.store=memory``) counts as being in the first log dir, where
  DescribeLogDirs reports it.
* another online log dir: the replica moves there (Kafka's future replica and
  ``replaceCurrentWithFutureLog``, LogManager.move_log): its folder is copied
  into that dir, fsynced, renamed to the partition's name there, and swapped in;
  the old folder is renamed ``-delete`` and removed after
  ``file.delete.delay.ms``.  Kafka answers at once and copies in the background
  (DescribeLogDirs shows the future replica meanwhile); kafka-net copies before
  it answers, under the partition's lock, so appends to that partition wait for
  the copy, and the answer (NONE) means the move is done.  An I/O error takes
  the failing dir offline: KAFKA_STORAGE_ERROR.  The in-memory log has no folder
  to move: KAFKA_STORAGE_ERROR (Kafka's answer when it cannot create the future
  log), with a WARN.

A partition named twice is answered once, for the last dir naming it (Kafka
reads the request into a map).  The results are grouped by topic.

ACL: ALTER on the cluster; without it every partition named gets
CLUSTER_AUTHORIZATION_FAILED, one result per topic of each dir, as Kafka's
``getErrorResponse`` lists them.

v0 (Kafka 4.0 removed it, KIP-896) is served only while playing a release
before 4.0 (``legacy_low``); its wire format is v1's (v1 only said that the
broker answers before throttling, KIP-219).
"""

from __future__ import annotations

import logging
import os

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation
from kafka_net.server.handlers.describe_log_dirs import log_dirs
from kafka_net.server.storage.base import KafkaStorageException

API_KEY = ApiKey.ALTER_REPLICA_LOG_DIRS

# Kafka's UnifiedLog.logFutureDirName: "<topic>-<partition>." + a UUID without
# dashes (32) + "-future" (7), one folder name (at most 255 characters).
_FUTURE_SUFFIX_LENGTH = 1 + 32 + len("-future")
_MAX_FOLDER_NAME = 255

log = logging.getLogger(__name__)
_refusals = RateLimitedLog(log)


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    destinations: dict[tuple[str, int], str] = {}
    for alter_dir in request["dirs"]:
        for topic in alter_dir["topics"]:
            for index in topic["partitions"]:
                destinations[(topic["name"], index)] = alter_dir["path"]
    dirs = log_dirs(ctx.config)
    offline = _offline_dirs(ctx)
    by_topic: dict[str, list[dict]] = {}
    for (topic, index), destination in destinations.items():
        code = _alter(ctx, topic, index, destination, dirs, offline)
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": code})
    return {"throttle_time_ms": 0,
            "results": [{"topic_name": topic, "partitions": partitions}
                        for topic, partitions in by_topic.items()]}


def _alter(ctx, topic: str, index: int, destination: str, dirs: list[str],
           offline: set[str]) -> int:
    """One partition's answer, checked in ReplicaManager.alterReplicaLogDirs' order."""
    if len(f"{topic}-{index}") + _FUTURE_SUFFIX_LENGTH > _MAX_FOLDER_NAME:
        return _refused(ErrorCode.INVALID_TOPIC_EXCEPTION, topic, index, destination,
                        "the topic name is too long")
    if destination not in dirs:
        return _refused(ErrorCode.LOG_DIR_NOT_FOUND, topic, index, destination,
                        "the log dir is not found in the config")
    if destination in offline:
        return _refused(ErrorCode.KAFKA_STORAGE_ERROR, topic, index, destination,
                        "the log dir is offline")
    partition = ctx.replica_manager.partition(topic, index)
    if partition is None:
        return _refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic, index, destination,
                        "this broker has no such partition")
    current = current_log_dir(partition, dirs)
    if current in offline:
        return _refused(ErrorCode.KAFKA_STORAGE_ERROR, topic, index, destination,
                        f"the partition is in the offline log dir {current}")
    if current == destination:
        return ErrorCode.NONE
    return _move(ctx, partition, destination)


def _move(ctx, partition, destination: str) -> int:
    """The partition's log copied to ``destination`` and swapped in (LogManager.move_log)."""
    log_manager = getattr(ctx.services, "log_manager", None)
    if log_manager is None or not log_manager.durable:
        return _refused(ErrorCode.KAFKA_STORAGE_ERROR, partition.topic, partition.index,
                        destination, "the in-memory log (log.store=memory) has no folder to move")
    tp = (partition.topic, partition.index)
    try:
        ctx.replica_manager.replace_log(partition, lambda _: log_manager.move_log(tp, destination))
    except KafkaStorageException:
        return ErrorCode.KAFKA_STORAGE_ERROR   # the dir is offline now; logged by its channel
    except KeyError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION   # deleted while the request waited
    return ErrorCode.NONE


def current_log_dir(partition, dirs: list[str]) -> str:
    """The log dir holding the partition's folder; the first log dir for a log in
    memory (where DescribeLogDirs lists it)."""
    directory = getattr(partition.log, "directory", None)
    return os.path.dirname(os.path.abspath(directory)) if directory else dirs[0]


def _offline_dirs(ctx) -> set[str]:
    """The log dirs taken offline by an I/O error (none without a durable log)."""
    log_manager = getattr(ctx.services, "log_manager", None)
    return log_manager.failure_channel.offline_dirs() if log_manager is not None else set()


def _refused(code: int, topic: str, index: int, destination: str, why: str) -> int:
    # Kafka warns once per partition; a client looping on a bad path must not flood
    # the log, so one line per (error, destination) per interval.
    _refusals.log(logging.WARNING, (code, destination),
                  "Unable to alter log dirs for %s-%d to %s: %s", escape(topic), index,
                  escape(destination), why)
    return code


def error_response(request: dict, version: int, error_code: int) -> dict:
    """Kafka's getErrorResponse: every partition named, one result per topic of each dir."""
    return {"throttle_time_ms": 0, "results": [
        {"topic_name": topic["name"],
         "partitions": [{"partition_index": index, "error_code": error_code}
                        for index in topic["partitions"]]}
        for alter_dir in request["dirs"] for topic in alter_dir["topics"]]}
