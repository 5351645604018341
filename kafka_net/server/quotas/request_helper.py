"""Recording quota usage for a response and throttling the client (the quota
parts of Kafka's ``KafkaApis.handleProduceRequest``/``handleFetchRequest`` and
``RequestHandlerHelper.sendResponseMaybeThrottle``).

:func:`throttle_response` runs for every response once some quota is set:

* every API: the handler-thread time of the request is recorded against the
  client's request quota (``request_percentage``);
* Produce also records the request's size against ``producer_byte_rate``
  (acks=0 requests are exempt from the request quota, not from this one);
* Fetch records the response's size against ``consumer_byte_rate``; a
  throttled fetch takes the bytes back and answers with no data;
* the throttle is the larger of the two; the channel is muted for it (the
  StartThrottlingResponse is queued *before* the response, see
  :mod:`.throttled_channel`) and the body's ``throttle_time_ms`` says so.

The quota user is the name of the request's principal (Kafka's
``request.session.sanitizedUser``): ``alice`` for a SASL client that logged in
as alice, ``ANONYMOUS`` on PLAINTEXT.
"""

from __future__ import annotations

import time

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers import CLOSE_CONNECTION, NO_RESPONSE
from kafka_net.server.quotas.throttled_channel import ChannelThrottleCallback

ANONYMOUS = "ANONYMOUS"   # KafkaPrincipal.ANONYMOUS's name
_INT_MAX = 2**31 - 1


def quota_user(request) -> str:
    """The principal's name: "User:alice" -> "alice"."""
    return request.principal.partition(":")[2] or ANONYMOUS


def before_handle(quotas, request) -> None:
    """Cap a consumer's fetch at what one quota window allows (Kafka's
    ``getMaxValueInQuotaWindow``): a larger fetch would always be throttled, and
    a throttled fetch returns nothing, so the consumer would never progress."""
    if request.header.api_key != ApiKey.FETCH or not quotas.fetch.quotas_enabled:
        return
    body = request.body
    if body is None:
        return
    cap = quotas.fetch.max_value_in_quota_window(quota_user(request),
                                                 request.header.client_id or "")
    max_bytes = int(min(body["max_bytes"], cap, _INT_MAX))
    body["max_bytes"] = max_bytes
    body["min_bytes"] = min(body["min_bytes"], max_bytes)


def throttle_response(quotas, request, body, encode):
    """Record usage and maybe throttle; returns (body, encoded response or None).

    ``encode(body)`` makes the response frame; a Fetch is encoded here to
    measure it, and the bytes are handed back for reuse when not throttled.
    """
    user, client_id = quota_user(request), request.header.client_id or ""
    api_key = request.header.api_key
    now_ms = quotas.clock_ms()
    thread_ns = _thread_time_ns(request)
    if body is NO_RESPONSE or body is CLOSE_CONNECTION:
        # acks=0 produce: exempt from the request quota, still counted as bytes in.
        quotas.request.maybe_record_exempt(thread_ns, now_ms)
        if api_key == ApiKey.PRODUCE:
            bandwidth_ms = quotas.produce.maybe_record_and_get_throttle_time_ms(
                user, client_id, _request_size(request), now_ms)
            _throttle(quotas, quotas.produce, request, bandwidth_ms)
        return body, None
    request_ms = quotas.request.maybe_record_thread_time(user, client_id, thread_ns, now_ms)
    bandwidth, bandwidth_ms, data = quotas.request, 0, None
    if api_key == ApiKey.PRODUCE:
        bandwidth = quotas.produce
        bandwidth_ms = bandwidth.maybe_record_and_get_throttle_time_ms(
            user, client_id, _request_size(request), now_ms)
    elif api_key == ApiKey.FETCH:
        bandwidth = quotas.fetch
        if bandwidth.quotas_enabled:
            try:
                data = encode(body)
            except Exception:
                return body, None   # the caller encodes again, fails and logs it
            size = len(data) - 4   # Kafka's FetchResponse size: header and body
            bandwidth_ms = bandwidth.record_and_get_throttle_time_ms(user, client_id, size,
                                                                     now_ms)
            if bandwidth_ms > 0 or request_ms > 0:
                bandwidth.unrecord_quota_sensor(user, client_id, size, now_ms)
                body = _throttled_fetch_body()
    throttle_ms = max(bandwidth_ms, request_ms)
    request.api_throttle_time_ms = throttle_ms   # the request log's throttleTimeMs
    if throttle_ms <= 0:
        return body, data
    _throttle(quotas, bandwidth if bandwidth_ms > request_ms else quotas.request,
              request, throttle_ms)
    if isinstance(body, dict):
        body["throttle_time_ms"] = throttle_ms   # absent at some versions: not written
    return body, None


def _throttle(quotas, manager, request, throttle_ms: int) -> None:
    # Muting needs the Processors and the reaper thread (KafkaServer starts it); a
    # bare KafkaApis, as the benchmark's reference server uses, only reports the time.
    if throttle_ms > 0 and quotas.can_mute:
        manager.throttle(quota_user(request), request.header.client_id or "",
                         ChannelThrottleCallback(quotas.request_channel, request), throttle_ms)


def _throttled_fetch_body() -> dict:
    """FetchContext.getThrottledResponse: no data, no session."""
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0,
            "responses": []}


def _thread_time_ns(request) -> int:
    """Kafka's requestThreadTimeNanos: from dequeue to the handler's end (now, if
    the handler has not returned yet)."""
    if not request.request_dequeue_time_ns:
        return 0
    end = request.api_local_complete_time_ns or time.monotonic_ns()
    return max(end - request.request_dequeue_time_ns, 0)


def _request_size(request) -> int:
    """Kafka's ``request.sizeInBytes``: header plus body, without the size prefix."""
    header = request.header
    client_id = header.client_id
    size = 10 + (len(client_id.encode("utf-8")) if client_id else 0)
    return size + (1 if header.header_version >= 2 else 0) + request.body_size
