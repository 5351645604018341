"""Server CPU per ApiVersions round trip: a quick loop for hot-path changes.

``python -m bench.roundtrip_cpu`` starts one broker in this process (1 network
thread, 1 handler thread, so the figure is one request's path and nothing
else) and, from one raw-socket connection in the main thread, sends
``--requests`` ApiVersions v3 requests one at a time.  It reports the CPU
time the server's threads used (user + system, from psutil, network and
handler threads summed) per request, the median over ``--rounds``.  With
``--queued-max-request-bytes N`` the broker runs with a bounded memory pool
(``queued.max.request.bytes``); each round runs every configuration given,
in alternating order, so they are compared on the same machine load.

The figure moves with the machine's load (a shared 2-core machine here);
compare configurations within one run, not across runs.
"""

from __future__ import annotations

import argparse
import statistics
import threading

import psutil

from kafka_net.config import ServerConfig, parse_listeners
from kafka_net.server.kafka_server import KafkaServer
from tests.support import API_VERSIONS_V3_BODY, RawClient


def _server_cpu() -> float:
    names = {t.native_id: t.name for t in threading.enumerate()}
    return sum(t.user_time + t.system_time for t in psutil.Process().threads()
               if "network-thread" in names.get(t.id, "")
               or "request-handler" in names.get(t.id, ""))


def one_run(queued_max_request_bytes: int, requests: int) -> float:
    """Server CPU µs per request for one configuration."""
    config = ServerConfig(listeners=parse_listeners("PLAINTEXT://127.0.0.1:0"),
                          num_network_threads=1, num_io_threads=1,
                          queued_max_request_bytes=queued_max_request_bytes)
    server = KafkaServer(config)
    server.startup()
    try:
        with RawClient(server.bound_port()) as client:
            for _ in range(200):   # warm-up
                client.call(18, 3, API_VERSIONS_V3_BODY)
            before = _server_cpu()
            for _ in range(requests):
                client.call(18, 3, API_VERSIONS_V3_BODY)
            after = _server_cpu()
    finally:
        server.shutdown()
    return (after - before) / requests * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.roundtrip_cpu")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queued-max-request-bytes", type=int, action="append",
                        default=None, help="repeat for several; -1 = no pool (default)")
    args = parser.parse_args(argv)
    configs = args.queued_max_request_bytes or [-1]
    results: dict[int, list[float]] = {c: [] for c in configs}
    for rnd in range(args.rounds):
        order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
        for c in order:
            results[c].append(one_run(c, args.requests))
    for c, runs in results.items():
        print(f"queued.max.request.bytes={c}: median {statistics.median(runs):.1f}, "
              f"min {min(runs):.1f} µs server CPU/request "
              f"(runs: {', '.join(f'{r:.1f}' for r in runs)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
