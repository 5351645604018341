"""The metrics listener (metrics.listener): /metrics scraped during a confluent-kafka
workload, /health through startup and shutdown, /requests for kafka-net top."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from kafka_net.server.kafka_server import KafkaServer
from kafka_net.server.metrics_http import MetricsHttpServer
from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import make_config, running_server, wait_until

pytestmark = pytest.mark.interop

TOPIC = "observed"
N = 50


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def scrape(server) -> dict[str, dict]:
    """{sample name: {frozenset(labels.items()): value}} of one /metrics scrape."""
    status, body = get(server.metrics_http.url + "/metrics")
    assert status == 200
    samples: dict[str, dict] = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return samples


def produce_and_consume(server, n: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    for i in range(n):
        producer.produce(TOPIC, value=b"v%d" % i)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "g",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    got = 0
    try:
        for _ in range(200):
            msg = consumer.poll(0.1)
            if msg is not None and not msg.error():
                got += 1
            if got == n:
                break
    finally:
        consumer.close()
    assert got == n


def _catching(errors: list, fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as exc:   # reported by the test thread
        errors.append(exc)


@pytest.fixture(scope="module")
def server():
    config = fast_group_config(metrics_listener="http://127.0.0.1:0")
    with running_server(config) as running:
        running.apis.create_topic(TOPIC, 1)
        yield running


def _total(samples: dict, name: str) -> float:
    return sum(samples.get(name, {}).values())


def test_metrics_during_a_real_client_workload(server):
    produce_and_consume(server, N)
    before = scrape(server)
    # Scrapes while a producer and a consumer run: each one parses, and the
    # counts of requests only go up.
    errors: list[BaseException] = []
    workload = threading.Thread(target=lambda: _catching(errors, produce_and_consume,
                                                         server, N))
    workload.start()
    seen = [_total(before, "kafka_network_requestmetrics_totaltimems_count")]
    while workload.is_alive():
        seen.append(_total(scrape(server), "kafka_network_requestmetrics_totaltimems_count"))
    workload.join()
    assert not errors, errors
    after = scrape(server)
    seen.append(_total(after, "kafka_network_requestmetrics_totaltimems_count"))
    assert len(seen) >= 3 and seen == sorted(seen) and seen[-1] > seen[0]

    rates = after["kafka_network_requestmetrics_requests_total"]
    versions = {dict(k)["version"] for k in rates if dict(k)["request"] == "Produce"}
    assert versions, rates.keys()
    produce_key = frozenset({("request", "Produce"), ("version", max(versions))})
    assert after["kafka_network_requestmetrics_requests_total"][produce_key] > (
        before["kafka_network_requestmetrics_requests_total"][produce_key])
    # Per listener and processor, with Kafka's tags as labels.
    counts = after["kafka_server_socket_server_metrics_connection_count"]
    assert {("listener", "PLAINTEXT"), ("network_processor", "0")} in [set(k) for k in counts]
    received = after["kafka_server_socket_server_metrics_response_total"]
    assert sum(received.values()) > sum(
        before["kafka_server_socket_server_metrics_response_total"].values())
    idle = after["kafka_network_processor_idlepercent"]
    assert len(idle) == 2 and all(0 <= v <= 1 for v in idle.values())
    for name in ("kafka_network_requestchannel_requestqueuesize",
                 "kafka_network_socketserver_networkprocessoravgidle_percent",
                 "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
                 "kafka_network_acceptor_acceptorblocked_percent",
                 "kafka_server_socket_server_metrics_connection_accept_rate"):
        assert name in after, name


def test_timing_histograms_count_every_request(server):
    # A flush after each message: one Produce request each, however librdkafka would
    # have batched them (five quick messages may go in one request on a busy machine).
    producer = Producer({"bootstrap.servers": bootstrap(server)})
    for i in range(3):
        producer.produce(TOPIC, value=b"h%d" % i)
        assert producer.flush(20) == 0
    # Every Produce is answered (acks=1, flushed) and so completed: the histograms
    # count exactly the requests RequestsPerSec counted, in every timing.
    def produce_counts():
        samples = scrape(server)
        rates = sum(v for k, v in samples["kafka_network_requestmetrics_requests_total"].items()
                    if dict(k)["request"] == "Produce")
        timings = [samples[f"kafka_network_requestmetrics_{t}_count"]
                   [frozenset({("request", "Produce")})]
                   for t in ("requestqueuetimems", "localtimems", "remotetimems",
                             "responsequeuetimems", "responsesendtimems", "totaltimems")]
        return rates, timings, samples

    assert wait_until(lambda: len(set(produce_counts()[1])) == 1
                      and produce_counts()[0] == produce_counts()[1][0])
    rates, timings, samples = produce_counts()
    assert rates >= 3 and timings == [rates] * 6
    # The bucketed histograms in seconds count the same requests.
    assert samples["kafka_network_requestmetrics_totaltime_seconds_count"][
        frozenset({("request", "Produce")})] == rates
    buckets = samples["kafka_network_requestmetrics_totaltime_seconds_bucket"]
    inf = buckets[frozenset({("request", "Produce"), ("le", "+Inf")})]
    assert inf == rates
    # Metadata, ApiVersions, ... each has its own histograms.
    apis = {dict(k)["request"] for k in samples["kafka_network_requestmetrics_totaltimems_count"]}
    assert {"Produce", "Fetch", "Metadata", "ApiVersions"} <= apis
    fetch = samples["kafka_network_requestmetrics_totaltimems_count"]
    assert fetch[frozenset({("request", "FetchConsumer")})] == (
        fetch[frozenset({("request", "Fetch")})])


def test_requests_json_names_the_threads_and_the_last_requests(server):
    produce_and_consume(server, 5)
    status, body = get(server.metrics_http.url + "/requests")
    assert status == 200
    view = json.loads(body)
    (listener,) = view["listeners"]
    assert listener["name"] == "PLAINTEXT" and len(listener["processors"]) == 2
    assert sum(p["requests_received"] for p in listener["processors"]) > 0
    assert len(view["handlers"]) == server.config.num_io_threads
    assert view["request_channel"]["queued_max_requests"] == 500
    recent = view["recent_requests"]
    assert recent and {"TotalTimeMs", "RemoteTimeMs", "api", "connection"} <= recent[-1].keys()


def test_health_is_503_until_every_listener_accepts_and_again_while_stopping():
    broker = KafkaServer(make_config())
    http = MetricsHttpServer(broker, "http://127.0.0.1:0")
    http.start()
    try:
        assert get(http.url + "/health")[0] == 503
        broker.startup()
        assert get(http.url + "/health") == (200, b"ok\n")
        broker.shutdown()
        assert get(http.url + "/health")[0] == 503
        assert get(http.url + "/nothing")[0] == 404
    finally:
        broker.shutdown()
        http.stop()


def test_off_by_default():
    with running_server(make_config()) as broker:
        assert broker.metrics_http is None
