"""The metrics listener (``metrics.listener=http://HOST:PORT``; off by default).

=============  ==============================================================
``/metrics``   every metric in Prometheus' text format (server/prometheus.py)
``/health``    200 ``ok`` once every listener accepts; 503 while starting or
               stopping
``/requests``  JSON for ``kafka-net top``: the 1 + N + M threads with their
               numbers now, and the last requests with their six timings
``/faults``    faults on demand (GET, POST, DELETE; ``kafka-net fault``):
               loopback peers only unless ``faults.control.allowed.hosts``;
               see :mod:`kafka_net.server.faults.control`
=============  ==============================================================

It is the stdlib's ``ThreadingHTTPServer`` on its own thread
(``kafka-net-metrics``), started before the broker's listeners so that
``/health`` answers 503 during startup, stopped after everything else.  A
scrape reads the broker's counters without taking the Processors' or
handlers' time: each thread keeps its own numbers and the scrape adds them up.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

from kafka_net.config.values import split_http_address
from kafka_net.metrics import server_snapshot
from kafka_net.network.request_metrics import (
    BUCKETS_MS, TIMINGS, merged, quantile, recent_requests)
from kafka_net.network.thread_name import set_os_thread_name
from kafka_net.protocol.api_keys import api_name
from kafka_net.server.faults import control as fault_control
from kafka_net.server.prometheus import BrokerCollector

log = logging.getLogger(__name__)


class MetricsHttpServer:
    def __init__(self, server, address: str) -> None:
        host, port = split_http_address(address)
        self.broker = server
        server.apis.faults.attach(server)    # its broker-unavailable fault needs the server
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(server))
        # process_open_fds, process_resident_memory_bytes, ...: what the JMX
        # exporter adds from the JVM's process, and dashboards chart.
        ProcessCollector(registry=self.registry)
        self.httpd = ThreadingHTTPServer((host, port), _handler_class(self))
        self.httpd.daemon_threads = True
        self.host, self.port = self.httpd.server_address[:2]
        self._thread = threading.Thread(target=self._serve, name="kafka-net-metrics",
                                        daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        set_os_thread_name("kn-metrics")
        self.httpd.serve_forever(0.2)

    def stop(self) -> None:
        if self._thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()

    def metrics_text(self, accept: str | None = None) -> tuple[bytes, str]:
        """(body, content type): Prometheus' text format, or OpenMetrics when the
        scraper's Accept header asks for it (as Prometheus does by default)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


def _handler_class(metrics: MetricsHttpServer):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:   # noqa: N802 (http.server's name)
            path = self.path.split("?", 1)[0]
            if path == fault_control.PREFIX or path.startswith(fault_control.PREFIX + "/"):
                self._faults("GET")
                return
            try:
                if path == "/metrics":
                    body, content_type = metrics.metrics_text(self.headers.get("Accept"))
                    self._answer(200, content_type, body)
                elif path == "/health":
                    ok = metrics.broker.is_serving()
                    self._answer(200 if ok else 503, "text/plain",
                                 b"ok\n" if ok else b"not serving\n")
                elif path == "/requests":
                    self._answer(200, "application/json",
                                 json.dumps(broker_view(metrics.broker)).encode())
                else:
                    self._answer(404, "text/plain", b"not found: try /metrics\n")
            except Exception:
                log.exception("metrics listener: error answering %s", path)
                self._answer(500, "text/plain", b"error\n")

        def do_POST(self) -> None:   # noqa: N802
            self._faults("POST")

        def do_DELETE(self) -> None:   # noqa: N802
            self._faults("DELETE")

        def _faults(self, method: str) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, 1 << 20)) if length > 0 else b""
                status, answer = fault_control.handle(
                    metrics.broker.apis.faults, method, self.path, body,
                    self.client_address[0],
                    metrics.broker.config.faults_control_allowed_hosts)
            except Exception:
                log.exception("metrics listener: error answering %s %s", method, self.path)
                status, answer = 500, {"error": "internal error; see the broker's log"}
            if status == 403:
                log.warning("metrics listener: refused fault control from %s",
                            self.client_address[0])
            self._answer(status, "application/json", json.dumps(answer).encode() + b"\n")

        def _answer(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args) -> None:   # noqa: A002 (stdlib's name)
            log.debug("metrics listener: " + format, *args)

    return Handler


def broker_view(server) -> dict:
    """The 1 + N + M threads and their numbers now (``/requests``; kafka-net top)."""
    socket_server = server.socket_server
    processors = socket_server.processors
    listeners = []
    for acceptor in socket_server.acceptors:
        name = acceptor.endpoint.listener_name
        listeners.append({
            "name": name, "port": acceptor.port, "acceptor": acceptor.name,
            "acceptor_blocked_percent": 100 * acceptor.blocked_fraction(),
            "processors": [{
                "id": p.id, "name": p.name, "connections": len(p.selector.channels),
                "idle_percent": 100 * p.idle_fraction(),
                "requests_received": p.requests_received,
                "responses_sent": p.responses_sent,
                "response_queue_size": p.response_queue_size(),
            } for p in processors if p.listener_name == name]})
    handlers = [{"name": h.name, "busy": (r := h.current_request) is not None,
                 "api": api_name(r.header.api_key) if r is not None else None}
                for h in server.handler_pool.handlers]
    now = time.monotonic_ns()
    recent = [{"api": api_name(key), "version": version, "correlation_id": correlation_id,
               "connection": connection, "ago_ms": (now - end) / 1e6,
               **dict(zip(TIMINGS, timings))}
              for end, key, version, correlation_id, connection, timings
              in recent_requests(p.request_timings for p in processors)]
    return {
        "time_ns": now, "listeners": listeners,
        "request_channel": {"queue_size": server.request_channel.request_queue_size(),
                            "queued_max_requests": server.config.queued_max_requests},
        "handlers": handlers,
        "handler_avg_idle_percent": 100 * server.handler_pool.avg_idle_fraction(),
        "recent_requests": recent,
        "apis": api_view(server),
        "metrics": server_snapshot(server),
    }


def api_view(server) -> list[dict]:
    """Per API since startup: requests, error responses (a top-level error code
    other than NONE) and the 99th percentile of TotalTimeMs, for kafka-net top."""
    metrics = server.apis.metrics
    requests, errors = metrics.requests, metrics.errors
    counts, _ = merged(p.request_timings for p in server.socket_server.processors)
    total_time = TIMINGS.index("TotalTimeMs")
    out = []
    for key in sorted({k for k, _ in requests}):
        buckets = counts.get(key)
        out.append({
            "api": api_name(key),
            "requests": sum(n for (k, _), n in requests.items() if k == key),
            "errors": sum(n for (k, code), n in errors.items() if k == key and code),
            "p99_ms": quantile(BUCKETS_MS, buckets[total_time], 0.99) if buckets else None,
        })
    return out
