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

Produce (``--api produce``): Produce v9, acks=1, each request one batch of
one 100-byte record (no key), built once with ``build_batch`` and sent again
and again (no producer id, so the broker stores every copy).  Connection
``i`` (counted over all workers) writes partition ``i % partitions`` of
``--topic``, which must exist (``run_all`` creates it); a sampled answer is
checked for an error code at every level (the partition's included).

CLI::

    python -m bench.loadgen --port 9092 -c 16 -d 1 --duration 5
    python -m bench.loadgen --port 9092 -c 64 -d 4 --requests 2000 --api metadata
    python -m bench.loadgen --port 9092 -c 16 -d 1 --duration 5 --api produce \
        --topic bench-produce --partitions 4
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import queue
import selectors
import socket
import struct
import sys
import time
from array import array
from collections import deque
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from kafka_net.protocol.codec import decode_response, encode_request
from kafka_net.protocol.records import build_batch

SAMPLE_EVERY = 1000      # decode every Nth response in full (plus each connection's first)
DRAIN_S = 5.0            # after the measured window, wait this long for in-flight answers
RECV_CHUNK = 256 * 1024
_INT32 = struct.Struct(">i")
_CID_OFFSET = 8          # size(4) + api_key(2) + api_version(2): the correlation id
_CID_MAX = 2**31 - 1

PRODUCE_RECORD_BYTES = 100
PRODUCE_ACKS = 1
DEFAULT_TOPIC = "bench-produce"


@lru_cache(maxsize=1)
def produce_batch() -> bytes:
    """One magic-2 batch of one 100-byte record, built once per process."""
    return build_batch([(None, b"k" * PRODUCE_RECORD_BYTES, [], int(time.time() * 1000))])


def produce_body(spec: "LoadSpec", connection_index: int) -> dict:
    return {"transactional_id": None, "acks": PRODUCE_ACKS, "timeout_ms": 30000,
            "topic_data": [{"name": spec.topic, "partition_data": [
                {"index": connection_index % spec.partitions, "records": produce_batch()}]}]}


def fetch_body(spec: "LoadSpec", connection_index: int) -> dict:
    """Fetch from offset 0 of partition i % partitions: the topic is filled before the
    run, so every request is answered at once with the same records."""
    return {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": spec.topic, "partitions": [{
                "partition": connection_index % spec.partitions, "current_leader_epoch": -1,
                "fetch_offset": 0, "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


# name -> (api_key, api_version, request body, or a function (spec, connection index) -> body)
APIS = {
    "apiversions": (18, 3, {"client_software_name": "kafka-net-bench",
                            "client_software_version": "1.0"}),
    "metadata": (3, 12, {"topics": None, "allow_auto_topic_creation": False,
                         "include_topic_authorized_operations": False}),
    "produce": (0, 9, produce_body),
    "fetch": (1, 12, fetch_body),
}


def request_template(spec: "LoadSpec", connection_index: int) -> bytes:
    """The request frame a connection sends (correlation id 0, patched per request)."""
    api_key, api_version, body = APIS[spec.api]
    if callable(body):
        body = body(spec, connection_index)
    return encode_request(api_key, api_version, 0, body, client_id="kafka-net-bench")


def has_error(value) -> bool:
    """Is there a non-zero error_code anywhere in a decoded body?"""
    if isinstance(value, dict):
        return any((k == "error_code" and v) or
                   (isinstance(v, (dict, list)) and has_error(v)) for k, v in value.items())
    if isinstance(value, list):
        return any(has_error(item) for item in value)
    return False


@dataclass
class LoadSpec:
    port: int
    host: str = "127.0.0.1"
    connections: int = 16
    depth: int = 1                    # requests in flight per connection
    requests: int | None = None       # per connection; exclusive with duration
    duration: float | None = None     # seconds measured, after warmup
    warmup: float = 0.0               # seconds (duration mode only)
    api: str = "apiversions"
    workers: int = 2                  # processes; 0 = run in this process
    timeout: float = 120.0            # hard cap, seconds
    topic: str = DEFAULT_TOPIC        # produce and fetch
    partitions: int = 1               # produce and fetch: connection i uses partition i % this

    def validate(self) -> None:
        if (self.requests is None) == (self.duration is None):
            raise ValueError("give exactly one of requests (per connection) or duration")
        if self.connections < 1 or self.depth < 1:
            raise ValueError("connections and depth must be >= 1")
        if self.requests is not None and self.requests < 1:
            raise ValueError("requests must be >= 1")
        if self.duration is not None and self.duration <= 0:
            raise ValueError("duration must be > 0")
        if self.api not in APIS:
            raise ValueError(f"api must be one of {sorted(APIS)}")
        if self.workers < 0:
            raise ValueError("workers must be >= 0")
        if self.partitions < 1:
            raise ValueError("partitions must be >= 1")


@dataclass
class LoadResult:
    requests: int                 # responses counted (inside the window)
    seconds: float                # length of the window
    throughput: float             # requests / seconds
    p50_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    sent: int                     # all requests sent, warmup and drain included
    received: int                 # all responses received
    mismatches: int               # correlation id not the one expected: must be 0
    errors: int                   # sampled responses with error_code != 0
    sampled: int                  # responses decoded in full
    unanswered: int               # in flight when the connection or the time ran out
    disconnects: int              # connections the server closed
    loadgen_cpu_s: float          # CPU used by the generator's measuring loops
    workers: int
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.mismatches == 0 and self.errors == 0 and self.unanswered == 0
                and self.disconnects == 0 and self.requests > 0)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "ok": self.ok}, indent=2)


# --- one worker: a share of the connections in one selectors loop ----------------------


class _Conn:
    __slots__ = ("sock", "index", "buf", "inflight", "next_cid", "sent", "received", "out",
                 "open", "head", "tail")

    def __init__(self, sock: socket.socket, index: int) -> None:
        self.sock = sock
        self.index = index                # over all workers' connections
        self.head = self.tail = b""       # the request template around the correlation id
        self.buf = bytearray()
        self.inflight: deque = deque()    # (correlation_id, send time ns), oldest first
        self.next_cid = 0
        self.sent = 0
        self.received = 0
        self.out = bytearray()            # requests the socket did not take yet
        self.open = True


def _connect(spec: LoadSpec, count: int, first_index: int = 0) -> list[_Conn]:
    conns = []
    for i in range(count):
        sock = socket.create_connection((spec.host, spec.port), timeout=10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conns.append(_Conn(sock, first_index + i))
    return conns


def _worker_run(spec: LoadSpec, conns: list[_Conn], start_ns: int) -> dict:
    """The measuring loop.  ``start_ns`` is a time.monotonic_ns() value (one clock
    for every process on the machine), when every worker begins sending."""
    cpu_start = _cpu_seconds()
    api_key, api_version, body = APIS[spec.api]
    shared = None if callable(body) else request_template(spec, 0)
    for c in conns:
        template = shared or request_template(spec, c.index)
        c.head, c.tail = template[:_CID_OFFSET], template[_CID_OFFSET + 4:]
    pack_cid = _INT32.pack
    unpack_from = _INT32.unpack_from
    now_ns = time.monotonic_ns

    if spec.duration is not None:
        window_start = start_ns + int(spec.warmup * 1e9)
        window_end = window_start + int(spec.duration * 1e9)
        stop_sending = window_end
        give_up = min(window_end + int(DRAIN_S * 1e9), start_ns + int(spec.timeout * 1e9))
        per_conn = None
    else:
        window_start, window_end = start_ns, None
        stop_sending = None
        give_up = start_ns + int(spec.timeout * 1e9)
        per_conn = spec.requests

    latencies = array("q")
    record = latencies.append
    counted = mismatches = errors = sampled = disconnects = unanswered = 0
    outstanding = 0          # requests sent and neither answered nor given up on
    last_counted = 0

    sel = selectors.DefaultSelector()
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)

    def send(c: _Conn, n: int, t: int) -> None:
        nonlocal outstanding
        if per_conn is not None:
            n = min(n, per_conn - c.sent)
        if n <= 0:
            return
        cid = c.next_cid
        head, tail = c.head, c.tail
        parts = []
        for _ in range(n):
            parts.append(head + pack_cid(cid) + tail)
            c.inflight.append((cid, t))
            cid = 0 if cid == _CID_MAX else cid + 1
        c.next_cid = cid
        c.sent += n
        outstanding += n
        c.out += b"".join(parts)
        _flush(c)

    def _flush(c: _Conn) -> None:
        try:
            sent = c.sock.send(c.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        del c.out[:sent]
        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if c.out else 0)
        if sel.get_key(c.sock).events != want:
            sel.modify(c.sock, want, c)

    def close(c: _Conn) -> None:
        nonlocal unanswered, outstanding
        unanswered += len(c.inflight)
        outstanding -= len(c.inflight)
        c.inflight.clear()
        c.open = False
        sel.unregister(c.sock)
        c.sock.close()

    # Go: every connection gets its first `depth` requests.
    while now_ns() < start_ns:
        time.sleep(min(0.01, max(0.0, (start_ns - now_ns()) / 1e9)))
    t0 = now_ns()
    for c in conns:
        try:
            send(c, spec.depth, t0)
        except OSError:
            disconnects += 1
            close(c)

    # Every answer is followed at once by the next request (until the count or the
    # time is up), so nothing in flight means there is nothing left to do.
    while outstanding > 0:
        t = now_ns()
        if t >= give_up:
            break
        for key, mask in sel.select(min(0.1, (give_up - t) / 1e9)):
            c = key.data
            if not c.open:
                continue
            try:
                if mask & selectors.EVENT_WRITE and c.out:
                    _flush(c)
                if not mask & selectors.EVENT_READ:
                    continue
                data = c.sock.recv(RECV_CHUNK)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                disconnects += 1
                close(c)
                continue
            t = now_ns()
            buf = c.buf
            buf += data
            pos, end, got = 0, len(buf), 0
            in_window = t >= window_start and (window_end is None or t < window_end)
            while end - pos >= 8:
                size = unpack_from(buf, pos)[0]
                if end - pos < 4 + size:
                    break
                cid = unpack_from(buf, pos + 4)[0]
                expected, sent_at = c.inflight.popleft() if c.inflight else (None, t)
                if cid != expected:
                    mismatches += 1
                if c.received % SAMPLE_EVERY == 0:
                    sampled += 1
                    _, decoded = decode_response(api_key, api_version,
                                                 bytes(buf[pos + 4:pos + 4 + size]))
                    if has_error(decoded):
                        errors += 1
                c.received += 1
                got += 1
                if in_window:
                    record(t - sent_at)
                pos += 4 + size
            if pos:
                del buf[:pos]
            outstanding -= got
            if in_window and got:
                counted += got
                last_counted = t
            if got and (stop_sending is None or t < stop_sending):
                try:
                    send(c, got, t)
                except OSError:
                    disconnects += 1
                    close(c)

    for c in conns:
        if c.open:
            close(c)
    sel.close()
    return {
        "latencies": latencies.tobytes(), "counted": counted,
        "t0": t0, "last_counted": last_counted,
        "sent": sum(c.sent for c in conns), "received": sum(c.received for c in conns),
        "mismatches": mismatches, "errors": errors, "sampled": sampled,
        "unanswered": unanswered, "disconnects": disconnects,
        "cpu_s": _cpu_seconds() - cpu_start,
    }


def _cpu_seconds() -> float:
    """CPU time of this thread (the measuring loop), so an in-process run
    (workers=0) does not count a server running in the same process."""
    return time.thread_time()


def _worker_main(spec: LoadSpec, count: int, first_index: int, ready, go, start_at,
                 results) -> None:
    """Entry point of a worker process."""
    try:
        conns = _connect(spec, count, first_index)
    except OSError as exc:
        ready.put(f"connect failed: {exc}")
        return
    ready.put("ready")
    if not go.wait(spec.timeout):
        for c in conns:
            c.sock.close()
        return
    results.put(_worker_run(spec, conns, start_at.value))


# --- the parent: deal out connections, start together, merge ---------------------------


def _shares(total: int, parts: int) -> list[int]:
    parts = max(1, min(parts, total))
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_load(spec: LoadSpec) -> LoadResult:
    spec.validate()
    lead_ns = int(0.1e9)  # let every worker see the go before the start time
    if spec.workers == 0:
        conns = _connect(spec, spec.connections)
        raw = [_worker_run(spec, conns, time.monotonic_ns() + lead_ns)]
        return _merge(spec, raw, 0, [])

    ctx = multiprocessing.get_context("spawn")
    ready, results = ctx.Queue(), ctx.Queue()
    go = ctx.Event()
    start_at = ctx.Value("q", 0)
    shares = _shares(spec.connections, spec.workers)
    firsts = [sum(shares[:i]) for i in range(len(shares))]
    procs = [ctx.Process(target=_worker_main,
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
    parser.add_argument("--api", choices=sorted(APIS), default="apiversions")
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes (0 = run in this process)")
    parser.add_argument("--timeout", type=float, default=120.0, help="hard cap, seconds")
    parser.add_argument("--topic", default=DEFAULT_TOPIC,
                        help="produce, fetch: the topic (must exist)")
    parser.add_argument("--partitions", type=int, default=1,
                        help="produce: connection i writes partition i %% PARTITIONS")
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
