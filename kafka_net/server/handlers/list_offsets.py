"""ListOffsets (API key 2): serves v1-v11; v0 too while playing a Kafka release
before 4.0.

Behaviour:

* timestamp -1 (latest) -> the log end offset; -2 (earliest) and -4
  (earliest local, v8+; no tiered storage, so the same) -> the log start
  offset, which DeleteRecords and retention move; all three with timestamp
  -1, as Kafka answers them.
* -3 (max timestamp, v7+, KIP-734) -> the offset and timestamp of the first
  record holding the largest timestamp (offset -1 on an empty log).
* -5 (latest tiered, v9+) and -6 (earliest pending upload, v11+, KIP-1023)
  -> -1, as Kafka answers them for a topic without tiered storage (there is
  none here).
* any other value -> the earliest record at or after the log start whose
  own timestamp (base timestamp + delta; a LogAppendTime batch's max
  timestamp) is >= it, looked up inside batches; offset -1 if none is.
  Batches compressed with snappy/lz4/zstd cannot be decoded here and are
  answered per batch (:mod:`kafka_net.server.storage.timestamps`).
* read_committed (isolation_level 1, v2+): latest (-1) is the last stable
  offset, the first offset of the oldest open transaction (the high
  watermark when none is open), as Kafka answers it; a timestamp or
  max-timestamp lookup that lands at or past it answers offset -1.
* Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION for that partition.
* leader_epoch (v4+): the epoch that wrote the offset found (from the log's
  leader epoch cache; the partition's epoch for latest), as Kafka's
  ``Partition.fetchOffsetForTimestamp``; current_leader_epoch is checked
  first: FENCED_LEADER_EPOCH if older, UNKNOWN_LEADER_EPOCH if newer.
* v0 (the old multi-offset form, KIP-896 removed it in Kafka 4.0) is served
  only while playing a release before 4.0 (``as.version``; ``legacy_low``),
  as Kafka 3.x's ``UnifiedLog.legacyFetchOffsetsBefore``: up to
  ``max_num_offsets`` offsets, descending, from the table of each segment's
  base offset (at least the log start) and, if the active segment holds
  data, the log end offset.  -1 starts from the log end, -2 is the log start
  alone, another timestamp starts from the last segment "modified" at or
  before it; kafka-net keeps no file times, so a segment's time is its
  largest record timestamp (the log end's is now).  A timestamp below -2
  answers UNSUPPORTED_VERSION for that partition, as Kafka.

With an authorizer: DESCRIBE on each topic, else its partitions answer
TOPIC_AUTHORIZATION_FAILED, existing or not (Kafka's handleListOffsetRequest).
"""

import functools

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.replica_manager import READ_COMMITTED, ReplicaManager

API_KEY = ApiKey.LIST_OFFSETS

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
EARLIEST_PENDING_UPLOAD = -6


def handle(ctx, request: dict) -> dict:
    rm = ctx.replica_manager
    topics = request["topics"]
    refused: list = []
    if ctx.authorizer is not None:
        described = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                          [t["name"] for t in topics])
        refused = [t for t in topics if t["name"] not in described]
        topics = [t for t in topics if t["name"] in described]
    if ctx.api_version == 0:
        lookup = functools.partial(_legacy_lookup, rm)
    else:
        lookup = functools.partial(_lookup, isolation_level=request.get("isolation_level", 0))
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [
            lookup(rm.partition(t["name"], p["partition_index"]), p)
            for p in t["partitions"]]}
        for t in topics] + error_response(
        {"topics": refused}, ctx.api_version, ErrorCode.TOPIC_AUTHORIZATION_FAILED)["topics"]}


def _lookup(partition, wanted: dict, isolation_level: int = 0) -> dict:
    out = {"partition_index": wanted["partition_index"], "leader_epoch": -1}
    if partition is None:
        return {**out, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    fenced = partition.leader_epoch_error(wanted["current_leader_epoch"])
    if fenced:
        return {**out, "error_code": fenced}
    log = partition.log
    ts = wanted["timestamp"]
    committed = isolation_level == READ_COMMITTED
    if ts == LATEST and committed:
        found = (ReplicaManager.last_stable_offset_of(partition), -1)
    elif ts == LATEST:
        found = (log.log_end_offset, -1)
    elif ts in (EARLIEST, EARLIEST_LOCAL):
        found = (log.log_start_offset, -1)
    elif ts == MAX_TIMESTAMP:
        found = log.max_timestamp_offset() or (-1, -1)
    elif ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        found = (-1, -1)
    else:
        hit = log.offset_for_timestamp(ts)
        found = (hit[0], hit[1]) if hit else (-1, -1)
    if committed and (ts == MAX_TIMESTAMP or ts >= 0):
        # Kafka's ReplicaManager.fetchOffset: a record found at or past the last
        # fetchable offset (the LSO for read_committed) is answered as none found.
        if found[0] >= ReplicaManager.last_stable_offset_of(partition):
            found = (-1, -1)
    offset, timestamp = found
    cache = log.leader_epoch_cache
    if offset < 0:
        epoch = -1
    elif ts == LATEST:
        epoch = partition.leader_epoch   # Partition.fetchOffsetForTimestamp
    else:
        epoch = cache.epoch_for_offset(offset)
    return {**out, "error_code": ErrorCode.NONE, "offset": offset, "timestamp": timestamp,
            "leader_epoch": epoch}


def _legacy_lookup(rm, partition, wanted: dict) -> dict:
    """v0: Kafka 3.x's ``Partition.legacyFetchOffsetsForTimestamp``."""
    out = {"partition_index": wanted["partition_index"], "old_style_offsets": []}
    ts = wanted["timestamp"]
    if ts < EARLIEST:   # v0 knows latest and earliest only among the negative values
        return {**out, "error_code": ErrorCode.UNSUPPORTED_VERSION}
    if partition is None:
        return {**out, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    log = partition.log
    start, now = log.log_start_offset, rm.clock_ms()
    infos = log.segment_infos()
    table = [(max(s.base_offset, start), s.largest_timestamp) for s in infos] or [(start, now)]
    if infos and infos[-1].size > 0:
        table.append((log.log_end_offset, now))
    if ts == LATEST:
        index = len(table) - 1
    elif ts == EARLIEST:
        index = 0
    else:
        index = next((i for i in range(len(table) - 1, -1, -1) if table[i][1] <= ts), -1)
    count = max(0, min(wanted["max_num_offsets"], index + 1))
    offsets = sorted((table[index - j][0] for j in range(count)), reverse=True)
    return {**out, "error_code": ErrorCode.NONE, "old_style_offsets": offsets}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": error_code}
            for p in t["partitions"]]}
        for t in request.get("topics", [])]}
