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

``--selector-loop`` measures a steadier part of the same path instead: one
thread drives a ``Selector`` over a socketpair (read, split the frame, mute,
send a 100-byte answer, unmute, the client reads it) and reports that
thread's CPU per request, the minimum and median of 9 x ``--requests``.
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
                          num_network_threads=1, num_io_threads=1, log_store="memory",
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


def selector_loop(queued_max_request_bytes: int, requests: int) -> tuple[float, float]:
    """(min, median) thread CPU µs per request of a single-thread Selector loop."""
    import socket
    import struct
    import time

    from kafka_net.network.mute_state import ChannelMuteEvent as Ev
    from kafka_net.network.selector import Selector
    from kafka_net.network.wakeup import WakeupSocketpair
    from kafka_net.protocol import encode_request

    max_bytes = 104857600
    extra = {}
    if queued_max_request_bytes > 0:   # the tree before the pool has no such module
        from kafka_net.network.memory_pool import memory_pool_for
        extra["memory_pool"] = memory_pool_for(queued_max_request_bytes, max_bytes)
    selector = Selector(max_bytes, -1, WakeupSocketpair(), name="bench", **extra)
    server_end, client = socket.socketpair()
    server_end.setblocking(False)
    selector.register("c", server_end)
    request = encode_request(18, 3, 1, API_VERSIONS_V3_BODY)
    answer = struct.pack(">i", 100) + b"r" * 100

    def loop(n: int) -> None:
        for _ in range(n):
            client.send(request)
            while not selector.completed_receives:
                selector.poll(1)
            channel, frame = selector.completed_receives.pop()
            selector.mute("c")
            channel.mute_state.handle(Ev.REQUEST_RECEIVED)
            if extra:
                selector.release_frame(frame)
            selector.send("c", answer)
            selector.completed_sends.clear()
            channel.mute_state.handle(Ev.RESPONSE_SENT)
            selector.unmute("c")
            client.recv(200)

    loop(2000)
    per_request = []
    for _ in range(9):
        start = time.thread_time_ns()
        loop(requests)
        per_request.append((time.thread_time_ns() - start) / requests / 1000)
    selector.close_all()
    client.close()
    return min(per_request), statistics.median(per_request)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.roundtrip_cpu")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queued-max-request-bytes", type=int, action="append",
                        default=None, help="repeat for several; -1 = no pool (default)")
    parser.add_argument("--selector-loop", action="store_true",
                        help="time a single-thread Selector loop instead (see above)")
    args = parser.parse_args(argv)
    configs = args.queued_max_request_bytes or [-1]
    if args.selector_loop:
        for c in configs:
            low, mid = selector_loop(c, args.requests)
            print(f"queued.max.request.bytes={c}: selector loop min {low:.2f}, "
                  f"median {mid:.2f} µs thread CPU/request")
        return 0
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
