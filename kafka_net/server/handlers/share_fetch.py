"""ShareFetch (API key 78): serves v1-v2 (KIP-932 share groups).

Behaviour (Kafka's handleShareFetchRequest and SharePartitionManager):

1. ``share.version`` below 1: UNSUPPORTED_VERSION.  A null or empty group id
   or member id: INVALID_REQUEST.
2. The share session (:mod:`kafka_net.server.share.share_session`): epoch 0
   opens one with the request's partitions (acknowledgements then are
   INVALID_REQUEST); N > 0 must be the session's epoch (else
   INVALID_SHARE_SESSION_EPOCH; no session SHARE_SESSION_NOT_FOUND) and adds
   the request's partitions, drops ``forgotten_topics_data`` (releasing the
   records the member holds there); -1 closes it.
   Session errors are top-level, nothing else is done.
3. The piggybacked acknowledgements are applied per partition
   (``acknowledge_error_code``: INVALID_RECORD_STATE for a record the member
   does not hold, INVALID_REQUEST for a malformed batch or a renew without
   ``is_renew_ack``).
4. Unless the session closed or ``is_renew_ack`` is set (a renewal fetches
   nothing, KIP-1222), records are acquired for the member in every partition
   of the session, at most ``max_records`` in all (v2 ``share_acquire_mode``
   1, record-limit, and 0, batch-optimized, both stop at ``max_records``) and
   about ``max_bytes``; each partition answers the whole batches holding its
   acquired records and ``acquired_records`` (offset ranges, delivery counts).
5. Long polling: if nothing was acquired, ``max_wait_ms`` > 0 and nothing went
   wrong, the request is parked (:class:`DelayedShareFetch`) until a watched
   partition has records to acquire (an append, a release, a lapsed lock) or
   the wait ends; the acquisition runs then.

The answer lists the partitions the request named, and every other partition
of the session with records or an error.  ``acquisition_lock_timeout_ms`` is
the group's ``share.record.lock.duration.ms``.

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED
(top-level); READ on each topic, else TOPIC_AUTHORIZATION_FAILED in its
partitions.  An unknown topic id answers UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.handlers import DEFERRED
from kafka_net.server.purgatory import DelayedOperation
from kafka_net.server.share.share_session import (
    FINAL_EPOCH, INITIAL_EPOCH, ShareSessionError)

API_KEY = ApiKey.SHARE_FETCH


def handle(ctx, request: dict):
    share = ctx.share_coordinator
    refused = refuse(ctx, share, request)
    if refused is not None:
        return refused
    group_id, member_id = request["group_id"], request["member_id"]
    requested, acks = request_partitions(request)
    epoch = request["share_session_epoch"]
    if epoch == INITIAL_EPOCH and any(acks.values()):
        return top_error(ErrorCode.INVALID_REQUEST,
                         "Acknowledge data present in Initial Fetch Request")
    try:
        partitions = _session_partitions(ctx, share, request, requested)
    except ShareSessionError as exc:
        return top_error(exc.error_code, str(exc))
    denied = denied_topics(ctx, partitions)
    answers = {tp: {} for tp in requested}
    renew = ctx.api_version >= 2 and request["is_renew_ack"]
    apply_acknowledgements(ctx, share, group_id, member_id, acks, denied, renew, answers)
    if epoch == FINAL_EPOCH:
        share.partitions.release(group_id, member_id, set(partitions))
        share.notify_all(group_id)
        return _body(ctx, share, group_id, answers)
    if renew:
        return _body(ctx, share, group_id, answers)
    fetch = _Fetch(ctx, share, request, partitions, denied, answers)
    acquired = fetch.run()
    if acquired or request["max_wait_ms"] <= 0 or not partitions or fetch.has_errors():
        return fetch.body()
    keys = {fetch.topic_key(tp) for tp in partitions} - {None}
    if not keys:
        return fetch.body()
    ctx.replica_manager.fetch_purgatory.try_complete_else_watch(DelayedShareFetch(fetch), keys)
    return DEFERRED


def refuse(ctx, share, request: dict) -> dict | None:
    """The answer to a ShareFetch or ShareAcknowledge that fails the checks both
    begin with (share groups served, the ids, READ on the group); None if it
    passes them."""
    if share is None:
        return top_error(ErrorCode.UNSUPPORTED_VERSION)
    error = check_ids(request)
    if error is not None:
        return top_error(ErrorCode.INVALID_REQUEST, error)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return top_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return None


def check_ids(request: dict) -> str | None:
    if not request["group_id"]:
        return "The group id must be provided."
    if not request["member_id"]:
        return "The member id must be provided."
    return None


def request_partitions(request: dict) -> tuple[list, dict]:
    """((topic id, partition) in request order, their acknowledgement batches as
    (first, last, types))."""
    requested, acks = [], {}
    for t in request["topics"]:
        for p in t["partitions"]:
            tp = (t["topic_id"], p["partition_index"])
            if tp not in acks:
                requested.append(tp)
            acks[tp] = acks.get(tp, []) + [
                (b["first_offset"], b["last_offset"], list(b["acknowledge_types"]))
                for b in p["acknowledgement_batches"]]
    return requested, acks


def _session_partitions(ctx, share, request: dict, requested: list) -> list:
    group_id, member_id = request["group_id"], request["member_id"]
    epoch = request["share_session_epoch"]
    sessions = share.sessions
    if epoch == INITIAL_EPOCH:
        session, old = sessions.open(group_id, member_id, requested, ctx.request.connection_id)
        if old is not None:   # a member restarting its session gives its records back
            share.partitions.release(group_id, member_id, set(old.partitions))
            share.notify_all(group_id)
        return list(session.partitions)
    session = sessions.advance(group_id, member_id, epoch)
    if epoch == FINAL_EPOCH:
        return list(dict.fromkeys(list(session.partitions) + requested))
    forgotten = {(t["topic_id"], p) for t in request["forgotten_topics_data"]
                 for p in t["partitions"]}
    for tp in forgotten:
        session.partitions.pop(tp, None)
    if forgotten and share.partitions.release(group_id, member_id, forgotten):
        share.notify_all(group_id)   # what it held there goes back to the others
    for tp in requested:
        session.partitions[tp] = None
    return list(session.partitions)


def denied_topics(ctx, partitions) -> set:
    """Topic ids the principal may not READ (none without an authorizer)."""
    if ctx.authorizer is None:
        return set()
    names = {}
    for topic_id, _ in partitions:
        meta = ctx.metadata_cache.topic_by_id(topic_id)
        if meta is not None:
            names[topic_id] = meta.name
    allowed = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC, set(names.values()))
    return {tid for tid, name in names.items() if name not in allowed}


def apply_acknowledgements(ctx, share, group_id: str, member_id: str, acks: dict,
                           denied: set, renew: bool, answers: dict) -> None:
    released = False
    for (topic_id, partition), batches in acks.items():
        if not batches:
            continue
        answer = answers.setdefault((topic_id, partition), {})
        if topic_id in denied:
            answer["acknowledge_error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        error, message = share.partitions.acknowledge(group_id, member_id, topic_id, partition,
                                                      batches, renew)
        answer["acknowledge_error_code"], answer["acknowledge_error_message"] = error, message
        released = True
    if released:
        share.notify_all(group_id)


class _Fetch:
    """One ShareFetch's acquisition, run now or when its DelayedShareFetch completes."""

    def __init__(self, ctx, share, request: dict, partitions: list, denied: set,
                 answers: dict) -> None:
        self.ctx, self.share, self.request = ctx, share, request
        self.partitions, self.denied, self.answers = partitions, denied, answers

    def topic_key(self, tp):
        meta = self.ctx.metadata_cache.topic_by_id(tp[0])
        return None if meta is None or tp[0] in self.denied else (meta.name, tp[1])

    def run(self) -> int:
        """Acquire in every partition of the session; how many records."""
        group_id, member_id = self.request["group_id"], self.request["member_id"]
        records_left = self.request["max_records"]
        if records_left <= 0:
            records_left = 2**31 - 1
        bytes_left = max(self.request["max_bytes"], 1)
        acquired = 0
        for tp in self.partitions:
            if tp[0] in self.denied:
                self.answers.setdefault(tp, {})["error_code"] = \
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if records_left <= 0 or bytes_left <= 0:
                continue
            result = self.share.partitions.fetch(group_id, member_id, tp[0], tp[1],
                                                 bytes_left, records_left)
            if result.error_code:
                answer = self.answers.setdefault(tp, {})
                answer["error_code"] = result.error_code
                answer["error_message"] = result.error_message
                continue
            if result.acquired:
                answer = self.answers.setdefault(tp, {})
                n = sum(a.last_offset - a.first_offset + 1 for a in result.acquired)
                acquired += n
                records_left -= n
                bytes_left -= len(result.records)
                answer["records"] = result.records
                answer["acquired_records"] = [a._asdict() for a in result.acquired]
        return acquired

    def has_errors(self) -> bool:
        return any(a.get("error_code") or a.get("acknowledge_error_code")
                   for a in self.answers.values())

    def body(self) -> dict:
        return _body(self.ctx, self.share, self.request["group_id"], self.answers)


class DelayedShareFetch(DelayedOperation):
    """A ShareFetch that acquired nothing, waiting up to ``max_wait_ms`` for records
    to acquire in one of its partitions (Kafka's DelayedShareFetch)."""

    def __init__(self, fetch: _Fetch) -> None:
        super().__init__(fetch.request["max_wait_ms"])
        self.fetch = fetch

    def try_complete(self) -> bool:
        group_id = self.fetch.request["group_id"]
        partitions = self.fetch.share.partitions
        for topic_id, partition in self.fetch.partitions:
            if topic_id not in self.fetch.denied and partitions.has_available(
                    group_id, topic_id, partition):
                return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.fetch.run()
        self.fetch.ctx.complete(self.fetch.body())


def _body(ctx, share, group_id: str, answers: dict) -> dict:
    topics: dict = {}
    for (topic_id, partition), a in answers.items():
        meta = ctx.metadata_cache.topic_by_id(topic_id)
        error = a.get("error_code", ErrorCode.NONE)
        if meta is None and not error and "acknowledge_error_code" not in a:
            error = ErrorCode.UNKNOWN_TOPIC_ID
        topics.setdefault(topic_id, []).append({
            "partition_index": partition, "error_code": error,
            "error_message": a.get("error_message"),
            "acknowledge_error_code": a.get("acknowledge_error_code", ErrorCode.NONE),
            "acknowledge_error_message": a.get("acknowledge_error_message"),
            "current_leader": current_leader(ctx, meta, partition),
            # Empty, never null, where nothing was acquired: Kafka answers
            # MemoryRecords.EMPTY, and librdkafka's ShareConsumer refuses a null
            # ("invalid MessageSetSize -1").
            "records": a.get("records") or b"",
            "acquired_records": a.get("acquired_records", [])})
    return response_body(share, group_id, topics)


def current_leader(ctx, meta, partition: int) -> dict:
    """A partition's CurrentLeader in ShareFetch and ShareAcknowledge answers: this
    broker and the leader epoch for a topic it has, -1 and -1 else."""
    if meta is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": ctx.metadata_cache.node_id,
            "leader_epoch": ctx.replica_manager.leader_epoch(meta.name, partition)}


def response_body(share, group_id: str, topics: dict) -> dict:
    """A ShareFetch or ShareAcknowledge answer: ``topics`` is topic id -> its partitions."""
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "acquisition_lock_timeout_ms": share.partitions.lock_duration_ms(group_id),
            "responses": [{"topic_id": t, "partitions": parts} for t, parts in topics.items()],
            "node_endpoints": []}


def top_error(error_code: int, message: str | None = None) -> dict:
    """A ShareFetch or ShareAcknowledge answer with a top-level error."""
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": message,
            "responses": [], "node_endpoints": []}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return top_error(error_code)
