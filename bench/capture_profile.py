"""Where capture's cost goes: kafka-net's Processors with capture switched piece by piece.

``python -m bench.capture_profile --api produce`` runs one kafka-net broker in
this process (its defaults: 3 network, 8 handler threads; ``capture.dir`` in a
temporary directory) and measures, interleaved over ``--rounds``, the same
load (kload from ``../shared/bench``, 16 connections x 1, a subprocess) with each
Processor's ``capture`` attribute (the object a Processor hands every request
and response frame to: ``request(...)``, ``response(...)``, ``close()``) set
to, in turn:

* ``off``: None, as without ``capture.dir``;
* ``call``: an object whose methods do nothing: what the Processor itself
  does for capture (peek the header fields and client id, format the peer);
* ``encode``: builds the record bytes as the writer does (``encode_record``
  of a ``CaptureRecord``, i.e. without the writer's per-connection cache),
  and drops them: the encoding, no system call;
* ``write``: one ``os.write`` per record of the size the real record would
  have (zero bytes from a preallocated buffer), no encoding: the system calls
  alone, as the writer made them before it used a memory mapping (each
  releases and retakes the GIL);
* ``full``: the real :class:`CaptureWriter`: encode, then copy the record into
  the shared memory mapping of the current segment (no system call per record).

For each: req/s; server CPU per request split by thread kind (network =
Processor threads, handler = request handler threads), from the threads' CPU
times (psutil) before and after the run; and, measured around every call the
Processor makes into its capture object, the CPU time of that thread inside
the call (``time.thread_time_ns``) and the wall time inside it
(``perf_counter_ns``).  Wall minus CPU inside a call is mostly the wait to
take the GIL back after a system call released it (``write``), during which
that Processor serves none of its connections.  The per-call figures are steady on a busy
machine; the per-thread CPU totals and req/s move with the machine's load.
Prints a table (``--json`` for JSON).  A diagnostic: it reaches into
``SocketServer.processors``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import psutil

from bench.harness import build_kload, create_topic
from kafka_net.capture.format import CaptureRecord, encode_record
from kafka_net.config import ServerConfig, parse_listeners

VARIANTS = ("off", "call", "encode", "write", "full")
_RECORD_OVERHEAD = 80          # bytes a record adds to its frame (header fields, ids)


class _Call:
    def request(self, *args) -> None:
        pass

    def response(self, *args) -> None:
        pass

    def close(self) -> None:
        pass


class _Encode(_Call):
    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes

    def request(self, connection_id, peer, frame, api_key, api_version, correlation_id,
                client_id) -> None:
        self._encode(0, connection_id, peer, frame, api_key, api_version, correlation_id,
                     client_id)

    def response(self, connection_id, peer, frame, api_key, api_version,
                 correlation_id) -> None:
        self._encode(1, connection_id, peer, frame, api_key, api_version, correlation_id, None)

    def _encode(self, direction, connection_id, peer, frame, api_key, api_version,
                correlation_id, client_id) -> bytes:
        kept = frame[:self.max_frame_bytes]
        return encode_record(CaptureRecord(
            time.time_ns(), direction, api_key, api_version, correlation_id, len(frame),
            connection_id, peer, client_id, bytes(kept), len(kept) < len(frame)))


class _Write(_Call):
    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._zeros = memoryview(bytes(1 << 20))

    def request(self, connection_id, peer, frame, *args) -> None:
        os.write(self._fd, self._zeros[:len(frame) + _RECORD_OVERHEAD])

    def response(self, connection_id, peer, frame, *args) -> None:
        os.write(self._fd, self._zeros[:len(frame) + _RECORD_OVERHEAD])

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class _Timed:
    """Wraps a capture object; adds up CPU and wall time spent inside its calls (one
    Processor thread calls it, so no lock)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.cpu_ns = self.wall_ns = self.calls = 0

    def request(self, *args) -> None:
        c, w = time.thread_time_ns(), time.perf_counter_ns()
        self.inner.request(*args)
        self.cpu_ns += time.thread_time_ns() - c
        self.wall_ns += time.perf_counter_ns() - w
        self.calls += 1

    def response(self, *args) -> None:
        c, w = time.thread_time_ns(), time.perf_counter_ns()
        self.inner.response(*args)
        self.cpu_ns += time.thread_time_ns() - c
        self.wall_ns += time.perf_counter_ns() - w
        self.calls += 1

    def close(self) -> None:
        self.inner.close()


def _thread_cpu() -> dict[str, float]:
    names = {t.native_id: t.name for t in threading.enumerate()}
    out = {"network": 0.0, "handler": 0.0, "other": 0.0}
    for t in psutil.Process().threads():
        name = names.get(t.id, "")
        kind = ("network" if "network-thread" in name else
                "handler" if "request-handler" in name else "other")
        out[kind] += t.user_time + t.system_time
    return out


KLOAD_ARGS = {"apiversions": ["--api", "apiversions"],
              "produce": ["--api", "produce", "--topic", "bench", "--batch", "1",
                          "--size", "100"]}


def kload_run(kload, port: int, api: str, duration: float, warmup: float) -> dict:
    argv = [str(kload), "--port", str(port), "--quiet", "--conns", "16", "--pipeline", "1",
            "--duration", str(duration), "--warmup", str(warmup), *KLOAD_ARGS[api]]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=duration + warmup + 60)
    lines = proc.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {}
    result["ok"] = proc.returncode == 0 and bool(lines)
    return result


def run(api: str, rounds: int, duration: float, warmup: float) -> dict:
    from kafka_net.server.kafka_server import KafkaServer
    kload = build_kload()
    work = tempfile.mkdtemp(prefix="kafka-net-capture-profile-")
    config = ServerConfig(listeners=parse_listeners("PLAINTEXT://127.0.0.1:0"),
                          capture_dir=os.path.join(work, "captures"), log_store="memory")
    server = KafkaServer(config)
    server.startup()
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    try:
        port = server.bound_port()
        create_topic(port, "bench", 1)
        processors = server.socket_server.processors
        real = {p.id: p.capture for p in processors}
        stubs = {
            "off": lambda p: None,
            "call": lambda p: _Timed(_Call()),
            "encode": lambda p: _Timed(_Encode(config.capture_max_frame_bytes)),
            "write": lambda p: _Timed(_Write(os.path.join(work, f"write-{p.id}.bin"))),
            "full": lambda p: _Timed(real[p.id]),
        }
        for rnd in range(rounds):
            order = VARIANTS[rnd % len(VARIANTS):] + VARIANTS[:rnd % len(VARIANTS)]
            for variant in order:
                for p in processors:    # between runs: the Processors are idle
                    p.capture = stubs[variant](p)
                before = _thread_cpu()
                result = kload_run(kload, port, api, duration, warmup)
                after = _thread_cpu()
                n = max(result.get("responses", 0), 1)
                timed = [p.capture for p in processors if p.capture is not None]
                runs[variant].append({
                    "req_s": result.get("req_per_s", 0.0), "ok": result["ok"],
                    "inside_cpu_us": sum(t.cpu_ns for t in timed) / n / 1e3,
                    "inside_wall_us": sum(t.wall_ns for t in timed) / n / 1e3,
                    **{f"{k}_us": (after[k] - before[k]) / n * 1e6 for k in after}})
                for p in processors:
                    if variant == "write":
                        p.capture.close()
                    p.capture = real[p.id]
    finally:
        server.shutdown()
    summary = {}
    for variant, rs in runs.items():
        summary[variant] = {k: statistics.median(r[k] for r in rs)
                            for k in ("req_s", "network_us", "handler_us", "other_us",
                                      "inside_cpu_us", "inside_wall_us")}
        summary[variant]["ok"] = all(r["ok"] for r in rs)
        summary[variant]["req_s_runs"] = [r["req_s"] for r in rs]
    return {"api": api, "rounds": rounds, "duration": duration, "variants": summary}


def table(result: dict) -> list[str]:
    v = result["variants"]
    off = v["off"]
    lines = ["| capture | inside capture calls: CPU µs/req | wall µs/req | req/s | vs off | "
             "network threads CPU µs/req | handler threads CPU µs/req |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in VARIANTS:
        r = v[name]
        inside = ("| - | - " if name == "off" else
                  f"| {r['inside_cpu_us']:.1f} | {r['inside_wall_us']:.1f} ")
        lines.append(
            f"| `{name}` {inside}| {r['req_s']:,.0f} | "
            f"{round(r['req_s'] / off['req_s'] - 1, 2) + 0.0:+.0%} | "
            f"{r['network_us']:.0f} | {r['handler_us']:.0f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capture_profile",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=["apiversions", "produce"], default="produce")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.api, args.rounds, args.duration, args.warmup)
    if args.json:
        print(json.dumps(result))
    else:
        print("\n".join(table(result)))
    return 0 if all(r["ok"] for r in result["variants"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
