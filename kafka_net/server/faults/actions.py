"""What a fired rule does to its request: the fault layer's side of KafkaApis.

:func:`respond` replaces ``KafkaApis.build_response`` for a request a rule
fired on.  It always tells the request's Processor first (a
:class:`~kafka_net.network.processor.ProcessorTask`), which writes the FAULT
record into the capture before anything of the answer, then:

* ``error``: on Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
  ShareFetch and ShareAcknowledge, the selected partitions answer the error
  and the others are served.  Produce and ShareAcknowledge change state, so
  before the work (the default) their selected partitions are taken out of
  the request and nothing is appended or acknowledged for them; with
  ``when="after"`` the work is done and the answer says it failed
  (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND: the client cannot
  tell that the append happened).  The others only read, and answer the
  error whatever ``when``.  Any other API answers its error response
  (``error_response``, the top-level error) without the work, or after it.
* ``coordinator_moved``: NOT_COORDINATOR as the top-level error, until the
  client sends FindCoordinator for the group (the registry disarms the rule).
* ``delay``: the answer is held ``delay_ms``, then sent; the connection stays
  muted meanwhile, as behind a slow handler.
* ``drop``: the work is done (``when="before"``: not even that) and the
  answer is lost; the connection stays open and is unmuted, so the client's
  next requests are served and only the dropped one times out.
* ``close``: ``before`` the answer, the work is done (``when="before"``: not
  even that) and the connection is closed instead of answering; ``after``,
  the answer is sent, then the connection is closed.
* ``throttle``: the answer carries ``throttle_time_ms`` and the connection is
  muted that long, as a quota throttles it (KIP-219).

``unavailable`` fires on no request: :mod:`.unavailable` does it.
"""

from __future__ import annotations

import json
import logging
import types

from kafka_net.network.processor import ProcessorTask
from kafka_net.network.request_channel import (
    CloseConnectionResponse, EndThrottlingResponse, NoOpResponse, SendResponse,
    StartThrottlingResponse)
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.server.faults.facts import topic_partitions, topic_ref
from kafka_net.server.faults.registry import Fired
from kafka_net.server.faults.rules import (
    AFTER, BEFORE, CLOSE, COORDINATOR_MOVED, DELAY, DROP, ERROR, THROTTLE)
from kafka_net.server.faults.unavailable import later
from kafka_net.server.handlers import CLOSE_CONNECTION, DEFERRED, NO_RESPONSE

log = logging.getLogger(__name__)

# Per API: request topics list, its partitions list and index field; response
# topics list, its partitions list and index field; an error entry's other fields.
_LAYOUT = {
    ApiKey.PRODUCE: ("topic_data", "partition_data", "index",
                     "responses", "partition_responses", "index",
                     {"base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1}),
    ApiKey.FETCH: ("topics", "partitions", "partition",
                   "responses", "partitions", "partition_index",
                   {"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                    "records": None}),
    ApiKey.LIST_OFFSETS: ("topics", "partitions", "partition_index",
                          "topics", "partitions", "partition_index", {}),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ("topics", "partitions", "partition",
                                     "topics", "partitions", "partition",
                                     {"leader_epoch": -1, "end_offset": -1}),
    ApiKey.SHARE_FETCH: ("topics", "partitions", "partition_index",
                         "responses", "partitions", "partition_index", {"records": None}),
    ApiKey.SHARE_ACKNOWLEDGE: ("topics", "partitions", "partition_index",
                               "responses", "partitions", "partition_index", {}),
}
_WRITES = (ApiKey.PRODUCE, ApiKey.SHARE_ACKNOWLEDGE)
_MARKERS = (CLOSE_CONNECTION, NO_RESPONSE)


def respond(apis, module, request, fired: Fired):
    """The Response for ``request`` with ``fired`` applied (None: sent later)."""
    tell_processor(apis, request, fired)
    action = fired.action
    work, body, transform = _plan(apis, module, request, fired)
    if work is not None:
        body = apis.run_handler(module, request, work)
    if body is DEFERRED:
        # Answered later (a long poll): the fault applies when it is.
        apis.fault_pending[request] = lambda later: finish(apis, request, action,
                                                           transform, later)
        return None
    return finish(apis, request, action, transform, body)


def _plan(apis, module, request, fired: Fired):
    """(request body to run the handler on, or None; the body if not run; a
    transform of the handler's body, or None)."""
    action = fired.action
    key, version = request.header.api_key, request.header.api_version
    body = request.body
    if action.kind in (DROP, CLOSE) and action.when == BEFORE:
        return None, NO_RESPONSE, None
    if action.kind not in (ERROR, COORDINATOR_MOVED):
        return body, None, None
    code = action.error_code
    if action.kind == ERROR and key in _LAYOUT:
        targets = fired.selection or topic_partitions(body or {}, _name_of(apis))
        transform = lambda b: _overwrite(apis, key, b, targets, code)   # noqa: E731
        if key in _WRITES and action.when == BEFORE:
            if key == ApiKey.PRODUCE and body.get("acks") == 0:
                return None, CLOSE_CONNECTION, None   # Kafka closes on an acks=0 error
            return _without(apis, key, body, targets), None, transform
        return body, None, transform
    error = lambda _b: module.error_response(body, version, code)   # noqa: E731
    if action.when == AFTER:
        return body, None, error
    return None, error(None), None


def finish(apis, request, action, transform, body):
    """The handler's body (or the error) to the Response the action calls for."""
    if transform is not None and body not in _MARKERS:
        body = transform(body)
    kind = action.kind
    if kind == DROP:
        return NoOpResponse(request)
    if kind == CLOSE and action.close == BEFORE:
        return CloseConnectionResponse(request)
    if kind == THROTTLE and isinstance(body, (dict, types.MappingProxyType)):
        body = dict(body)
        body["throttle_time_ms"] = action.throttle_ms
    response = apis.response_for(request, body)
    channel = apis.request_channel
    if kind == CLOSE and isinstance(response, SendResponse):
        response.on_complete = lambda: channel.send_response(
            ProcessorTask(request, _close_connection))
    elif kind == DELAY:
        later(action.delay_ms, channel.send_response, response)
        return None
    elif kind == THROTTLE:
        channel.send_response(StartThrottlingResponse(request))
        later(action.throttle_ms, channel.send_response, EndThrottlingResponse(request))
    return response


def _close_connection(processor, channel) -> None:
    if channel is not None:
        processor.close_connection(channel.id)


# -- partitions ---------------------------------------------------------------------

def _name_of(apis):
    faults = apis.faults
    return faults._topic_name_of


def _without(apis, key, body: dict, targets) -> dict:
    """``body`` less the target partitions (topics left empty go too)."""
    topics_key, parts_key, index_key = _LAYOUT[key][:3]
    name_of = _name_of(apis)
    kept = []
    for topic in body.get(topics_key) or ():
        drop = set(targets.get(topic_ref(topic, name_of), ()))
        parts = [p for p in topic[parts_key] if p[index_key] not in drop]
        if parts:
            kept.append({**topic, parts_key: parts})
    return {**body, topics_key: kept}


def _overwrite(apis, key, body, targets, code: int):
    """The handler's ``body`` with each target partition answering ``code``."""
    if not isinstance(body, dict):
        return body
    req_topics, _, _, resp_topics, parts_key, index_key, extra = _LAYOUT[key]
    name_of = _name_of(apis)
    topics = body.setdefault(resp_topics, [])
    for ref, partitions in targets.items():
        entry = next((t for t in topics if _same_topic(topic_ref(t, name_of), ref)), None)
        if entry is None:
            entry = {k: v for k, v in _request_topic(apis, key, ref).items()
                     if k in ("name", "topic", "topic_id")}
            entry[parts_key] = []
            topics.append(entry)
        answers = entry.setdefault(parts_key, [])
        for p in partitions:
            error = {index_key: p, "error_code": code, **extra}
            at = next((i for i, a in enumerate(answers) if a.get(index_key) == p), None)
            if at is None:
                answers.append(error)
            else:
                answers[at] = error
    return body


def _same_topic(a, b) -> bool:
    return (a[1] and a[1] == b[1]) or (bool(a[0]) and a[0] == b[0])


def _request_topic(apis, key, ref) -> dict:
    topic_id = ref[1]
    out = {"name": ref[0], "topic": ref[0]}
    if topic_id:
        import uuid
        out["topic_id"] = uuid.UUID(topic_id)
    return out


# -- the capture, and the broker going away -----------------------------------------------

def tell_processor(apis, request, fired: Fired) -> None:
    """Queue the FAULT record for the request's Processor (before its answer)."""
    channel = apis.request_channel
    if channel is None:
        return
    header = request.header
    note = {**fired.note(), "api_key": header.api_key, "api_version": header.api_version,
            "correlation_id": header.correlation_id}
    data = json.dumps(note, default=str).encode()
    stamp = fired.timestamp_ns

    def write(processor, conn) -> None:
        if processor.capture is not None and conn is not None:
            processor.capture.fault(conn.id, conn.peer_text, data, header.api_key,
                                    header.api_version, header.correlation_id, stamp)
    channel.send_response(ProcessorTask(request, write))
