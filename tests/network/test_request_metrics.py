"""Kafka's six request timings and the ``kafka.request.logger`` line, on a real server."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest

from kafka_net.log_safety import TRACE
from kafka_net.network.request_metrics import (
    BUCKETS_MS, TIMINGS, RequestTimings, merged, timings_ms)
from kafka_net.protocol import encode_request
from kafka_net.protocol.api_keys import ApiKey
from tests.support import RawClient, fetch_body, request_body, server_fixture, wait_until

server = server_fixture()
LOGGER = "kafka.request.logger"


def _completed(caplog) -> list[dict]:
    return [json.loads(r.getMessage()[len("Completed request:"):]) for r in caplog.records
            if r.name == LOGGER and r.getMessage().startswith("Completed request:")]


def _request(**ns) -> SimpleNamespace:
    header = SimpleNamespace(api_key=3, api_version=12, correlation_id=7)
    return SimpleNamespace(header=header, connection_id="c", **ns)


def test_timings_are_kafkas_differences_cut_to_microseconds_and_never_negative():
    request = _request(start_time_ns=1_000, request_dequeue_time_ns=3_500_999,
                       api_local_complete_time_ns=4_000_000,
                       response_complete_time_ns=3_999_000,   # clock read out of order
                       response_dequeue_time_ns=9_000_000, end_time_ns=10_001_000)
    assert timings_ms(request) == (3.499, 0.499, 0.0, 5.001, 1.001, 10.0)


def test_histograms_count_each_request_once_in_every_timing():
    timings = RequestTimings("net-0")
    for end in (1_000_000, 7_000_000):   # 1 ms and 7 ms in all
        request = _request(start_time_ns=0, request_dequeue_time_ns=0,
                           api_local_complete_time_ns=0, response_complete_time_ns=0,
                           response_dequeue_time_ns=0, end_time_ns=0)
        timings.update(SimpleNamespace(request=request), end)
    counts, sums = merged([timings, RequestTimings()])
    assert [sum(buckets) for buckets in counts[3]] == [2] * len(TIMINGS)
    total = counts[3][TIMINGS.index("TotalTimeMs")]
    assert total[BUCKETS_MS.index(1)] == 1 and total[BUCKETS_MS.index(10)] == 1
    assert sums[3][TIMINGS.index("TotalTimeMs")] == 8
    assert [r[3] for r in timings.recent] == [7, 7]


def test_one_line_per_request_whose_timings_add_up(server, caplog):
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    port = server.socket_server.bound_port()
    with RawClient(port) as client:
        correlation_id = client.send(ApiKey.METADATA, 12, request_body(ApiKey.METADATA, 12))
        client.receive(ApiKey.METADATA, 12)
    assert wait_until(lambda: _completed(caplog))
    (line,) = [d for d in _completed(caplog)
               if d["requestHeader"]["correlationId"] == correlation_id]
    assert line["requestHeader"]["requestApiKeyName"] == "METADATA"
    assert line["request"] == "" and line["response"] == ""   # bodies only at TRACE
    assert line["principal"] == "User:ANONYMOUS" and line["listener"] == "PLAINTEXT"
    assert line["connection"].startswith("127.0.0.1:")
    parts = [line[k] for k in ("requestQueueTimeMs", "localTimeMs", "remoteTimeMs",
                               "responseQueueTimeMs", "sendTimeMs")]
    assert all(p >= 0 for p in parts)
    # Each part is cut to whole microseconds on its own: at most 5 µs apart.
    assert sum(parts) == pytest.approx(line["totalTimeMs"], abs=0.005)
    threads = line["threads"]
    assert threads["network"].startswith("data-plane-kafka-network-thread-")
    assert threads["handler"].startswith("data-plane-kafka-request-handler-")
    assert threads["response"] == threads["handler"]


def test_a_parked_fetch_spends_its_wait_as_remote_time(server, caplog):
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    port = server.socket_server.bound_port()
    with RawClient(port) as client:
        server.apis.create_topic("parked", 1)
        correlation_id = client.send(ApiKey.FETCH, 12, fetch_body(
            [("parked", 0, 0)], max_wait_ms=100, min_bytes=1000))
        client.receive(ApiKey.FETCH, 12)
    assert wait_until(lambda: any(d["requestHeader"]["correlationId"] == correlation_id
                                  for d in _completed(caplog)))
    (line,) = [d for d in _completed(caplog) if d["requestHeader"]["requestApiKey"] == 1]
    # Nothing to fetch: the request was parked in the fetch purgatory for max.wait.ms
    # (from its dequeue to its answer: at least 100 ms, less what each timing's cut
    # to microseconds loses), and the purgatory's reaper answered it.
    assert line["localTimeMs"] + line["remoteTimeMs"] >= 99.99
    assert line["remoteTimeMs"] > 0
    assert line["threads"]["response"] == "ExpirationReaper-Fetch"


def test_trace_logs_bodies_with_client_strings_escaped(server, caplog):
    caplog.set_level(TRACE, logger=LOGGER)
    port = server.socket_server.bound_port()
    with RawClient(port) as client:
        client.send_raw(encode_request(ApiKey.API_VERSIONS, 3, 0, dict(
            client_software_name="kcat", client_software_version="1.7"),
            client_id="evil\nclient"))
        client.receive(ApiKey.API_VERSIONS, 3)
    assert wait_until(lambda: _completed(caplog))
    raw = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert all("\n" not in m for m in raw)
    line = _completed(caplog)[0]
    assert line["requestHeader"]["clientId"] == "evil\\nclient"
    assert line["request"] == {"client_software_name": "kcat", "client_software_version": "1.7"}
    assert line["response"]["error_code"] == 0 and line["response"]["api_keys"]
