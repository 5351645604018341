"""Every metric of a running broker in Prometheus' text format (``/metrics``).

Names are those the Prometheus JMX exporter gives Kafka's MBeans with its
default rules and ``lowercaseOutputName``: ``domain_type_name`` lower-cased,
every other key of the MBean name a label, characters Prometheus does not
allow in a name turned into ``_``::

    kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=9
    -> kafka_network_requestmetrics_requestspersec{request="Produce",version="9"}
    kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=0,name=connection-count
    -> kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT",networkProcessor="0"}

Like the exporter's default output these are untyped: a ``...PerSec`` or
``...-total`` value is a count since startup (take ``rate()`` of it), the rest
are gauges.

Kafka's six request timings (``kafka.network:type=RequestMetrics,name=TotalTimeMs,
request=<Api>``, ...) are histograms here, not the exporter's quantile
summaries: buckets add up across brokers and scrapes, quantiles do not, and
``histogram_quantile()`` gives the percentiles back.  The buckets are in ms
(``request_metrics.BUCKETS_MS``); ``_count`` is every request completed.
As in Kafka, Fetch requests are in ``request="Fetch"`` and again in
``request="FetchConsumer"`` (every Fetch here is a consumer's).
"""

from __future__ import annotations

import re

from prometheus_client.core import HistogramMetricFamily, Metric

from kafka_net.metrics import server_snapshot
from kafka_net.network.request_metrics import BUCKETS_MS, TIMINGS, merged
from kafka_net.protocol.api_keys import api_name

FETCH = 1   # kafka-net has no followers: every Fetch is a consumer's
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(mbean: str) -> tuple[str, dict[str, str]]:
    """(metric name, labels) of an MBean-style name ``domain:type=T,name=N,k=v``."""
    domain, _, rest = mbean.partition(":")
    props: dict[str, str] = {}
    last = None
    for part in rest.split(","):
        key, eq, value = part.partition("=")
        if eq and key:
            props[key] = value
            last = key
        elif last is not None:   # a "," inside a value (a client id, say)
            props[last] += "," + part
    words = [domain, props.pop("type", ""), props.pop("name", "")]
    name = _NOT_NAME.sub("_", "_".join(w for w in words if w)).lower()
    labels = {_NOT_NAME.sub("_", k): v for k, v in props.items()}
    return name, labels


def _help(mbean: str) -> str:
    """``domain:type=T,name=N``: the MBean family, its tags left out."""
    domain, _, rest = mbean.partition(":")
    kept = [p for p in rest.split(",") if p.startswith(("type=", "name="))]
    return f"Kafka's {domain}:{','.join(kept)}"


class BrokerCollector:
    """A prometheus_client collector reading the server at each scrape."""

    def __init__(self, server) -> None:
        self.server = server

    def collect(self):
        families: dict[str, Metric] = {}
        for mbean, value in server_snapshot(self.server).items():
            name, labels = prometheus_name(mbean)
            family = families.get(name)
            if family is None:
                # One family may hold several label sets (a listener's
                # connection-count and each of its Processors'), as the
                # exporter's output does.
                family = families[name] = Metric(name, _help(mbean), "unknown")
            family.add_sample(name, labels, float(value))
        yield from families.values()
        yield from self._timing_histograms()

    def _timing_histograms(self):
        counts, sums = merged(p.request_timings for p in self.server.socket_server.processors)
        bounds = [str(float(b)) for b in BUCKETS_MS] + ["+Inf"]
        for i, timing in enumerate(TIMINGS):
            family = HistogramMetricFamily(
                f"kafka_network_requestmetrics_{timing.lower()}",
                f"Kafka's RequestMetrics {timing} per request type, in ms",
                labels=["request"])
            for key in sorted(counts):
                cumulative, running = [], 0
                for bound, n in zip(bounds, counts[key][i]):
                    running += n
                    cumulative.append((bound, running))
                family.add_metric([api_name(key)], cumulative, sum_value=sums[key][i])
                if key == FETCH:   # Kafka also counts a consumer's Fetch as FetchConsumer
                    family.add_metric(["FetchConsumer"], cumulative, sum_value=sums[key][i])
            yield family
