"""Load generator: C connections, D requests in flight on each, bounded in every way.

Python is slow, so the generator must not become the bottleneck it is meant to
find: the connections are dealt out to several worker processes
(``multiprocessing``, spawn), each running its own ``selectors`` loop, and
the parent merges what they measured.

Per request the hot path does only this: patch the correlation id into a
pre-encoded request frame, ``send``; on the way back split frames, read the
response's correlation id (the first four bytes after the size) and check it
against the oldest request in flight on that connection (Kafka answers in
request order), and record send->receive latency.  The first response on
every connection and every ``SAMPLE_EVERY``-th one after it are decoded in
full with kafka-net's codec and must have error_code 0.

Bounds (the loop always stops by itself):

* ``requests``: each connection sends exactly that many, or
* ``duration``: measure for that long after ``warmup`` seconds, then stop
  sending and wait at most ``DRAIN_S`` for the requests still in flight;
* ``timeout``: a hard cap on either mode; workers that miss it are terminated.

Throughput counts responses received inside the measured window divided by
its length; latency percentiles are over the same responses.

What it drives: Fetch (``--api fetch``, v12) from offset 0 of partition
``i % partitions`` of ``--topic`` for connection ``i`` (counted over all workers);
the topic must exist and hold records, so every request is answered at once.  The
benchmarks use kload (``../shared/bench/kload.c``, C, far cheaper per request) for
everything it speaks (ApiVersions, Metadata, Produce); this generator stays for
what kload cannot drive.  ``loadgen_cpu_s`` in its result says how much CPU the
generator itself used, to check it was not the bottleneck.

CLI::

    python -m bench.loadgen --port 9092 -c 8 -d 1 --duration 3 --topic bench-fetch
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import queue
import sys
import time
from array import array

from bench.load_spec import APIS, DEFAULT_TOPIC, LoadResult, LoadSpec
from bench.load_worker import connect, worker_main, worker_run

__all__ = ["APIS", "DEFAULT_TOPIC", "LoadResult", "LoadSpec", "run_load"]


# --- the parent: deal out connections, start together, merge ---------------------------


def _shares(total: int, parts: int) -> list[int]:
    parts = max(1, min(parts, total))
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_load(spec: LoadSpec) -> LoadResult:
    spec.validate()
    lead_ns = int(0.1e9)  # let every worker see the go before the start time
    if spec.workers == 0:
        conns = connect(spec, spec.connections)
        raw = [worker_run(spec, conns, time.monotonic_ns() + lead_ns)]
        return _merge(spec, raw, 0, [])

    ctx = multiprocessing.get_context("spawn")
    ready, results = ctx.Queue(), ctx.Queue()
    go = ctx.Event()
    start_at = ctx.Value("q", 0)
    shares = _shares(spec.connections, spec.workers)
    firsts = [sum(shares[:i]) for i in range(len(shares))]
    procs = [ctx.Process(target=worker_main,
                         args=(spec, n, first, ready, go, start_at, results),
                         name=f"loadgen-{i}", daemon=True)
             for i, (n, first) in enumerate(zip(shares, firsts))]
    notes: list[str] = []
    raw: list[dict] = []
    deadline = time.monotonic() + spec.timeout
    started = []
    try:
        for p in procs:
            p.start()
            started.append(p)
        for _ in procs:
            msg = _get(ready, procs, deadline)
            if msg != "ready":
                raise ConnectionError(msg)
        start_at.value = time.monotonic_ns() + lead_ns
        go.set()
        for _ in procs:
            raw.append(_get(results, procs, deadline))
    except Exception as exc:  # a timeout, a worker's connect error, a dead worker
        notes.append(f"incomplete: {type(exc).__name__}: {exc}")
        go.set()
    finally:
        for p in started:
            p.join(timeout=max(0.1, deadline - time.monotonic()))
            if p.is_alive():
                notes.append(f"{p.name} terminated after the timeout")
                p.terminate()
                p.join(5)
        ready.close()
        results.close()
    if len(raw) < len(procs):
        raise RuntimeError("load generator failed: " + "; ".join(notes))
    return _merge(spec, raw, len(procs), notes)


def _get(q, procs, deadline: float):
    """q.get() until the deadline, giving up early if a worker died without answering."""
    while True:
        try:
            return q.get(timeout=0.2)
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"{dead[0].name} exited with code {dead[0].exitcode}")
            if time.monotonic() >= deadline:
                raise TimeoutError("the load generator's workers did not finish in time")


def _percentile(sorted_values: array | list, q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values <= it."""
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def _merge(spec: LoadSpec, raw: list[dict], workers: int, notes: list[str]) -> LoadResult:
    lat = array("q")
    for r in raw:
        lat.frombytes(r["latencies"])
    values = sorted(lat)
    counted = sum(r["counted"] for r in raw)
    if spec.duration is not None:
        seconds = spec.duration
    else:
        # A fixed-count run lasts from the first request sent to the last answer.
        lasts = [r["last_counted"] for r in raw if r["counted"]]
        seconds = (max(lasts) - min(r["t0"] for r in raw)) / 1e9 if lasts else 0.0
    ms = 1e6
    return LoadResult(
        requests=counted,
        seconds=seconds,
        throughput=counted / seconds if seconds > 0 else 0.0,
        p50_ms=_percentile(values, 0.50) / ms,
        p99_ms=_percentile(values, 0.99) / ms,
        mean_ms=(sum(values) / len(values) / ms) if values else float("nan"),
        max_ms=(values[-1] / ms) if values else float("nan"),
        sent=sum(r["sent"] for r in raw),
        received=sum(r["received"] for r in raw),
        mismatches=sum(r["mismatches"] for r in raw),
        errors=sum(r["errors"] for r in raw),
        sampled=sum(r["sampled"] for r in raw),
        unanswered=sum(r["unanswered"] for r in raw),
        disconnects=sum(r["disconnects"] for r in raw),
        loadgen_cpu_s=sum(r["cpu_s"] for r in raw),
        workers=workers,
        notes=notes,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loadgen",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("-c", "--connections", type=int, default=16)
    parser.add_argument("-d", "--depth", type=int, default=1,
                        help="requests in flight per connection (pipelining depth)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--requests", type=int, help="requests per connection")
    mode.add_argument("--duration", type=float, help="seconds measured, after --warmup")
    parser.add_argument("--warmup", type=float, default=0.0)
    parser.add_argument("--api", choices=sorted(APIS), default="fetch")
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes (0 = run in this process)")
    parser.add_argument("--timeout", type=float, default=120.0, help="hard cap, seconds")
    parser.add_argument("--topic", default=DEFAULT_TOPIC,
                        help="the topic (must exist and hold records)")
    parser.add_argument("--partitions", type=int, default=1,
                        help="connection i fetches partition i %% PARTITIONS")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    spec = LoadSpec(port=args.port, host=args.host, connections=args.connections,
                    depth=args.depth, requests=args.requests, duration=args.duration,
                    warmup=args.warmup, api=args.api, workers=args.workers,
                    timeout=args.timeout, topic=args.topic, partitions=args.partitions)
    try:
        result = run_load(spec)
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"loadgen: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(result.to_json())
    else:
        print(f"{result.throughput:,.0f} req/s  p50 {result.p50_ms:.3f} ms  "
              f"p99 {result.p99_ms:.3f} ms  ({result.requests} requests in "
              f"{result.seconds:.2f} s; mismatches {result.mismatches}, errors "
              f"{result.errors}, unanswered {result.unanswered}, disconnects "
              f"{result.disconnects}; loadgen CPU {result.loadgen_cpu_s:.2f} s)")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
