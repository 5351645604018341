"""Group ``zerocopy`` (issue 19): 1 MiB Fetches answered from the durable log's
segment files with sendfile beside the same Fetches answered from the in-memory
log (the copy path), kload Fetch v4, interleaved.  Target: at least the copy
path's bytes per second at at most half its server CPU per GB.

Both servers are ``kafka-net serve`` on its defaults (3 + 8 threads), one with
``log.store=disk`` and ``log.dirs`` in the run's temporary folder, the other with
``log.store=memory``.  Each gets the same topic: 8 batches of just under 1 MiB
(4 records of 255 KiB, random bytes), so that a 1 MiB fetch from offset 0
answers with one whole batch."""

from __future__ import annotations

import os
import random
from pathlib import Path

from bench import harness
from bench.harness import ServerProcess, kafka_call
from bench.measure import Run, interleaved_kload, median
from bench.results import context_lines, num, table
from kafka_net.protocol.records import build_batch

GROUP = "zerocopy"
TOPIC = "zc"
FILES, COPY = "kafka-net log.store=disk", "kafka-net log.store=memory"
FETCH = ("--api", "fetch", "--topic", TOPIC, "--fetch-offset", "0",
         "--fetch-max-bytes", str(1 << 20))
SCENARIOS = {
    "fetch-4x1": ("Fetch v4, 1 MiB answers, 4 connections, 1 in flight",
                  (*FETCH, "--conns", "4", "--pipeline", "1")),
    "fetch-16x1": ("Fetch v4, 1 MiB answers, 16 connections, 1 in flight",
                   (*FETCH, "--conns", "16", "--pipeline", "1")),
}


def servers(tmp: Path) -> list[ServerProcess]:
    log_dirs = tmp / "log-dirs"
    log_dirs.mkdir(parents=True, exist_ok=True)
    return [harness.kafka_net(FILES, ("log.store=disk", f"log.dirs={log_dirs}")),
            harness.kafka_net(COPY, ("log.store=memory",))]


def fill(port: int) -> int:
    """The topic and its batches; returns the bytes stored."""
    harness.create_topic(port, TOPIC, 1)
    rng, stored = random.Random(19), 0
    for i in range(8):
        batch = build_batch([(f"k{i}-{j}".encode(), rng.randbytes(255 * 1024))
                             for j in range(4)])
        body = kafka_call(port, 0, 8, {"transactional_id": None, "acks": 1,
                                       "timeout_ms": 10_000, "topic_data": [
                                           {"name": TOPIC, "partition_data": [
                                               {"index": 0, "records": batch}]}]})
        code = body["responses"][0]["partition_responses"][0]["error_code"]
        if code:
            raise RuntimeError(f"Produce to {TOPIC} on port {port} answered {code}")
        stored += len(batch)
    return stored


def bytes_per_response(r: Run) -> float:
    return r.result.get("resp_MB_per_s", 0) * 1e6 * r.result.get("seconds", 0) / max(
        r.answered, 1)


def cpu_s_per_gb(r: Run) -> float:
    # The CPU window covers warm-up too: divide by the bytes of every response.
    total = bytes_per_response(r) * r.all_responses
    return r.server_cpu_s / (total / 1e9) if total else float("nan")


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    kload = harness.build_kload()
    started = servers(tmp)
    with harness.serving(started, tmp / GROUP, problems):
        for s in started:
            fill(s.port)
        runs = interleaved_kload(kload, started, SCENARIOS, args, problems)
    context["load_end"] = os.getloadavg()[0]
    return section(runs, started, context)


def section(runs: dict[str, list[Run]], servers, context: dict) -> str:
    lines = [f"### Zero-copy Fetch (group `{GROUP}`)", "",
             *context_lines(context, [f"- {s.name}: {s.describe}" for s in servers]), ""]
    rows, verdicts = [], []
    for key, (title, _) in SCENARIOS.items():
        by = {s.name: [r for r in runs[key] if r.server == s.name] for s in servers}
        mb = {n: median([r.result.get("resp_MB_per_s", float("nan")) for r in rs])
              for n, rs in by.items()}
        cpu = {n: median([cpu_s_per_gb(r) for r in rs]) for n, rs in by.items()}
        for n in by:
            rows.append([title, n, num(mb[n], 1), num(cpu[n], 2),
                         num(median([r.p99_ms for r in by[n]]), 1)])
        met = mb[FILES] >= mb[COPY] and cpu[FILES] <= cpu[COPY] / 2
        verdicts.append(f"- {title}: from files {mb[FILES] / mb[COPY]:.2f}x the bytes/s at "
                        f"{cpu[FILES] / cpu[COPY]:.2f}x the CPU per GB: target "
                        f"{'met' if met else 'missed'}")
    lines += table(["scenario", "server", "response MB/s (median)",
                    "server CPU s per GB (median)", "p99 ms (median)"], rows, {2, 3, 4})
    lines += ["Target: at least the copy path's MB/s at at most half its CPU per GB.", "",
              *verdicts, ""]
    return "\n".join(lines)
