"""Strimzi's Kafka dashboard and alert rules find their series on kafka-net's /metrics.

strimzi_kafka_queries.json holds every PromQL query of Strimzi's Kafka
Grafana dashboard (``strimzi-kafka.json``) and of its Kafka alert rules, at
the commit it names.  Under a real client workload, each series a query
selects must be on /metrics with the labels it filters on, except:

* series other exporters give: the JVM's (``jvm_*``, the JMX exporter's JVM
  collectors; kafka-net has no JVM), the container runtime's and the kubelet's
  (``container_*``, ``kubelet_*``), and Prometheus' own ``up``;
* label matchers on labels Prometheus adds when it scrapes a Kubernetes pod
  (namespace, pod, the strimzi.io labels) or that hold a dashboard variable
  (``$kafka_topic``): the exporter does not write those.

``promtool check metrics`` (Debian's prometheus package; ``make test``
installs it) must find nothing to say about the same scrape.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import running_server

pytestmark = pytest.mark.interop

QUERIES = json.loads((Path(__file__).with_name("strimzi_kafka_queries.json")).read_text())
OTHER_EXPORTERS = ("jvm_", "container_", "kubelet_")
PROMETHEUS_OWN = {"up"}
SCRAPE_LABELS = {"namespace", "pod", "container", "kubernetes_pod_name", "kubernetes_namespace",
                 "strimzi_io_cluster", "strimzi_io_name", "persistentvolumeclaim"}
# PromQL words that look like metric names.
FUNCTIONS = {"sum", "count", "rate", "irate", "by", "absent", "count_over_time", "query_result",
             "avg", "max", "min", "without", "on", "ignoring", "and", "or", "unless"}
SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?")
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"')
TOPIC = "dashboard-topic"


def selectors(query: str) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(metric name, [(label, op, value)]) of each series selector in ``query``."""
    found = []
    without_ranges = re.sub(r"\[[^\]]*\]", "", query)
    # Names inside by (...) are labels, not metrics.
    without_groupings = re.sub(r"\b(by|without)\s*\([^)]*\)", "", without_ranges)
    for m in SELECTOR.finditer(without_groupings):
        name, braces = m.group(1), m.group(2)
        if name in FUNCTIONS or (braces is None and not name.startswith(("kafka_", "process_"))):
            continue
        found.append((name, MATCHER.findall(braces or "")))
    return found


def query_selectors() -> list[tuple[str, list]]:
    out = []
    for query in QUERIES["dashboard_queries"] + QUERIES["alert_queries"]:
        for name, matchers in selectors(query):
            if name.startswith(OTHER_EXPORTERS) or name in PROMETHEUS_OWN:
                continue
            checkable = [(label, op, value) for label, op, value in matchers
                         if label not in SCRAPE_LABELS and "$" not in value]
            if (name, checkable) not in out:
                out.append((name, checkable))
    return out


def matches(labels: dict, label: str, op: str, value: str) -> bool:
    have = labels.get(label, "")
    if op == "=":
        return have == value
    if op == "!=":
        return have != value
    hit = re.fullmatch(value, have) is not None
    return hit if op == "=~" else not hit


def scrape(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        return answer.read().decode()


@pytest.fixture(scope="module")
def scraped() -> str:
    with running_server(fast_group_config(metrics_listener="http://127.0.0.1:0")) as server:
        server.apis.create_topic(TOPIC, 2)
        producer = KafkaProducer(bootstrap_servers=bootstrap(server))
        for i in range(20):
            producer.send(TOPIC, b"v%d" % i, partition=i % 2).get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap(server),
                                 auto_offset_reset="earliest", consumer_timeout_ms=5000)
        assert len(list(consumer)) == 20
        consumer.close()
        yield scrape(server.metrics_http.url)


def test_the_query_list_is_what_it_says():
    assert re.fullmatch(r"[0-9a-f]{40}", QUERIES["commit"])
    names = {name for name, _ in query_selectors()}
    assert len(names) >= 25, names   # the dashboard's broker panels and the alert rules
    assert "kafka_server_brokertopicmetrics_bytesin_total" in names


@pytest.mark.parametrize("name, matchers", query_selectors(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_series_the_dashboard_and_alerts_query_is_exposed(scraped, name, matchers):
    samples = [s for family in text_string_to_metric_families(scraped)
               for s in family.samples if s.name == name]
    assert samples, f"/metrics has no {name}"
    assert any(all(matches(s.labels, *m) for m in matchers) for s in samples), (
        f"no {name} sample with {matchers}: {[s.labels for s in samples]}")


def test_topic_meters_count_the_workload(scraped):
    values = {(s.name, s.labels.get("topic", "")): s.value
              for family in text_string_to_metric_families(scraped) for s in family.samples}
    assert values[("kafka_server_brokertopicmetrics_messagesin_total", TOPIC)] == 20
    assert values[("kafka_server_brokertopicmetrics_totalproducerequests_total", TOPIC)] == 20
    assert values[("kafka_server_brokertopicmetrics_bytesout_total", TOPIC)] >= (
        values[("kafka_server_brokertopicmetrics_bytesin_total", TOPIC)] > 0)


def test_promtool_finds_nothing_to_say(scraped):
    result = subprocess.run(["promtool", "check", "metrics"], input=scraped,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_openmetrics_when_the_scraper_asks_for_it():
    with running_server(fast_group_config(metrics_listener="http://127.0.0.1:0")) as server:
        request = urllib.request.Request(
            server.metrics_http.url + "/metrics",
            headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read().decode()
            assert answer.headers["Content-Type"].startswith("application/openmetrics-text")
        assert body.endswith("# EOF\n")
        assert "kafka_controller_kafkacontroller_activecontrollercount 1.0" in body
        plain = scrape(server.metrics_http.url)
        assert "# EOF" not in plain


def test_a_broker_on_the_durable_log_reports_its_log_sizes(tmp_path):
    """kafka.log:type=Log,name=Size comes from the partition's segment files."""
    config = fast_group_config(metrics_listener="http://127.0.0.1:0", log_store="disk",
                               log_dirs=(str(tmp_path),))
    with running_server(config) as server:
        server.apis.create_topic(TOPIC, 1)
        producer = KafkaProducer(bootstrap_servers=bootstrap(server))
        producer.send(TOPIC, b"v", partition=0).get(timeout=30)
        producer.close()
        sizes = {s.labels["topic"]: s.value
                 for family in text_string_to_metric_families(scrape(server.metrics_http.url))
                 for s in family.samples if s.name == "kafka_log_log_size"}
    on_disk = sum(p.stat().st_size for p in (tmp_path / f"{TOPIC}-0").glob("*.log"))
    assert sizes[TOPIC] == on_disk > 0
