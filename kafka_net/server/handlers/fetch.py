"""Fetch (API key 1): serves v4-v18 (record batches; topic ids from v13); v0-v3
(legacy message sets) too while playing a Kafka release before 4.0.

Behaviour:

* Long polling: if fewer than ``min_bytes`` are available, ``max_wait_ms``
  is positive and the request names at least one partition, the request is
  parked in the fetch purgatory as a :class:`DelayedFetch` and the handler
  thread is freed at once.  An append to a watched partition completes it
  early; otherwise the purgatory's timer does at ``max_wait_ms``.  Either way
  the answer is read from the log as it is at that moment (Kafka's
  DelayedFetch).
* Sizes: partitions are filled in request order up to ``max_bytes`` (v3+)
  and each up to ``partition_max_bytes``, in whole batches.  The first batch
  of the first partition with data is returned even if it alone exceeds the
  limits, so a consumer always makes progress (KIP-74).
* Each partition answers high_watermark, last_stable_offset (the first
  offset of the oldest open transaction, else the high watermark) and
  log_start_offset; an offset outside [log start, log end]
  gets OFFSET_OUT_OF_RANGE; an unknown partition UNKNOWN_TOPIC_OR_PARTITION
  (UNKNOWN_TOPIC_ID by id in v13+).
* isolation_level 1 (read_committed): only batches before the last stable
  offset, and ``aborted_transactions``, (producer id, first offset) of every
  aborted transaction overlapping the range, so the consumer drops their
  records; a long poll waits for the LSO to move.  Control batches (COMMIT/
  ABORT markers) are returned as stored, in both isolation levels; clients
  skip them.  read_uncommitted gets an empty aborted list.
* Fetch sessions (KIP-227) are declined: every response carries session id
  0, which tells the client to send full requests; each one is served in
  full.  An incremental request (epoch > 0) names a session we never gave
  and gets FETCH_SESSION_ID_NOT_FOUND.
* Zero-copy: a durable log answers with a FileRegion (a segment file slice,
  Kafka's ``FileRecords.slice``) and it goes into the body as it is; the
  codec writes its length prefix only, and the Processor sends its bytes from
  the file with sendfile (``docs/design.md``, "One Fetch from the segment
  file to the socket").
* current_leader_epoch (v9+, KIP-320) is checked against the partition's
  leader epoch first: older FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH
  (Kafka's ``Partition.checkCurrentLeaderEpoch``); from v12 a fenced answer
  names the current leader and epoch (KIP-951).
* last_fetched_epoch (v12+, KIP-595/KIP-320) is checked against the log's
  epoch history: a fetch offset past the end of that epoch (or an epoch the
  log lost) answers diverging_epoch (epoch, end offset) and no records; an
  epoch the log cannot place answers OFFSET_OUT_OF_RANGE.
* v18 (KIP-1166) adds a follower's known high watermark to each partition
  (tagged; int64 max, "not supported", from consumers).  A leader uses it
  to complete a follower's long poll as soon as its high watermark moves;
  kafka-net has no followers (replica_id -1 everywhere), so a consumer's v18
  fetch is served as v17.
* v0-v3 carry legacy message sets (v0-v1 magic 0, v2-v3 magic 1); Kafka 4.0
  removed them (KIP-896).  They are served only while playing a Kafka
  release before 4.0 (``as.version``; ``legacy_low`` in apis.py), reading
  uncommitted, with the stored batches converted down as Kafka 3.x's
  ``RecordsUtil.downConvert`` does (:mod:`kafka_net.protocol.records.conversion`):
  control batches and headers dropped, the batch's codec kept, records of an
  uncompressed batch below the fetch offset skipped.  A zstd batch, or a
  topic whose compression.type is zstd, answers UNSUPPORTED_COMPRESSION_TYPE
  for that partition (zstd exists in neither format).  The converted
  messages are cut at whole messages to partition_max_bytes and max_bytes
  (v3), the first message always sent.
* With an authorizer: READ on each topic.  A topic the principal may not read
  answers TOPIC_AUTHORIZATION_FAILED in each of its partitions, whether it
  exists or not (an unknown topic id stays UNKNOWN_TOPIC_ID: ids are not
  secret); the rest are served and may park as usual.
"""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import RecordError, iter_batches
from kafka_net.protocol.records.conversion import down_convert
from kafka_net.protocol.records.legacy import trim_message_set
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.handlers import DEFERRED
from kafka_net.server.purgatory import DelayedOperation

API_KEY = ApiKey.FETCH
LEGACY_MAX_VERSION = 3

_INITIAL_EPOCH, _FINAL_EPOCH = 0, -1


def handle(ctx, request: dict):
    error = _session_error(ctx.api_version, request)
    if error is not None:
        return {"error_code": error, "session_id": 0, "responses": []}
    wanted = _resolve_topics(ctx, request)
    denied = ()
    if ctx.authorizer is not None:
        wanted, denied = _authorize(ctx, request, wanted)
    body, available = _read_all(ctx, request, wanted, denied)
    keys = [(name, p["partition"]) for name, _, parts in wanted if name for p in parts]
    # Kafka's ReplicaManager.fetchMessages answers at once when there is nothing
    # to wait for: no wait, no partition (no event could ever complete it), enough
    # bytes, or an error.
    if request["max_wait_ms"] <= 0 or not keys or available >= max(request["min_bytes"], 1) \
            or _has_errors(body, len(denied)):
        return body
    op = DelayedFetch(ctx, request, wanted, denied)
    ctx.replica_manager.fetch_purgatory.try_complete_else_watch(op, keys)
    return DEFERRED


class DelayedFetch(DelayedOperation):
    def __init__(self, ctx, request: dict, wanted: list, denied=()) -> None:
        super().__init__(request["max_wait_ms"])
        self.ctx, self.request, self.wanted, self.denied = ctx, request, wanted, denied

    def try_complete(self) -> bool:
        rm = self.ctx.replica_manager
        available = 0
        for name, _, partitions in self.wanted:
            for p in partitions:
                if name is None or rm.partition(name, p["partition"]) is None:
                    return self.force_complete()   # an error is an answer
                available += rm.bytes_available(name, p["partition"], p["fetch_offset"],
                                                self.request["isolation_level"])
        if available >= max(self.request["min_bytes"], 1):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        body, _ = _read_all(self.ctx, self.request, self.wanted, self.denied)
        self.ctx.complete(body)


def _session_error(version: int, request: dict) -> int | None:
    """A full fetch (epoch 0 or -1) is always served, without a session; an
    incremental one names a session, and we never created any (Kafka's
    FetchManager.newContext answers it FETCH_SESSION_ID_NOT_FOUND)."""
    if version < 7 or request["session_epoch"] in (_INITIAL_EPOCH, _FINAL_EPOCH):
        return None
    return ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def _resolve_topics(ctx, request: dict) -> list[tuple[str | None, object, list]]:
    """(topic name or None if the id is unknown, topic id, partitions) per topic."""
    cache = ctx.metadata_cache
    out = []
    for t in request["topics"]:
        if ctx.api_version >= 13:
            topic = cache.topic_by_id(t["topic_id"])
            out.append((topic.name if topic else None, t["topic_id"], t["partitions"]))
        else:
            topic = cache.topic(t["topic"])
            out.append((t["topic"], topic.topic_id if topic else ZERO_UUID, t["partitions"]))
    return out


def _authorize(ctx, request: dict, wanted: list) -> tuple[list, list]:
    """(the topics the principal may READ or whose id is unknown, the others).
    A follower's fetch (a replica id) needs CLUSTER_ACTION instead, for all."""
    names = [name for name, _, _ in wanted if name is not None]
    if _replica_id(request) >= 0:
        allowed = set(names) if ctx.authorize_cluster(AclOperation.CLUSTER_ACTION) else set()
    else:
        allowed = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC, names)
    return ([w for w in wanted if w[0] is None or w[0] in allowed],
            [w for w in wanted if w[0] is not None and w[0] not in allowed])


def _replica_id(request: dict) -> int:
    state = request.get("replica_state")
    return request.get("replica_id", -1) if state is None else \
        max(request.get("replica_id", -1), state.get("replica_id", -1))


def _denied_answer(name: str, topic_id, partitions: list) -> dict:
    return {"topic": name, "topic_id": topic_id, "partitions": [
        {"partition_index": p["partition"], "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
         "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
         "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}
        for p in partitions]}


def _read_all(ctx, request: dict, wanted: list, denied=()) -> tuple[dict, int]:
    """The response to the ``wanted`` topics, then the ``denied`` ones'
    TOPIC_AUTHORIZATION_FAILED answers; and the bytes read."""
    rm = ctx.replica_manager
    budget = request["max_bytes"]
    total = 0
    responses = []
    version = ctx.api_version
    to_magic = None if version > LEGACY_MAX_VERSION else (0 if version <= 1 else 1)
    for name, topic_id, partitions in wanted:
        answers = []
        for p in partitions:
            answer, size = _read_partition(rm, name, p, min(budget - total, p["partition_max_bytes"]),
                                           min_one=(total == 0),
                                           isolation_level=request["isolation_level"],
                                           node=ctx.metadata_cache.node_id)
            if to_magic is not None and answer["error_code"] == ErrorCode.NONE:
                answer, size = _down_convert(rm, name, p, answer, to_magic,
                                             min(budget - total, p["partition_max_bytes"]),
                                             total == 0)
            total += size
            answers.append(answer)
        responses.append({"topic": name or "", "topic_id": topic_id, "partitions": answers})
    for name, topic_id, partitions in denied:
        responses.append(_denied_answer(name, topic_id, partitions))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0,
            "responses": responses}, total


def _read_partition(rm, name, p: dict, max_bytes: int, min_one: bool,
                    isolation_level: int = 0, node: int = -1) -> tuple[dict, int]:
    answer = {"partition_index": p["partition"], "high_watermark": -1,
              "last_stable_offset": -1, "log_start_offset": -1,
              "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}
    if name is None:
        return {**answer, "error_code": ErrorCode.UNKNOWN_TOPIC_ID}, 0
    if p["current_leader_epoch"] >= 0:
        fenced = _leader_epoch_error(rm.partition(name, p["partition"]),
                                     p["current_leader_epoch"], node)
        if fenced is not None:
            return {**answer, **fenced}, 0
    if p["last_fetched_epoch"] >= 0:
        diverged = _diverging_epoch(rm, name, p)
        if diverged is not None:
            return {**answer, **diverged}, 0
    error, result = rm.read(name, p["partition"], p["fetch_offset"], max(max_bytes, 0), min_one,
                            isolation_level)
    if result is None:
        partition = rm.partition(name, p["partition"])
        if partition is not None:   # OFFSET_OUT_OF_RANGE still reports the log's bounds
            answer.update(high_watermark=partition.log.log_end_offset,
                          last_stable_offset=rm.last_stable_offset(name, p["partition"]),
                          log_start_offset=partition.log.log_start_offset)
        return {**answer, "error_code": error}, 0
    return {**answer, "error_code": ErrorCode.NONE, "high_watermark": result.high_watermark,
            "last_stable_offset": result.last_stable_offset,
            "log_start_offset": result.log_start_offset,
            "aborted_transactions": [{"producer_id": pid, "first_offset": first}
                                     for pid, first in result.aborted_transactions or ()],
            "records": result.records}, len(result.records)


def _down_convert(rm, name: str, p: dict, answer: dict, to_magic: int, max_bytes: int,
                  min_one: bool) -> tuple[dict, int]:
    """Fetch v0-v3: the partition's batches as a message set of ``to_magic``."""
    if rm.config_repository.log_config(name).compression_type == "zstd":
        return _unsupported_compression(answer), 0   # Kafka: the topic's config decides
    records = answer["records"]
    if not isinstance(records, (bytes, bytearray, memoryview)):
        records = records.read_bytes()   # a segment file's region: converted in memory
    try:
        converted = down_convert(iter_batches(records, allow_partial_tail=True), to_magic,
                                 p["fetch_offset"], rm.max_uncompressed_bytes)
    except RecordError as exc:
        if exc.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE:
            return _unsupported_compression(answer), 0
        raise
    converted = trim_message_set(converted, max(max_bytes, 0), min_one)
    return {**answer, "records": converted}, len(converted)


def _unsupported_compression(answer: dict) -> dict:
    return {**answer, "error_code": ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            "high_watermark": -1, "records": b""}


def _diverging_epoch(rm, name: str, p: dict) -> dict | None:
    """Kafka's ``Partition.readRecords`` with a last fetched epoch (v12+): the fetch
    offset must lie within the log's history of that epoch, else the answer is the
    diverging epoch and where it ends, with no records (the fetcher truncates)."""
    index, fetch_offset = p["partition"], p["fetch_offset"]
    error, epoch, end_offset = rm.last_offset_for_leader_epoch(
        name, index, p["current_leader_epoch"], p["last_fetched_epoch"])
    if error:
        return None if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else {"error_code": error}
    partition_log = rm.partition(name, index).log
    bounds = {"high_watermark": partition_log.log_end_offset,
              "last_stable_offset": rm.last_stable_offset(name, index),
              "log_start_offset": partition_log.log_start_offset}
    if end_offset < 0 or fetch_offset < partition_log.log_start_offset:
        return {**bounds, "error_code": ErrorCode.OFFSET_OUT_OF_RANGE}
    if epoch < p["last_fetched_epoch"] or end_offset < fetch_offset:
        return {**bounds, "error_code": ErrorCode.NONE,
                "diverging_epoch": {"epoch": epoch, "end_offset": end_offset}}
    return None


def _leader_epoch_error(partition, current_leader_epoch: int, node: int) -> dict | None:
    if partition is None:
        return None   # rm.read answers UNKNOWN_TOPIC_OR_PARTITION
    error = partition.leader_epoch_error(current_leader_epoch)
    if not error:
        return None
    out = {"error_code": error}
    if error == ErrorCode.FENCED_LEADER_EPOCH:
        # KIP-951: tell the client who leads now (this node) at which epoch.
        out["current_leader"] = {"leader_id": node, "leader_epoch": partition.leader_epoch}
    return out



def _has_errors(body: dict, denied: int = 0) -> bool:
    """An error among the served topics (the last ``denied`` ones are refusals:
    they do not stop the others from waiting, as in Kafka)."""
    served = body["responses"][:len(body["responses"]) - denied]
    return any(p["error_code"] != ErrorCode.NONE for t in served for p in t["partitions"])


def error_response(request: dict, version: int, error_code: int) -> dict:
    # The top-level error_code exists from v7 only; Kafka also puts the error in
    # every requested partition (below v13, where topics are named).
    responses = [] if version >= 13 else [
        {"topic": t.get("topic", ""), "topic_id": t.get("topic_id", ZERO_UUID),
         "partitions": [{"partition_index": p["partition"], "error_code": error_code,
                         "high_watermark": -1, "records": None} for p in t["partitions"]]}
        for t in request.get("topics", [])]
    return {"error_code": error_code, "session_id": 0, "responses": responses}
