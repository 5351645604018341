"""Group ``durable`` (issue 19): Produce on the durable log beside the in-memory store.

Four kafka-net servers, interleaved (the order rotated each round), each driven by
kload Produce v3 8x4 as the kload group drives it (10 records of 100 bytes a batch,
8 connections, 4 requests in flight, acks=1):

* on Kafka's default thread counts (3 network + 8 handler threads), with
  ``log.store=memory`` and with ``log.store=disk`` (``log.dirs`` in the run's
  temporary folder);
* the same two with one network and one handler thread (1+1), where the handler
  thread, which appends, is the one most likely to set the pace.

The durable log keeps Kafka's defaults: no fsync per append (``flush.messages`` and
``flush.ms`` unset, the OS writes the pages back), an index entry every
``index.interval.bytes`` (4096).  Target: disk / memory requests per second at least
0.9, the median of the per-round ratios."""

from __future__ import annotations

import os
from pathlib import Path

from bench import harness
from bench.measure import Run, interleaved_kload, median
from bench.results import context_lines, num, rate, table

GROUP = "durable"
TOPIC = "bench"
TARGET = 0.9
THREADS = {"3+8": (), "1+1": ("num.network.threads=1", "num.io.threads=1")}
DISK, MEMORY = "disk", "memory"
SCENARIOS = {
    "produce8x4": ("Produce v3 (10 x 100 B records), 8 connections, 4 in flight",
                   ("--api", "produce", "--topic", TOPIC, "--batch", "10", "--size", "100",
                    "--conns", "8", "--pipeline", "4")),
}


def name(store: str, threads: str) -> str:
    return f"kafka-net {threads} log.store={store}"


def servers(tmp: Path) -> list[harness.ServerProcess]:
    started = []
    for threads, overrides in THREADS.items():
        log_dirs = tmp / f"log-dirs-{threads}"
        log_dirs.mkdir(parents=True, exist_ok=True)
        started += [harness.kafka_net(name(MEMORY, threads), ("log.store=memory", *overrides)),
                    harness.kafka_net(name(DISK, threads),
                                      ("log.store=disk", f"log.dirs={log_dirs}", *overrides))]
    return started


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    kload = harness.build_kload()
    compared = servers(tmp / GROUP)
    with harness.serving(compared, tmp / GROUP, problems):
        for server in compared:
            harness.create_topic(server.port, TOPIC, 1)
        runs = interleaved_kload(kload, compared, SCENARIOS, args, problems)
    context["load_end"] = os.getloadavg()[0]
    return render(runs, compared, context)


def round_ratios(rs: list[Run], threads: str, measure) -> list[float]:
    """measure(disk) / measure(memory) of each round that has both runs."""
    memory = {r.round: measure(r) for r in rs if r.server == name(MEMORY, threads)}
    return [measure(r) / memory[r.round] for r in rs
            if r.server == name(DISK, threads) and memory.get(r.round)]


def _ratio_cell(ratios: list[float]) -> str:
    return f"**{num(median(ratios), 2)}** ({', '.join(f'{x:.2f}' for x in ratios)})"


def render(runs: dict[str, list[Run]], compared, context: dict) -> str:
    lines = ["## Produce on the durable log: kafka-net log.store=disk / log.store=memory", ""]
    lines += context_lines(context, [
        *(f"- {s.name}: {s.describe}" for s in compared),
        "- The durable log on Kafka's defaults: no fsync per append (the OS writes the "
        "pages back), an index entry every `index.interval.bytes` (4096).",
        f"- Load: kload, {context['rounds']} rounds, the order rotated each round, "
        f"{context['warmup']:g} s warm-up then {context['duration']:g} s measured. Ratios: "
        "disk / memory, median of the per-round ratios (per round in brackets)."])
    rows, verdicts = [], []
    for key, (title, _) in SCENARIOS.items():
        for threads in THREADS:
            ratios = round_ratios(runs[key], threads, lambda r: r.req_per_s)
            for store in (MEMORY, DISK):
                rs = [r for r in runs[key] if r.server == name(store, threads)]
                disk = store == DISK
                rows.append([title, threads, store, rate(median(r.req_per_s for r in rs)),
                             num(median(r.cpu_us_per_request for r in rs)),
                             num(median(r.p99_ms for r in rs), 1),
                             _ratio_cell(ratios) if disk else "",
                             _ratio_cell(round_ratios(runs[key], threads,
                                                      lambda r: r.cpu_us_per_request))
                             if disk else ""])
            met = median(ratios) >= TARGET
            verdicts.append(f"- {title}, {threads}: disk {num(median(ratios), 2)}x the "
                            f"in-memory store's req/s: target (>= {TARGET}) "
                            f"{'met' if met else '**not met**'}")
    lines += table(["scenario", "threads", "log.store", "req/s", "server CPU µs/req",
                    "p99 ms", "req/s disk / memory", "CPU µs/req disk / memory"], rows,
                   right={3, 4, 5})
    lines += [*verdicts, ""]
    bad = [f"- {r.server}, {key}, round {r.round}: {', '.join(r.problems)}"
           for key, rs in runs.items() for r in rs if r.problems]
    lines += ["### Runs with problems", "", *bad, ""] if bad else [
        "Every run: every correlation id matched, no error code, nothing unanswered.", ""]
    return "\n".join(lines) + "\n"
