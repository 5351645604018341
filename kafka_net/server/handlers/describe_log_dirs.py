"""DescribeLogDirs (API key 35): serves v1-v5; v0 while playing a release before 4.0.

Behaviour (Kafka's ``KafkaApis.handleDescribeLogDirsRequest`` and
``ReplicaManager.describeLogDirs``): one result per log directory, named by
its absolute path, listing the partitions in it with their size in bytes
(the log's ``size_in_bytes``: the batches it holds now, so DeleteRecords
and retention shrink it), offset_lag 0 (this node leads every partition:
Kafka's ``max(high watermark - log end offset, 0)``) and is_future_key false
(no AlterReplicaLogDirs move is ever in progress).

* topics null: every partition; otherwise only the named partitions this
  broker has (unknown ones are left out, as Kafka leaves them out); a topic
  with none left is omitted.
* v4: total_bytes and usable_bytes of the directory's file system
  (``os.statvfs``).  The in-memory log keeps its partitions in memory; it is
  reported under the first log dir (``log.dirs``, else ``log.dir``, else
  Kafka's default /tmp/kafka-logs),
  with the file system of the nearest existing directory on that path.  A
  durable log's partitions are grouped by the log dir holding their folder
  (``directory``'s parent).
* v5: is_cordoned (KIP-1066, Kafka 4.3) false: kafka-net has no
  ``cordoned.log.dirs``, so every directory takes new partitions.
* A directory whose file system cannot be read: KAFKA_STORAGE_ERROR for it.
* v3+: the top-level error_code (NONE; CLUSTER_AUTHORIZATION_FAILED with an
  empty result list when not authorized).
* v0 (Kafka 4.0 removed it, KIP-896) is served only while playing a release
  before 4.0 (``as.version``; ``legacy_low``).  Its wire format is v1's; v1
  only told the client that the broker answers before throttling (KIP-219),
  which kafka-net does at every version, as Kafka 2.0+ did.

ACL: DESCRIBE on the cluster (without it: no results, and CLUSTER_AUTHORIZATION_FAILED
at the top level from v3; v1-v2 have no field to say so).
"""

from __future__ import annotations

import logging
import os

from kafka_net.log_safety import RateLimitedLog
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation

API_KEY = ApiKey.DESCRIBE_LOG_DIRS

DEFAULT_LOG_DIR = "/tmp/kafka-logs"   # Kafka's log.dir default
log = logging.getLogger(__name__)
_storage_errors = RateLimitedLog(log)


def log_dirs(config) -> list[str]:
    """The configured log directories, absolute, in order (Kafka's ``logDirs``:
    log.dirs, else log.dir, else Kafka's default; the keys come with the durable log)."""
    dirs = getattr(config, "log_dirs", None) or [getattr(config, "log_dir", None)
                                                 or DEFAULT_LOG_DIR]
    if isinstance(dirs, str):
        dirs = [d for d in dirs.split(",") if d.strip()]
    return [os.path.abspath(d.strip()) for d in dirs]


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        # Kafka's answer: no results; the error shows from v3 only.
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    rm = ctx.replica_manager
    wanted = None if request["topics"] is None else {
        (t["topic"], index) for t in request["topics"] for index in t["partitions"]}
    dirs = log_dirs(ctx.config)
    by_dir: dict[str, dict[str, list]] = {d: {} for d in dirs}
    for partition in rm.all_partitions():
        if wanted is not None and (partition.topic, partition.index) not in wanted:
            continue
        home = _parent_dir(partition.log) or dirs[0]
        by_dir.setdefault(home, {}).setdefault(partition.topic, []).append({
            "partition_index": partition.index,
            "partition_size": partition.log.size_in_bytes,
            "offset_lag": 0, "is_future_key": False})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "results": [_result(path, topics) for path, topics in by_dir.items()]}


def _parent_dir(partition_log) -> str | None:
    """The log dir holding a durable log's partition folder (Kafka's ``parentDir``);
    None for a log in memory."""
    directory = getattr(partition_log, "directory", None)
    return os.path.dirname(os.path.abspath(directory)) if directory else None


def _result(path: str, topics: dict[str, list]) -> dict:
    try:
        total, usable = file_system_bytes(path)
    except OSError as exc:
        _storage_errors.log(logging.WARNING, path, "Unable to describe replica dirs for %s: %s",
                            path, exc)
        return {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": path, "topics": []}
    return {"error_code": ErrorCode.NONE, "log_dir": path,
            "topics": [{"name": name, "partitions": sorted(parts,
                                                           key=lambda p: p["partition_index"])}
                       for name, parts in sorted(topics.items())],
            "total_bytes": total, "usable_bytes": usable, "is_cordoned": False}


def file_system_bytes(path: str) -> tuple[int, int]:
    """(total, usable by this user) bytes of the file system holding ``path``, or of
    its nearest existing ancestor while ``path`` does not exist yet."""
    probe = path
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    stats = os.statvfs(probe)
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "results": []}
