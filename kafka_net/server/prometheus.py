"""Every metric of a running broker in Prometheus' format (``/metrics``), named as Strimzi names Kafka's.

Most Kafka dashboards and alert rules (Strimzi's Grafana dashboard and
``prometheus-kafka-rules.yaml``, the JMX exporter's Kafka example) query the
series that the Prometheus JMX exporter makes of Kafka's MBeans with
Strimzi's ``kafka-metrics.yaml`` rules.  This module applies the same
rules to kafka-net's MBean-style names (:func:`kafka_net.metrics.server_snapshot`),
with ``lowercaseOutputName``:

========================================================  ============================================================
Kafka MBean (kind)                                          series
========================================================  ============================================================
``kafka.X:type=T,name=NPerSec[,k=v[,k2=v2]]`` (meter)     ``kafka_x_t_n_total{k="v",...}``, a counter
``kafka.X:type=T,name=NPercent[,k=v]`` (gauge)            ``kafka_x_t_n_percent{k="v"}``, a gauge
``kafka.X:type=T,name=N[,k=v[,k2=v2]]`` (gauge)           ``kafka_x_t_n{k="v",...}``, a gauge
``kafka.network:type=RequestMetrics,name=TotalTimeMs,``   ``kafka_network_requestmetrics_totaltimems{request="Produce",
``request=Produce`` (histogram)                            quantile="0.99"}`` and ``..._count``, a summary
``kafka.server:type=socket-server-metrics,listener=L,``    ``kafka_server_socket_server_metrics_a{listener="L",...}``:
``networkProcessor=P`` attribute ``a``                     a counter when ``a`` ends in ``-total``, else a gauge
========================================================  ============================================================

Where kafka-net departs from those rules, and why:

* Label names are snake_case (``network_processor``, ``client_id``): Kafka's
  camelCase tags fail ``promtool check metrics``, and no Strimzi dashboard or
  alert rule filters on them.
* Kafka's percentiles come from a reservoir of the last minutes; kafka-net
  keeps bucket counts since startup (below) and estimates each quantile by
  linear interpolation inside its bucket, as ``histogram_quantile()`` does.
  The summary's ``_sum`` is there too (Strimzi's rules leave it out).
* ``connection-count`` and ``expired-connections-killed-count`` are untyped,
  not gauges: Prometheus reserves the ``_count`` suffix for histograms and
  summaries, and ``promtool check metrics`` exempts only untyped series.
* MBeans no Strimzi rule matches (the client quota sensors, a listener's
  connection-accept-rate, the memory pool's depletion) keep the exporter's
  default naming (``domain_type_name``, tags as labels), typed: a ``-total``
  or ``PerSec`` count is a counter, anything else a gauge.

In addition, as histograms with buckets (they add up across brokers and
scrapes, quantiles do not): Kafka's six request timings per API in seconds,
``kafka_network_requestmetrics_totaltime_seconds{request=...}`` and the
other five, with ``_bucket{le=...}``, ``_sum`` and ``_count``.  As in Kafka,
Fetch requests are counted under ``request="Fetch"`` and again under
``request="FetchConsumer"`` (every Fetch here is a consumer's).

The metrics clients push (KIP-714 PushTelemetry, decoded by
:mod:`kafka_net.server.client_metrics`) follow the broker's own, one family
per OTLP metric, named as OpenTelemetry's Prometheus exporter names them
(other characters become ``_``): a monotonic sum is a counter (deltas added
up), a gauge or other sum a gauge, a histogram a histogram, a summary a
summary; every sample carries the client's ``client_instance_id``,
``client_id``, ``client_software_name`` and ``client_software_version`` and
its own attributes as labels.  They go when the client instance expires.

The process collector of prometheus_client adds ``process_open_fds``,
``process_resident_memory_bytes`` and the rest, as the JMX exporter does.
"""

from __future__ import annotations

import logging
import re

from prometheus_client.core import HistogramMetricFamily, Metric

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.metrics import server_snapshot
from kafka_net.network.request_metrics import BUCKETS_MS, TIMINGS, merged, quantile
from kafka_net.protocol.api_keys import api_name

FETCH = 1   # kafka-net has no followers: every Fetch is a consumer's
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Kafka's metrics (not Yammer's): the MBean's attribute is the metric, which
# kafka-net's snapshot names with a trailing name= tag.
_ATTRIBUTE_TYPES = frozenset({"socket-server-metrics", "Produce", "Fetch", "Request"})
# The percentiles Kafka's Yammer histograms expose, as Strimzi's rules label them.
QUANTILES = (("0.50", 0.50), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98),
             ("0.99", 0.99), ("0.999", 0.999))


def _safe(text: str) -> str:
    """The JMX exporter's safe name: runs of other characters become one ``_``."""
    return _NOT_NAME.sub("_", text).strip("_")


def label_name(tag: str) -> str:
    """A Kafka tag as a snake_case label (``networkProcessor`` -> ``network_processor``)."""
    return _safe(_CAMEL.sub("_", tag)).lower()


def parse_mbean(mbean: str) -> tuple[str, str, str, list[tuple[str, str]]]:
    """(domain, type, name, [(tag, value)] in order) of ``domain:type=T,name=N,k=v``."""
    domain, _, rest = mbean.partition(":")
    props: list[list[str]] = []
    for part in rest.split(","):
        key, eq, value = part.partition("=")
        if eq and key:
            props.append([key, value])
        elif props:   # a "," inside a value (a client id, say)
            props[-1][1] += "," + part
    found = {key: value for key, value in props}
    tags = [(k, v) for k, v in props if k not in ("type", "name")]
    return domain, found.get("type", ""), found.get("name", ""), tags


def series(mbean: str) -> tuple[str, str, dict[str, str]]:
    """(metric name, "counter" or "gauge", labels) of one MBean, by the rules above."""
    domain, kind, name, tags = parse_mbean(mbean)
    labels = {label_name(k): v for k, v in tags}
    base = _safe(f"{domain}_{kind}").lower()
    if kind in _ATTRIBUTE_TYPES:
        attribute = _safe(name).lower()
        if name.endswith("-total") or name.endswith("Total"):
            return f"{base}_{attribute}", "counter", labels
        # connection-count: a gauge in Strimzi's rules, but a gauge named *_count
        # breaks Prometheus' naming rule (promtool); untyped, the same series passes.
        return f"{base}_{attribute}", "unknown" if attribute.endswith("_count") else "gauge", \
            labels
    if len(tags) <= 2 and "PerSec" in name:
        return f"{base}_{name[:name.rindex('PerSec')].lower()}_total", "counter", labels
    if len(tags) <= 1 and "Percent" in name:
        return f"{base}_{name[:name.rindex('Percent')].lower()}_percent", "gauge", labels
    return f"{base}_{_safe(name).lower()}", "gauge", labels


def _help(mbean: str) -> str:
    """``domain:type=T,name=N``: the MBean family, its tags left out."""
    domain, kind, name, _ = parse_mbean(mbean)
    return f"Kafka's {domain}:type={kind},name={name}"


class BrokerCollector:
    """A prometheus_client collector reading the server at each scrape."""

    def __init__(self, server) -> None:
        self.server = server

    def collect(self):
        families: dict[str, Metric] = {}
        for mbean, value in server_snapshot(self.server).items():
            name, kind, labels = series(mbean)
            family = families.get(name)
            if family is None:
                # prometheus_client writes a counter's samples with _total; its
                # family name goes without.
                family_name = (name[:-len("_total")] if kind == "counter"
                               and name.endswith("_total") else name)
                family = families[name] = Metric(family_name, _help(mbean), kind)
            family.add_sample(family.name + "_total" if kind == "counter" else name,
                              labels, float(value))
        yield from families.values()
        counts, sums = merged(p.request_timings for p in self.server.socket_server.processors)
        timings = [*_timing_summaries(counts, sums), *_timing_histograms(counts, sums)]
        yield from timings
        taken = {f.name for f in families.values()} | {f.name for f in timings}
        yield from client_families(self.server.apis.client_metrics, taken)


# -- what clients push (KIP-714) ---------------------------------------------------------------

_CLIENT_METRIC = re.compile(r"[^a-zA-Z0-9_:]+")
_SUFFIXES = ("_total", "_count", "_sum", "_bucket", "_created", "_info")
_LOG = logging.getLogger(__name__)
_dropped = RateLimitedLog(_LOG)


def client_metric_name(otlp_name: str) -> str:
    """An OTLP metric name as a Prometheus one (``org.apache.kafka.producer.
    node.request.latency.avg`` -> ``org_apache_kafka_producer_node_request_latency_avg``):
    runs of other characters become one ``_``, and a leading digit gets a ``_``."""
    name = _CLIENT_METRIC.sub("_", otlp_name).strip("_")
    return "_" + name if name[:1].isdigit() else name


def client_label_name(key: str) -> str:
    """An OTLP attribute key as a label name (``__`` is Prometheus' own prefix)."""
    name = _NOT_NAME.sub("_", key).strip("_")
    return "_" + name if name[:1].isdigit() else name


def client_families(manager, taken: set[str]):
    """The metrics clients pushed, one family per metric name, each sample with the
    client's labels (client_instance_id, client_id, client_software_name and
    _version) and the data point's and resource's attributes.  A name the broker's
    own series use, or that two clients push with different types, is left out
    (rate-limited log line): one family per name is what Prometheus accepts."""
    families: dict[str, Metric] = {}
    for client, pushed in manager.pushed_series():
        for (otlp_name, kind, attributes), value in pushed.items():
            name = client_metric_name(otlp_name)
            if kind == "counter" and name.endswith("_total"):
                name = name[:-len("_total")]
            family = families.get(name)
            if family is None:
                if not name or name in taken or name.endswith(_SUFFIXES):
                    _dropped.log(logging.INFO, ("name", name),
                                 "Not exporting client metric %s: its name is taken or "
                                 "reserved", escape(otlp_name))
                    continue
                family = families[name] = Metric(name, value.description or otlp_name, kind)
            elif family.type != kind:
                _dropped.log(logging.INFO, ("type", name),
                             "Not exporting client metric %s as a %s: it is a %s already",
                             escape(otlp_name), kind, family.type)
                continue
            labels = {client_label_name(k): v for k, v in attributes if client_label_name(k)}
            labels.update(client)
            _add_client_sample(family, name, kind, labels, value)
    return list(families.values())


def _add_client_sample(family: Metric, name: str, kind: str, labels: dict, value) -> None:
    if kind == "counter":
        family.add_sample(name + "_total", labels, value.value)
    elif kind == "gauge":
        family.add_sample(name, labels, value.value)
    elif kind == "histogram":
        running = 0.0
        bounds = [*(repr(float(b)) for b in value.bounds), "+Inf"]
        for bound, count in zip(bounds, value.buckets):
            running += count
            family.add_sample(name + "_bucket", {**labels, "le": bound}, running)
        family.add_sample(name + "_count", labels, value.count)
        family.add_sample(name + "_sum", labels, value.sum)
    else:
        for q, v in value.quantiles:
            family.add_sample(name, {**labels, "quantile": repr(float(q))}, v)
        family.add_sample(name + "_count", labels, value.count)
        family.add_sample(name + "_sum", labels, value.sum)


def _requests(counts: dict):
    """(request label, api key) per API, with Fetch again as FetchConsumer."""
    for key in sorted(counts):
        yield api_name(key), key
        if key == FETCH:
            yield "FetchConsumer", key


def _timing_summaries(counts: dict, sums: dict):
    """Kafka's Yammer timing histograms as Strimzi exports them: quantile gauges
    and a count, per request type (a Prometheus summary)."""
    for i, timing in enumerate(TIMINGS):
        name = f"kafka_network_requestmetrics_{timing.lower()}"
        family = Metric(name, f"Kafka's kafka.network:type=RequestMetrics,name={timing} "
                              "(ms; quantiles since startup)", "summary")
        for request, key in _requests(counts):
            buckets = counts[key][i]
            for label, q in QUANTILES:
                family.add_sample(name, {"request": request, "quantile": label},
                                  quantile(BUCKETS_MS, buckets, q))
            family.add_sample(name + "_count", {"request": request}, float(sum(buckets)))
            family.add_sample(name + "_sum", {"request": request}, float(sums[key][i]))
        yield family


def _timing_histograms(counts: dict, sums: dict):
    bounds = [str(b / 1000) for b in BUCKETS_MS] + ["+Inf"]
    for i, timing in enumerate(TIMINGS):
        family = HistogramMetricFamily(
            f"kafka_network_requestmetrics_{timing[:-len('Ms')].lower()}_seconds",
            f"Kafka's RequestMetrics {timing} per request type, in seconds",
            labels=["request"])
        for request, key in _requests(counts):
            cumulative, running = [], 0
            for bound, n in zip(bounds, counts[key][i]):
                running += n
                cumulative.append((bound, running))
            family.add_metric([request], cumulative, sum_value=sums[key][i] / 1000)
        yield family
