"""Where Produce on the durable log spends what the in-memory store does not: one
kafka-net with one network and one handler thread, in this process, each of the two
threads under its own cProfile, driven by kload (Produce v3 8x4, as the ``durable``
group).

``python -m bench.durable_profile [--store disk|memory] [--requests N] [--top K]``

Prints, per request: the Processor's poll turns (``epoll.poll`` calls), the handler's
socket sends (wake-ups of a Processor asleep in its poll; the responses themselves go
out from the Processor), the Python function calls of each thread, and the handler's
K most expensive functions by own time.  cProfile slows every Python call, so the
times are inflated; the counts are what to compare between the stores.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile

import psutil

from bench import harness
from bench.measure import run_kload
from kafka_net.config import ServerConfig, parse_listeners
from kafka_net.network import processor as processor_module
from kafka_net.server import handler_pool
from kafka_net.server.kafka_server import KafkaServer

EPOLL_POLL = "<method 'poll' of 'select.epoll' objects>"
SOCKET_SEND = "<method 'send' of '_socket.socket' objects>"
KLOAD = ("--api", "produce", "--topic", "bench", "--batch", "10", "--size", "100",
         "--conns", "8", "--pipeline", "4")


def _profiled(cls, profiles: list[cProfile.Profile]):
    """Patch ``cls.run`` so that each thread of it runs under its own profiler."""
    original = cls.run

    def run(self) -> None:
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.runcall(original, self)

    cls.run = run
    return original


def _calls(stats: pstats.Stats, name: str) -> int:
    return sum(v[1] for k, v in stats.stats.items() if k[2] == name)


def profile(store: str, requests: int, log_dir: str):
    config = ServerConfig(listeners=parse_listeners("PLAINTEXT://127.0.0.1:0"),
                          num_network_threads=1, num_io_threads=1, log_store=store,
                          log_dirs=(log_dir,) if store == "disk" else ())
    network, handlers = [], []
    originals = (_profiled(processor_module.Processor, network),
                 _profiled(handler_pool.KafkaRequestHandler, handlers))
    try:
        server = KafkaServer(config)
        server.startup()
        try:
            port = server.bound_port()
            harness.create_topic(port, "bench", 1)
            run = run_kload(harness.build_kload(), _ThisProcess(port), 1,
                            [*KLOAD, "--requests", str(requests)], timeout=600)
        finally:
            server.shutdown()
    finally:
        processor_module.Processor.run, handler_pool.KafkaRequestHandler.run = originals
    if not run.ok:
        raise RuntimeError(f"kload: {run.problems}")
    return pstats.Stats(network[0]), pstats.Stats(handlers[0]), run.all_responses


class _ThisProcess:
    """Enough of a ServerProcess for run_kload: the server runs in this process."""

    def __init__(self, port: int) -> None:
        self.port, self.name = port, "in-process"
        self.ps = psutil.Process(os.getpid())
        self.proc = type("P", (), {"pid": os.getpid()})()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durable_profile",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("disk", "memory"), default="disk")
    parser.add_argument("--requests", type=int, default=60_000)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafka-net-profile-") as log_dir:
        net, handler, n = profile(args.store, args.requests, log_dir)
    print(f"log.store={args.store}, {n} Produce requests, kafka-net 1+1")
    print(f"Processor poll turns per request   {_calls(net, EPOLL_POLL) / n:6.2f}")
    print(f"handler socket sends per request   {_calls(handler, SOCKET_SEND) / n:6.2f}")
    print(f"Python calls per request: Processor {net.total_calls / n:6.1f}, "
          f"handler {handler.total_calls / n:6.1f}")
    handler.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
