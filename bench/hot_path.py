"""The network path's own cost per request, on one thread: no GIL hand-overs.

``python -m bench.hot_path [--connections K]`` puts one Processor and one handler
(``KafkaRequestHandler``) on this thread, over K loopback TCP connections.  Each
iteration every connection sends one ApiVersions v0 request (what kload sends);
then one turn of the Processor's loop (read, parse, queue, mute), the handler
loop until a shutdown sentinel (handle, encode, queue the response, wake the
Processor), and a second turn (write, unmute).  It prints:

* server CPU µs per request (this thread's CPU time over the server steps only,
  system calls included; best and median of 9 batches); it moves with the
  machine's load less than kload's figures do, but still moves: compare versions
  in alternation, within minutes;
* Python and C function calls per request on the same steps (``sys.setprofile``):
  exact and load-independent, the count a change removes.

The threads' hand-offs (queue.Queue, the wakeup, the GIL) are what kload adds on
top; ``python -m bench --group kload`` measures the whole.
"""

from __future__ import annotations

import argparse
import collections
import socket
import statistics
import sys
import time

from kafka_net.config import ServerConfig
from kafka_net.network.processor import Processor
from kafka_net.network.request_channel import SHUTDOWN, RequestChannel
from kafka_net.protocol.codec import encode_request
from kafka_net.server.broker import BrokerCore
from kafka_net.server.handler_pool import KafkaRequestHandler

# Processor.run's seven steps, in its order.
STEPS = ("_configure_new_connections", "_process_new_responses", "_poll",
         "_process_completed_receives", "_process_completed_sends",
         "_process_disconnected", "_close_excess_connections")


class HotPath:
    def __init__(self, connections: int) -> None:
        config = ServerConfig(log_store="memory")
        self.channel = RequestChannel(500)
        core = BrokerCore(config, self.channel)
        self.processor = Processor(0, "PLAINTEXT", self.channel, core.apis.parse_request,
                                   config)
        self.channel.add_processor(self.processor)
        self.handler = KafkaRequestHandler(0, self.channel, core.apis)
        self._steps = [getattr(self.processor, name) for name in STEPS]
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.clients = []
        for _ in range(connections):
            client = socket.create_connection(self._listener.getsockname())
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            server_side, _ = self._listener.accept()
            server_side.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.processor.accept(server_side, False)
            self.clients.append(client)
        self.turn()                      # registers the connections
        self.frame = encode_request(18, 0, 7, {}, client_id="kload")
        self.response_size = 0

    def turn(self) -> None:
        for step in self._steps:
            step()

    def server_steps(self) -> None:
        self.turn()
        self.channel.send_shutdown_request()   # the handler loop returns on it
        self.handler.run()
        self.turn()

    def iteration(self, measure) -> None:
        for client in self.clients:
            client.sendall(self.frame)
        measure(self.server_steps)
        for client in self.clients:
            data = client.recv(65536)
            while len(data) < (self.response_size or 4):
                data += client.recv(65536)
            self.response_size = self.response_size or len(data)

    def close(self) -> None:
        self.processor.begin_shutdown()
        self.processor._close_all()
        for client in self.clients:
            client.close()
        self._listener.close()


def cpu_us_per_request(path: HotPath, iterations: int) -> tuple[float, float]:
    spent = [0]

    def timed(steps) -> None:
        t0 = time.thread_time_ns()
        steps()
        spent[0] += time.thread_time_ns() - t0

    for _ in range(100):
        path.iteration(timed)
    per_batch = []
    for _ in range(9):
        spent[0] = 0
        for _ in range(iterations):
            path.iteration(timed)
        per_batch.append(spent[0] / (iterations * len(path.clients)) / 1e3)
    return min(per_batch), statistics.median(per_batch)


def calls_per_request(path: HotPath, iterations: int = 50) -> collections.Counter:
    counts: collections.Counter = collections.Counter()

    def profile(frame, event, arg) -> None:
        if event == "call":
            counts["(Python calls)"] += 1
            counts[frame.f_code.co_qualname] += 1
        elif event == "c_call":
            counts["(C calls)"] += 1

    def counted(steps) -> None:
        sys.setprofile(profile)
        try:
            steps()
        finally:
            sys.setprofile(None)

    for _ in range(iterations):
        path.iteration(counted)
    n = iterations * len(path.clients)
    return collections.Counter({k: v / n for k, v in counts.items()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=300,
                        help="iterations per timed batch (default 300)")
    parser.add_argument("--functions", action="store_true",
                        help="also list the Python functions called per request")
    args = parser.parse_args(argv)
    path = HotPath(args.connections)
    try:
        best, mid = cpu_us_per_request(path, args.iterations)
        counts = calls_per_request(path)
    finally:
        path.close()
    print(f"{args.connections} connections: server CPU {best:.2f} µs/request (best), "
          f"{mid:.2f} (median); {counts['(Python calls)']:.1f} Python and "
          f"{counts['(C calls)']:.1f} C calls per request")
    if args.functions:
        for name, n in counts.most_common():
            if not name.startswith("(") and n >= 0.05:
                print(f"  {n:5.2f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
