"""What one request costs in kafka-net's own code, without threads or sockets.

``python -m bench.request_costs [--api apiversions|metadata|produce] [--store memory|disk]``
times, on this
thread, each step a request goes through between its frame and its response bytes:
parsing (``KafkaApis.parse_request``), building the ``Request``, the handler alone,
encoding the answer, the metrics count, and ``KafkaApis.handle`` end to end (handler,
encoding and the hand-back to a Processor that only keeps it).  Best of 10 x 2,000
calls, microseconds of this thread's CPU time per call (``time.thread_time``: on a
shared machine, wall-clock time would count the time the thread was preempted).
Compared with a server's CPU per request under kload, it separates the code's cost
from the hand-offs' cost.  ``--store disk`` puts the partition logs on the durable log
(``log.store=disk``, ``log.dirs`` in a temporary folder) instead of the in-memory store.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import timeit

from kafka_net.config import ServerConfig
from kafka_net.network.request_channel import Request, RequestChannel
from kafka_net.protocol.codec import encode_request, encode_response
from kafka_net.protocol.records import build_batch
from kafka_net.server.apis import RequestContext
from kafka_net.server.broker import BrokerCore

from bench.load_spec import LoadSpec, fetch_body

CALLS = 2_000
REPEATS = 10
BATCH = build_batch([(None, b"v" * 100)] * 10)
REQUESTS = {   # api -> (key, version, body): what kload (Fetch: bench/loadgen.py) sends
    "apiversions": (18, 0, {}),
    "metadata": (3, 1, {"topics": [{"name": "bench"}]}),
    "produce": (0, 3, {"transactional_id": None, "acks": 1, "timeout_ms": 30000,
                       "topic_data": [{"name": "bench", "partition_data": [
                           {"index": 0, "records": BATCH}]}]}),
    "fetch": (1, 12, fetch_body(LoadSpec(port=0, topic="bench"), 0)),
}


class _KeepingProcessor:
    id = 0

    def enqueue_response(self, response) -> None:
        pass


def costs(api: str, calls: int = CALLS, store: str = "memory") -> dict[str, float]:
    if store == "disk":
        with tempfile.TemporaryDirectory(prefix="kafka-net-costs-") as log_dir:
            return _costs(api, calls, ServerConfig(log_store="disk", log_dirs=(log_dir,)))
    return _costs(api, calls, ServerConfig(log_store="memory"))


def _costs(api: str, calls: int, config: ServerConfig) -> dict[str, float]:
    channel = RequestChannel(500)
    channel.add_processor(_KeepingProcessor())
    apis = BrokerCore(config, channel).apis
    apis.create_topic("bench", 1)
    if api == "fetch":   # the Fetch topic holds one batch, as in the kload group
        apis.replica_manager.append_records("bench", 0, BATCH, 3)
    key, version, body = REQUESTS[api]
    frame = encode_request(key, version, 5, body, client_id="kload")[4:]
    parsed = apis.parse_request(frame)

    def request() -> Request:
        return Request.from_parsed(0, "c", "PLAINTEXT", ("127.0.0.1", 1), parsed)

    req = request()
    module = apis.handlers[key]
    answer = module.handle(RequestContext(req, apis), req.body)
    steps = {
        "parse_request": lambda: apis.parse_request(frame),
        "Request()": request,
        "handler": lambda: module.handle(RequestContext(req, apis), req.body),
        "encode_response": lambda: encode_response(key, version, 5, answer),
        "metrics.record": lambda: apis.metrics.record(key, version, 0),
        "KafkaApis.handle": lambda: apis.handle(req),
    }
    return {name: min(timeit.repeat(f, number=calls, repeat=REPEATS,
                                    timer=time.thread_time)) / calls * 1e6
            for name, f in steps.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.request_costs",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=sorted(REQUESTS), default="apiversions")
    parser.add_argument("--store", choices=("memory", "disk"), default="memory",
                        help="where the partition logs live (log.store)")
    args = parser.parse_args(argv)
    for name, us in costs(args.api, store=args.store).items():
        print(f"{name:18} {us:7.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
