"""Kafka's request timings and request logger (``RequestChannel.updateRequestMetrics``).

Every Request carries the monotonic times at which it passed each hand-off::

    start_time_ns                 Processor parsed it (Request built)
    request_dequeue_time_ns       a handler thread took it off the RequestChannel
    api_local_complete_time_ns    KafkaApis.handle returned (the handler is done)
    response_complete_time_ns     the response was put on the Processor's queue
                                  (RequestChannel.send_response; later than the
                                  line above when the request waited in a purgatory)
    response_dequeue_time_ns      the Processor took the response off its queue
    end_time_ns                   the last byte was written (or, for NoOp and
                                  CloseConnection responses, the Processor acted)

and the six timings are their differences, computed once per completed
request on the Processor thread that completes it, as Kafka does:

=====================  =====================================================
RequestQueueTimeMs     request_dequeue - start
LocalTimeMs            api_local_complete - request_dequeue
RemoteTimeMs           response_complete - api_local_complete (purgatory,
                       e.g. a Fetch waiting for fetch.min.bytes)
ResponseQueueTimeMs    response_dequeue - response_complete
ResponseSendTimeMs     end - response_dequeue
TotalTimeMs            end - start (the sum of the five above)
=====================  =====================================================

Each difference is cut to microseconds and never negative (Kafka's
``nanosToMs``); the histograms take it rounded to whole milliseconds
(Kafka's ``Math.round``), the request log line keeps the microseconds.

Cost: one ``RequestTimings`` per Processor, written only by its own thread,
so no lock; per request six bucket increments and one small tuple in the
ring of recent requests (for ``kafka-net top``).  Readers (the metrics
endpoint) merge the Processors' copies; a read racing a write may see one
request counted in one histogram and not yet in the next, never a torn value.
"""

from __future__ import annotations

import collections
import json
import logging
import time
from bisect import bisect_left

from kafka_net.log_safety import TRACE, escape
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.chunked import ChunkedFrame

# Kafka's logger name; DEBUG: one line per completed request, TRACE: with bodies.
request_logger = logging.getLogger("kafka.request.logger")

TIMINGS = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
           "ResponseSendTimeMs", "TotalTimeMs")
# Upper bounds (ms, inclusive) of the histogram buckets; the last bucket is +Inf.
# Values are whole milliseconds (rounded, as Kafka's histograms take them), so
# le="0" counts the sub-millisecond requests of a loopback broker.
BUCKETS_MS = (0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)
N_BUCKETS = len(BUCKETS_MS) + 1
_SMALL = 11   # bucket index of 0..10 ms by table: most requests on a quiet broker
_SMALL_BUCKET = tuple(bisect_left(BUCKETS_MS, ms) for ms in range(_SMALL))
_OFFSETS = tuple(i * N_BUCKETS for i in range(6))   # where each timing's buckets start
_HALF_MS_NS = 500_000
RECENT_REQUESTS = 16
ANONYMOUS = "User:ANONYMOUS"   # until SASL/SSL listeners set Request.principal


def timings_ms(request) -> tuple[float, ...]:
    """The six timings of a completed request, in ms with microsecond precision."""
    start = request.start_time_ns
    dequeue = request.request_dequeue_time_ns
    local = request.api_local_complete_time_ns
    complete = request.response_complete_time_ns
    response_dequeue = request.response_dequeue_time_ns
    end = request.end_time_ns
    return (_ms(dequeue - start), _ms(local - dequeue), _ms(complete - local),
            _ms(response_dequeue - complete), _ms(end - response_dequeue), _ms(end - start))


def _ms(nanos: int) -> float:
    return max(nanos, 0) // 1000 / 1000


class RequestTimings:
    """One Processor's histograms of the six timings, per API key."""

    def __init__(self, network_thread: str = "") -> None:
        self.network_thread = network_thread   # the Processor's name, for the request log
        # api_key -> bucket counts (not cumulative), timing i's buckets at
        # [i * N_BUCKETS, (i + 1) * N_BUCKETS): one flat list, cheap to index
        self.counts: dict[int, list[int]] = {}
        # api_key -> six sums of the rounded ms values
        self.sums: dict[int, list[int]] = {}
        # (end_ns, api_key, api_version, correlation_id, connection_id, six ns): newest last
        self.recent: collections.deque = collections.deque(maxlen=RECENT_REQUESTS)

    def update(self, response, end_ns: int | None = None) -> None:
        """Kafka's updateRequestMetrics: the response is done with (now, or at
        ``end_ns``); record its request.

        On the Processor's hot path, so written for CPython's speed: no
        per-timing function calls, sub-millisecond values (which round to 0)
        straight into the first bucket, small ones' buckets from a table.
        """
        request = response.request
        if end_ns is None:
            end_ns = time.monotonic_ns()
        request.end_time_ns = end_ns
        start = request.start_time_ns
        dequeue = request.request_dequeue_time_ns
        local = request.api_local_complete_time_ns
        complete = request.response_complete_time_ns
        response_dequeue = request.response_dequeue_time_ns
        ns = (dequeue - start, local - dequeue, complete - local,
              response_dequeue - complete, end_ns - response_dequeue, end_ns - start)
        header = request.header
        key = header.api_key
        counts = self.counts.get(key)
        if counts is None:
            # sums first: a scrape that finds the counts must find the sums too
            self.sums[key] = [0] * len(TIMINGS)
            counts = self.counts[key] = [0] * (N_BUCKETS * len(TIMINGS))
        if ns[5] < _HALF_MS_NS:
            # The whole took under half a millisecond, so each of its five parts
            # (in order, none negative) rounds to 0 ms as well: all six in bucket 0.
            for offset in _OFFSETS:
                counts[offset] += 1
        else:
            sums = self.sums[key]
            for i, d in enumerate(ns):
                if d < _HALF_MS_NS:   # rounds to 0 ms (negative too): the usual case
                    counts[_OFFSETS[i]] += 1
                else:
                    # Kafka's Math.round(nanosToMs(d)): whole microseconds, then half up.
                    ms = (d // 1000 + 500) // 1000
                    bucket = _SMALL_BUCKET[ms] if ms < _SMALL else bisect_left(BUCKETS_MS, ms)
                    counts[_OFFSETS[i] + bucket] += 1
                    sums[i] += ms
        self.recent.append((end_ns, key, header.api_version, header.correlation_id,
                            request.connection_id, ns))
        if request_logger.isEnabledFor(logging.DEBUG):   # Python caches the answer
            log_completed_request(response, tuple(_ms(d) for d in ns), self.network_thread)


def merged(all_timings) -> tuple[dict[int, list[list[int]]], dict[int, list[int]]]:
    """The Processors' histograms added up: (api_key -> six lists of bucket
    counts, api_key -> six sums of whole ms)."""
    counts: dict[int, list[list[int]]] = {}
    sums: dict[int, list[int]] = {}
    for timings in all_timings:
        for key, flat in list(timings.counts.items()):
            flat = list(flat)   # one copy: the Processor keeps counting
            into = counts.setdefault(key, [[0] * N_BUCKETS for _ in TIMINGS])
            for i in range(len(TIMINGS)):
                part = flat[i * N_BUCKETS:(i + 1) * N_BUCKETS]
                into[i] = [a + b for a, b in zip(into[i], part)]
            total = sums.setdefault(key, [0] * len(TIMINGS))
            for i, value in enumerate(timings.sums[key]):
                total[i] += value
    return counts, sums


def quantile(bounds: tuple[int, ...], counts: list[int], q: float) -> float:
    """The ``q`` quantile of a bucketed distribution (``counts`` per bucket, the
    last one unbounded), interpolated inside its bucket as Prometheus'
    histogram_quantile() does; values past the last bound are reported at it."""
    total = sum(counts)
    if total == 0:
        return 0.0
    rank, seen, lower = q * total, 0, 0.0
    for bound, n in zip(bounds, counts):
        if n and seen + n >= rank:
            return lower + (bound - lower) * (rank - seen) / n
        seen += n
        lower = float(bound)
    return float(bounds[-1])


def recent_requests(all_timings, limit: int = RECENT_REQUESTS) -> list[tuple]:
    """The last ``limit`` completed requests over all Processors, oldest first:
    (end_ns, api_key, api_version, correlation_id, connection_id, six timings in ms)."""
    newest = sorted((r for t in all_timings for r in list(t.recent)), key=lambda r: r[0])
    return [(*r[:5], tuple(_ms(d) for d in r[5])) for r in newest[-limit:]]


def log_completed_request(response, timings: tuple[float, ...], network_thread: str) -> None:
    """Kafka's "Completed request:" line (RequestConvertToJson.requestDescMetrics),
    plus the names of the threads that handled the request (kafka-net's own)."""
    request = response.request
    header = request.header
    trace = request_logger.isEnabledFor(TRACE)
    queue_ms, local_ms, remote_ms, response_queue_ms, send_ms, total_ms = timings
    software_name, software_version = request.client_software
    desc = {
        "isForwarded": False,
        "requestHeader": {
            "requestApiKey": header.api_key, "requestApiVersion": header.api_version,
            "correlationId": header.correlation_id,
            # escape(): control characters as \xNN; json.dumps escapes the rest.
            "clientId": None if header.client_id is None else escape(header.client_id),
            "requestApiKeyName": _api_key_name(header.api_key)},
        "request": _loggable(request.body) if trace else "",
        "response": _response_body(response) if trace else "",
        "connection": request.connection_id,
        "totalTimeMs": total_ms, "requestQueueTimeMs": queue_ms, "localTimeMs": local_ms,
        "remoteTimeMs": remote_ms, "throttleTimeMs": request.api_throttle_time_ms,
        "responseQueueTimeMs": response_queue_ms, "sendTimeMs": send_ms,
        "securityProtocol": request.security_protocol,
        "principal": str(getattr(request, "principal", None) or ANONYMOUS),
        "listener": request.listener_name,
        "clientInformation": {"softwareName": escape(software_name),
                              "softwareVersion": escape(software_version)},
        "threads": {"network": network_thread, "handler": request.handler_thread,
                    "response": request.response_thread},
    }
    request_logger.debug("Completed request:%s", json.dumps(desc, separators=(",", ":"),
                                                            default=_json_default))


def _api_key_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)


def _loggable(body):
    # Kafka's loggableRequest hides config values (passwords may be among them).
    if isinstance(body, dict) and "resources" in body:
        body = json.loads(json.dumps(body, default=_json_default))
        for resource in body.get("resources") or []:
            for config in resource.get("configs") or []:
                if isinstance(config, dict) and "value" in config:
                    config["value"] = "[hidden]"
    return body


def _response_body(response):
    data = getattr(response, "data", None)
    if data is None:
        return ""
    from kafka_net.protocol.codec import decode_response   # TRACE only
    header = response.request.header
    if data.__class__ is ChunkedFrame:
        # Records sent from files: the line shows a records field as its size only,
        # so zeros stand in for the file's bytes; nothing is read from the files.
        data = b"".join(c if c.__class__ is bytes else bytes(c.size) for c in data.chunks)
    try:
        return decode_response(header.api_key, header.api_version, memoryview(data)[4:])[1]
    except Exception as exc:   # a log line must not fail the connection
        return f"<undecodable: {exc}>"


def _json_default(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(value)} bytes>"
    return repr(value)
