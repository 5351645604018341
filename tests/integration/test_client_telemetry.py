"""Client metrics (KIP-714) end to end: a real confluent-kafka (librdkafka 2.16)
producer and consumer against the real broker, a client-metrics subscription set
with IncrementalAlterConfigs, librdkafka's pushes decoded and scraped from
/metrics with the client's labels, and ``kafka-net decode`` showing them in a
capture.

confluent-kafka's AdminClient cannot name a CLIENT_METRICS resource (its
ResourceType has no 16: ``ConfigResource(16, ...)`` raises ValueError), so the
subscription is set with a raw IncrementalAlterConfigs, as kafka-configs.sh
--entity-type client-metrics sends it.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import RawClient, request_body, running_server, wait_until

pytestmark = pytest.mark.interop

TOPIC = "telemetry-topic"
CLIENT_METRICS = 16


@pytest.fixture(scope="module")
def server():
    with running_server(fast_group_config(metrics_listener="http://127.0.0.1:0")) as running:
        running.apis.create_topic(TOPIC, 1)
        yield running


def subscribe(server, name: str, **configs: str) -> None:
    with RawClient(server.bound_port()) as client:
        body = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, request_body(
            ApiKey.INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=[
                {"resource_type": CLIENT_METRICS, "resource_name": name, "configs": [
                    {"name": key.replace("_", "."), "config_operation": 0, "value": value}
                    for key, value in configs.items()]}]))
    assert body["responses"][0]["error_code"] == ErrorCode.NONE, body


def scrape(server) -> list:
    with urllib.request.urlopen(server.metrics_http.url + "/metrics", timeout=10) as answer:
        assert answer.status == 200
        text = answer.read().decode()
    return [s for f in text_string_to_metric_families(text) for s in f.samples]


def client_samples(server, client_id: str) -> list:
    return [s for s in scrape(server) if s.labels.get("client_id") == client_id]


def test_confluent_kafka_pushes_show_on_metrics_with_the_clients_labels_until_close(server):
    subscribe(server, "clients", metrics="org.apache.kafka.producer.,org.apache.kafka.consumer.",
              interval_ms="200")
    producer = Producer({"bootstrap.servers": bootstrap(server), "client.id": "tele-producer"})
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "client.id": "tele-consumer",
                         "group.id": "tele-group", "auto.offset.reset": "earliest"})
    try:
        for i in range(20):
            producer.produce(TOPIC, value=b"v%d" % i)
        assert producer.flush(20) == 0
        consumer.subscribe([TOPIC])
        got = 0
        for _ in range(300):
            msg = consumer.poll(0.1)
            got += msg is not None and not msg.error()
            if got == 20:
                break
        assert got == 20

        def pushed(client_id: str, prefix: str) -> bool:
            consumer.poll(0)   # keep the consumer's group session alive while waiting
            return any(s.name.startswith(prefix) for s in client_samples(server, client_id))
        assert wait_until(lambda: pushed("tele-producer", "org_apache_kafka_producer_"), 30)
        assert wait_until(lambda: pushed("tele-consumer", "org_apache_kafka_consumer_"), 30)
        check_scrape(server)
    finally:
        consumer.close()
        producer.flush(5)
        del producer
    # Closed, each client's connections went, and its instance with them (Kafka's
    # ClientMetricsManager connection disconnect listener), long before any expiry.
    assert wait_until(lambda: not client_samples(server, "tele-producer")
                      and not client_samples(server, "tele-consumer"), 30)


def check_scrape(server) -> None:
    """The clients' series, labelled as Kafka labels them, beside the broker's."""
    for client_id, prefix in (("tele-producer", "org_apache_kafka_producer_"),
                              ("tele-consumer", "org_apache_kafka_consumer_")):
        samples = client_samples(server, client_id)
        assert samples and all(s.name.startswith(prefix) for s in samples)
        labels = samples[0].labels
        assert labels["client_software_name"] == "confluent-kafka-python"
        assert labels["client_software_version"].startswith("2.16")
        assert len(labels["client_instance_id"]) == 22   # Kafka's base64 Uuid text
    # librdkafka reports per-broker latencies with the broker's id as an attribute.
    latency = [s for s in client_samples(server, "tele-producer")
               if s.name == "org_apache_kafka_producer_node_request_latency_avg"]
    assert latency and latency[0].labels["node_id"] == "1"
    # The broker's own series are still there, beside the clients', and the whole
    # scrape passes promtool (names, types, labels).
    assert any(s.name.startswith("kafka_server_") for s in scrape(server))
    with urllib.request.urlopen(server.metrics_http.url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    checked = subprocess.run(["promtool", "check", "metrics"], input=text,
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_kafka_net_decode_shows_librdkafkas_pushed_metrics_in_a_capture(tmp_path):
    captures = tmp_path / "captures"
    config = fast_group_config(metrics_listener="http://127.0.0.1:0",
                               capture_dir=str(captures))
    with running_server(config) as server:
        subscribe(server, "producers", metrics="org.apache.kafka.producer.", interval_ms="100")
        producer = Producer({"bootstrap.servers": bootstrap(server), "client.id": "captured"})
        producer.produce(TOPIC + "-captured", value=b"v")
        assert producer.flush(20) == 0
        assert wait_until(lambda: client_samples(server, "captured"), 30)
        del producer   # its last, terminating push
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    text = ""
    for path in sorted(captures.iterdir()):   # one file series per Processor
        done = subprocess.run([sys.executable, "-m", "kafka_net", "decode", str(path)],
                              capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        text += done.stdout
    assert "Kafka: PushTelemetry v0 request (api key 72)" in text
    assert ", zstd, OTLP: " in text              # librdkafka's first choice of ours
    assert "org.apache.kafka.producer.node.request.latency.avg (gauge) {node.id=1} = " in text
