"""What Kafka's request timings cost per request, piece by piece (issue 14).

``python -m bench.request_timing_cost`` times, in this thread, the two pieces
the timings add to every request's path:

* ``RequestTimings.update`` (the Processor, once per completed request: six
  differences, six bucket increments, one entry in the recent ring, one
  cached level check of ``kafka.request.logger``), for a sub-millisecond
  request (the usual one) and for a request of a few ms;
* what ``RequestChannel.send_response`` does for it on the handler thread
  (one clock read, the response thread's name), as the send with and
  without those lines.

Median of ``--rounds`` x ``--requests`` calls, in µs.  The rest (one clock
read where the Processor dequeues the response, two attribute sets in the
handler loop) is a few tenths of a µs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from types import SimpleNamespace

from kafka_net.network.request_channel import Request, RequestChannel, SendResponse
from kafka_net.network.request_metrics import RequestTimings
from kafka_net.protocol.headers import RequestHeader


def _request(spread_ns: int) -> Request:
    header = RequestHeader(18, 3, 1, "bench", 2)
    request = Request(0, "c", "PLAINTEXT", ("127.0.0.1", 1), header, {}, 0)
    t = request.start_time_ns
    request.request_dequeue_time_ns = t + spread_ns
    request.api_local_complete_time_ns = t + 2 * spread_ns
    request.response_complete_time_ns = t + 3 * spread_ns
    request.response_dequeue_time_ns = t + 4 * spread_ns
    return request


def _per_call_us(fn, n: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - start) / n / 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.request_timing_cost")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    timings = RequestTimings("bench")
    fast = SimpleNamespace(request=_request(50_000))        # 0.25 ms in all
    slow = SimpleNamespace(request=_request(1_500_000))     # 7.5 ms in all
    fast_end = fast.request.start_time_ns + 250_000
    slow_end = slow.request.start_time_ns + 7_500_000

    channel = RequestChannel(10)
    sink = SimpleNamespace(id=0, enqueue_response=lambda response: None)
    channel.add_processor(sink)
    response = SendResponse(_request(50_000), b"")

    def plain_send() -> None:   # send_response without the timing lines
        channel._processors.get(response.request.processor_id).enqueue_response(response)

    cases = {
        "RequestTimings.update, sub-ms request": lambda: timings.update(fast, fast_end),
        "RequestTimings.update, 7.5 ms request": lambda: timings.update(slow, slow_end),
        "RequestChannel.send_response": lambda: channel.send_response(response),
        "the same without the timing lines": plain_send,
    }
    for name, fn in cases.items():
        runs = [_per_call_us(fn, args.requests) for _ in range(args.rounds)]
        print(f"{name:40} median {statistics.median(runs):6.2f} µs  "
              f"(runs: {', '.join(f'{r:.2f}' for r in runs)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
