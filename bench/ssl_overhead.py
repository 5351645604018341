"""What TLS costs the broker: ApiVersions and Produce over SSL against PLAINTEXT.

    python -m bench.ssl_overhead [--rounds 3] [--duration 3] [--connections 4]

One kafka-net process (``python -m kafka_net serve``, 1 network + 2 handler
threads, the --dev thread counts) with a PLAINTEXT and an SSL listener, and
certificates made for the run (tests/tls_support.py, with the ``cryptography``
package).  kload speaks plaintext only, so the load is a client-library-free
Python one: ``--connections`` threads in a separate process, each with one
connection and one request in flight (closed loop), the TLS handshake done
before the measured window.  Per run: requests per second and the broker's
CPU µs per request (user + system of the whole process, psutil).

``--transport-only`` measures the transport layers alone, in this process:
thread CPU µs of the broker side's ``read`` + ``write`` for one 60-byte
request and one 450-byte response (an ApiVersions-sized exchange) over a
socketpair, PlaintextTransportLayer against SslTransportLayer, 20,000
exchanges per figure, interleaved over rounds.

Runs are interleaved: each round measures every (scenario, listener) pair, the
order rotated per round; figures are medians over rounds.  The Python load
generator is slower than kload and shares the 2 cores with the broker, so
requests per second understate the broker; the CPU per request is the figure
that compares the two listeners.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import ssl
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.harness import (
    CLIENT_ID, create_topic, free_port, kafka_net, recv_frame, round_order, serving)
from bench.measure import cpu_seconds
from kafka_net.protocol import encode_request
from kafka_net.protocol.records import build_batch

API_VERSIONS = encode_request(18, 3, 1, {"client_software_name": "bench",
                                         "client_software_version": "1"}, client_id=CLIENT_ID)


def produce_frame(topic: str) -> bytes:
    batch = build_batch([(None, b"v" * 100)] * 10)
    return encode_request(0, 9, 1, {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
                                    "topic_data": [{"name": topic, "partition_data": [
                                        {"index": 0, "records": batch}]}]},
                          client_id=CLIENT_ID)


SCENARIOS = {"ApiVersions v3": lambda: API_VERSIONS,
             "Produce v9 (10 x 100 B records, acks=1)": lambda: produce_frame("bench-ssl")}


def _connection_loop(port, cafile, frame, start, stop, counts, i) -> None:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if cafile:
        sock = ssl.create_default_context(cafile=cafile).wrap_socket(
            sock, server_hostname="127.0.0.1")
    with sock:
        start.wait()
        while not stop.is_set():
            sock.sendall(frame)
            recv_frame(sock)
            counts[i] += 1


def load(port: int, cafile: str | None, frame: bytes, connections: int,
         warmup: float, duration: float, queue) -> None:
    """The load process: puts "start" when the measured window opens, then
    (requests answered in it, its length in seconds)."""
    start, stop = threading.Event(), threading.Event()
    counts = [0] * connections
    threads = [threading.Thread(target=_connection_loop,
                                args=(port, cafile, frame, start, stop, counts, i))
               for i in range(connections)]
    for t in threads:
        t.start()
    start.set()
    time.sleep(warmup)
    queue.put("start")
    before, began = sum(counts), time.monotonic()
    time.sleep(duration)
    queue.put((sum(counts) - before, time.monotonic() - began))
    stop.set()
    for t in threads:
        t.join(30)


def one_run(server, port: int, cafile: str | None, frame: bytes, args) -> tuple[float, float]:
    queue = multiprocessing.Queue()
    proc = multiprocessing.Process(target=load, args=(port, cafile, frame, args.connections,
                                                      args.warmup, args.duration, queue))
    proc.start()
    assert queue.get(timeout=60) == "start"
    cpu0 = cpu_seconds(server)
    answered, elapsed = queue.get(timeout=args.duration + 60)
    cpu1 = cpu_seconds(server)
    proc.join(30)
    return answered / elapsed, (cpu1 - cpu0) / answered * 1e6


def _transport_pair(factory, pki, tls: bool):
    """(broker-side transport, blocking client socket), handshake done."""
    from kafka_net.network.transport_layer import PlaintextTransportLayer
    server_side, client = socket.socketpair()
    server_side.setblocking(False)
    if not tls:
        return PlaintextTransportLayer(server_side), client
    transport = factory.create_transport(server_side)
    client = pki.client_context().wrap_socket(client, server_hostname="localhost",
                                              do_handshake_on_connect=False)
    client.setblocking(False)
    for _ in range(1000):   # bounded: a handshake takes a few steps
        try:
            client.do_handshake()
            break
        except ssl.SSLWantReadError:
            transport.handshake()
    while not transport.ready():
        transport.handshake()
    client.setblocking(True)
    return transport, client


def transport_cost(factory, pki, tls: bool, n: int = 20000) -> float:
    """Thread CPU µs of the broker side's read + write per exchange."""
    request, response = memoryview(b"q" * 60), memoryview(b"r" * 450)
    transport, client = _transport_pair(factory, pki, tls)
    spent = 0
    with client:
        for _ in range(n):
            client.sendall(request)
            start = time.thread_time_ns()
            got = 0
            while got < len(request):
                try:
                    got += len(transport.read(65536))
                except BlockingIOError:
                    pass
            transport.write(response)
            while transport.has_pending_writes():
                transport.write(memoryview(b""))
            spent += time.thread_time_ns() - start
            recv_frame_bytes(client, len(response))
    transport.close()
    return spent / n / 1000


def recv_frame_bytes(sock, n: int) -> None:
    got = 0
    while got < n:
        got += len(sock.recv(65536))


def transport_only(args, pki) -> None:
    from kafka_net.config import ServerConfig
    from kafka_net.network.ssl_factory import SslFactory
    cfg = ServerConfig.from_properties({"listeners": "SSL://127.0.0.1:0",
                                        **pki.broker_props()})
    factory = SslFactory(cfg.ssl_config("SSL"))
    costs: dict[bool, list[float]] = {False: [], True: []}
    for rnd in range(args.rounds):
        for tls in ((False, True) if rnd % 2 == 0 else (True, False)):
            costs[tls].append(transport_cost(factory, pki, tls))
    print("| transport | read + write µs per exchange (median) | per round |")
    print("| --- | ---: | --- |")
    for tls, name in ((False, "PlaintextTransportLayer"), (True, "SslTransportLayer")):
        print(f"| {name} | {statistics.median(costs[tls]):.1f} | "
              f"{', '.join(f'{c:.1f}' for c in costs[tls])} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ssl_overhead")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--transport-only", action="store_true")
    args = parser.parse_args(argv)
    from tests.tls_support import make_pki   # the test extra's cryptography
    with tempfile.TemporaryDirectory(prefix="kafka-net-ssl-bench-") as tmp:
        pki = make_pki(tmp)
        if args.transport_only:
            transport_only(args, pki)
            return
        plain_port, ssl_port = free_port(), free_port()
        server = kafka_net("kafka-net 1+2", (
            f"listeners=PLAINTEXT://127.0.0.1:{plain_port},SSL://127.0.0.1:{ssl_port}",
            "num.network.threads=1", "num.io.threads=2", "ssl.keystore.type=PEM",
            f"ssl.keystore.location={pki.server}"))
        problems: list[str] = []
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        with serving([server], Path(tmp) / "logs", problems):
            create_topic(plain_port, "bench-ssl", 1)
            pairs = [(s, l) for s in SCENARIOS for l in ("PLAINTEXT", "SSL")]
            for rnd in range(1, args.rounds + 1):
                for scenario, listener in round_order(pairs, rnd):
                    port, cafile = ((plain_port, None) if listener == "PLAINTEXT"
                                    else (ssl_port, pki.ca))
                    rate, cpu = one_run(server, port, cafile, SCENARIOS[scenario](), args)
                    results.setdefault((scenario, listener), []).append((rate, cpu))
                    print(f"round {rnd}: {scenario} over {listener}: {rate:,.0f}/s, "
                          f"{cpu:.0f} µs CPU per request", flush=True)
        print("\n| scenario | listener | requests/s | broker CPU µs per request | per round (µs) |")
        print("| --- | --- | ---: | ---: | --- |")
        for (scenario, listener), runs in results.items():
            rates, cpus = zip(*runs)
            print(f"| {scenario} | {listener} | {statistics.median(rates):,.0f} | "
                  f"{statistics.median(cpus):.0f} | {', '.join(f'{c:.0f}' for c in cpus)} |")
        for p in problems:
            print("problem:", p)


if __name__ == "__main__":
    main()
