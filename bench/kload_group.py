"""Group ``kload`` (issue 9): kafka-net beside the Python ceiling, the hand-off floor and
Tansu, measured from outside with kload (C), all servers in one interleaved run.

Servers: ``ceiling_server.py`` (one thread), ``handoff_floor.py`` 1+1 and 3+8, Tansu
(Rust), kafka-net on its defaults (3+8) and with one network and one handler thread.
Each scenario runs against every server that speaks its API, in an order rotated each
round; a figure is the median over the rounds, a ratio the median of per-round ratios.
The Fetch scenario is driven by ``bench/loadgen.py`` (kload has no Fetch); its own CPU
is recorded so it can be seen whether it, not the server, set the pace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bench import harness
from bench.harness import ServerProcess
from bench.loadgen import LoadSpec, run_load
from bench.measure import Run, context_switches, cpu_seconds, median, run_kload
from bench.results import context_lines, num, rate, table

GROUP = "kload"
TOPIC = "bench"                 # kload --topic: Metadata and Produce (partition 0)
FETCH_TOPIC = "bench-fetch"     # filled with one batch before the Fetch runs
CEILING, FLOOR_11, FLOOR_38 = "ceiling", "floor 1+1", "floor 3+8"
TANSU, KN_38, KN_11 = "Tansu", "kafka-net 3+8", "kafka-net 1+1"
COLUMNS = (CEILING, FLOOR_11, FLOOR_38, TANSU, KN_38, KN_11)
KAFKA_APIS = (CEILING, TANSU, KN_38, KN_11)         # the floor answers ApiVersions only
BROKERS = (TANSU, KN_38, KN_11)                      # Fetch needs a real log


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    args: tuple[str, ...]       # kload options (or, for fetch, loadgen's)
    servers: tuple[str, ...]
    tool: str = "kload"


SCENARIOS = (
    Scenario("av16x1", "ApiVersions v0, 16 connections, 1 in flight",
             ("--api", "apiversions", "--conns", "16", "--pipeline", "1"), COLUMNS),
    Scenario("av64x4", "ApiVersions v0, 64 connections, 4 in flight",
             ("--api", "apiversions", "--conns", "64", "--pipeline", "4"), COLUMNS),
    Scenario("produce8x4", "Produce v3 (10 x 100 B records), 8 connections, 4 in flight",
             ("--api", "produce", "--topic", TOPIC, "--batch", "10", "--size", "100",
              "--conns", "8", "--pipeline", "4"), KAFKA_APIS),
    Scenario("metadata16x1", "Metadata v1 (one topic), 16 connections, 1 in flight",
             ("--api", "metadata", "--topic", TOPIC, "--conns", "16", "--pipeline", "1"),
             KAFKA_APIS),
    Scenario("fetch8x1", "Fetch v12 (one 10-record batch), 8 connections, 1 in flight "
             "(bench/loadgen.py)", (), BROKERS, tool="loadgen"),
)

# Known limits of the measuring servers, not of the servers measured: such a run's
# problems are listed under the tables instead of failing the run.
KNOWN_LIMITS = {
    (FLOOR_11, "av64x4"): "handoff_floor.py",
    (FLOOR_38, "av64x4"): "handoff_floor.py",
}
KNOWN_LIMIT_NOTE = {
    "handoff_floor.py": "`handoff_floor.py` takes only the first complete frame of a read "
                        "and looks at the rest of its buffer only when more bytes arrive, "
                        "so with pipelining a connection stalls once its client has sent "
                        "everything it may: kload reports those requests unanswered",
}

# (subject, baseline, scenario keys, at least this ratio): issue 9's targets.
TARGETS = (
    (KN_38, FLOOR_38, ("av16x1", "av64x4"), 0.8),
    (KN_38, TANSU, ("produce8x4",), 1.0),
    (KN_11, FLOOR_11, ("av16x1", "av64x4"), 0.8),
    (KN_11, TANSU, ("av16x1", "av64x4", "produce8x4"), 1.5),
)


def make_servers() -> list[ServerProcess]:
    return [harness.ceiling(), harness.handoff_floor(1, 1), harness.handoff_floor(3, 8),
            harness.tansu(), harness.kafka_net(KN_38),
            harness.kafka_net(KN_11, ("num.network.threads=1", "num.io.threads=1"))]


@dataclass
class Results:
    runs: dict[str, list[Run]] = field(default_factory=dict)   # scenario key -> runs

    def of(self, key: str, server: str) -> list[Run]:
        return [r for r in self.runs.get(key, []) if r.server == server]

    def med(self, key: str, server: str, attr: str) -> float:
        return median(getattr(r, attr) for r in self.of(key, server))

    def round_ratios(self, key: str, subject: str, baseline: str) -> list[float]:
        base = {r.round: r.req_per_s for r in self.of(key, baseline)}
        return [r.req_per_s / base[r.round] for r in self.of(key, subject)
                if base.get(r.round)]


def prepare(kload: Path, server: ServerProcess) -> None:
    """The topics: Metadata auto-creates on the ceiling; CreateTopics on the brokers,
    then one batch into the Fetch topic."""
    if server.name == CEILING:
        run = run_kload(kload, server, 0, ["--api", "metadata", "--topic", TOPIC,
                                           "--requests", "1"], timeout=30)
        if not run.ok:
            raise RuntimeError(f"{server.name}: Metadata for {TOPIC}: {run.problems}")
    elif server.name in BROKERS:
        harness.create_topic(server.port, TOPIC, 1)
        harness.create_topic(server.port, FETCH_TOPIC, 1)
        run = run_kload(kload, server, 0, ["--api", "produce", "--topic", FETCH_TOPIC,
                                           "--batch", "10", "--size", "100",
                                           "--requests", "1"], timeout=30)
        if not run.ok:
            raise RuntimeError(f"{server.name}: filling {FETCH_TOPIC}: {run.problems}")


def fetch_run(server: ServerProcess, rnd: int, args) -> Run:
    """One bench/loadgen.py Fetch run; its result in kload's field names."""
    spec = LoadSpec(port=server.port, connections=8, depth=1, duration=args.duration,
                    warmup=args.warmup, api="fetch", workers=2, topic=FETCH_TOPIC,
                    partitions=1, timeout=args.warmup + args.duration + 60)
    cpu0, cs0 = cpu_seconds(server), context_switches(server)
    r = run_load(spec)
    cpu1, cs1 = cpu_seconds(server), context_switches(server)
    result = {"measured": r.requests, "responses": r.received, "req_per_s": r.throughput,
              "p50_us": r.p50_ms * 1e3, "p99_us": r.p99_ms * 1e3,
              "loadgen_cpu_s": r.loadgen_cpu_s, "loadgen_wall_s": r.seconds + args.warmup}
    problems = [] if r.ok else [f"loadgen: mismatches {r.mismatches}, errors {r.errors}, "
                                f"unanswered {r.unanswered} {r.notes}"]
    return Run(server.name, rnd, result, cpu1 - cpu0, cs1 - cs0, 0.0, problems)


def one_run(kload: Path, server: ServerProcess, sc: Scenario, rnd: int, args) -> Run:
    if sc.tool == "loadgen":
        return fetch_run(server, rnd, args)
    kargs = [*sc.args, "--duration", str(args.duration), "--warmup", str(args.warmup)]
    if (server.name, sc.key) in KNOWN_LIMITS:
        kargs += ["--stall-timeout", "2"]    # it will stall at the end: do not wait 10 s
    return run_kload(kload, server, rnd, kargs, timeout=args.duration + args.warmup + 60)


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    kload = harness.build_kload()
    servers = make_servers()
    results = Results()
    with harness.serving(servers, tmp / GROUP, problems):
        for server in servers:
            prepare(kload, server)
        for rnd in range(1, args.rounds + 1):
            order = harness.round_order(servers, rnd)
            for sc in SCENARIOS:
                for server in (s for s in order if s.name in sc.servers):
                    r = one_run(kload, server, sc, rnd, args)
                    results.runs.setdefault(sc.key, []).append(r)
                    print(f"round {rnd} {sc.key:13} {server.name:14} {r.req_per_s:9,.0f} "
                          f"req/s  p99 {r.p99_ms:7.2f} ms  CPU {r.cpu_us_per_request:5.0f} "
                          f"us/req  {'ok' if r.ok else r.problems}", flush=True)
                    if (server.name, sc.key) not in KNOWN_LIMITS:
                        problems += [f"{server.name} {sc.key} round {rnd}: {p}"
                                     for p in r.problems]
    context["load_end"] = os.getloadavg()[0]
    context["servers"] = {s.name: s.describe for s in servers}
    return render(results, context)


# --- RESULTS.md ------------------------------------------------------------------------


def render(res: Results, context: dict) -> str:
    lines = ["## kload: kafka-net beside the ceiling, the hand-off floor and Tansu", ""]
    lines += context_lines(context, [
        f"- Runs: {context['rounds']} rounds, each scenario against every server that "
        f"speaks its API, the order rotated each round; {context['warmup']:g} s warm-up "
        f"then {context['duration']:g} s measured per run; figures are medians over the "
        f"rounds, ratios medians of the per-round ratios.",
        "- Servers: " + "; ".join(f"{k}: {v}" for k, v in context["servers"].items())])
    lines += ["### Requests per second", ""]
    lines += table(["scenario", *COLUMNS], [
        [sc.title, *(rate(res.med(sc.key, s, "req_per_s")) if s in sc.servers else "n/a"
                     for s in COLUMNS)] for sc in SCENARIOS], right=set(range(1, 7)))
    lines += ["### Server CPU µs per request / p99 latency ms", ""]
    lines += table(["scenario", *COLUMNS], [
        [sc.title, *(f"{num(res.med(sc.key, s, 'cpu_us_per_request'))} / "
                     f"{num(res.med(sc.key, s, 'p99_ms'), 1)}" if s in sc.servers else "n/a"
                     for s in COLUMNS)] for sc in SCENARIOS], right=set(range(1, 7)))
    lines += ["### Context switches per request (all server threads)", ""]
    lines += table(["scenario", *COLUMNS], [
        [sc.title, *(num(res.med(sc.key, s, "switches_per_request"), 1)
                     if s in sc.servers else "n/a" for s in COLUMNS)]
        for sc in SCENARIOS], right=set(range(1, 7)))
    lines += ["### Targets (issue 9)", ""]
    rows = []
    titles = {sc.key: sc.title for sc in SCENARIOS}
    for subject, baseline, keys, goal in TARGETS:
        for key in keys:
            per_round = res.round_ratios(key, subject, baseline)
            ratio = median(per_round)
            rows.append([f"{subject} / {baseline}", titles[key], f">= {goal}",
                         f"**{num(ratio, 2)}**", ", ".join(f"{x:.2f}" for x in per_round),
                         "met" if ratio >= goal else "**not met**"])
    lines += table(["ratio", "scenario", "target", "measured", "per round", ""], rows,
                   right={2, 3})
    lines += fetch_lines(res) + problem_lines(res)
    return "\n".join(lines) + "\n"


def fetch_lines(res: Results) -> list[str]:
    """The Python load generator's own CPU share in the Fetch runs (2 processes)."""
    rows = []
    for server in BROKERS:
        runs = res.of("fetch8x1", server)
        share = median(r.result["loadgen_cpu_s"] / r.result["loadgen_wall_s"] for r in runs)
        rows.append([server, num(share * 100 / 2), num(median(
            r.result["loadgen_cpu_s"] / max(r.all_responses, 1) * 1e6 for r in runs))])
    return ["### Fetch load generator (bench/loadgen.py, 2 worker processes)", "",
            *table(["server", "load generator CPU, % of its 2 processes",
                    "load generator CPU µs/request"], rows, right={1, 2})]


def problem_lines(res: Results) -> list[str]:
    out, notes = [], []
    for key, runs in res.runs.items():
        for r in runs:
            if r.problems:
                why = KNOWN_LIMITS.get((r.server, key))
                out.append(f"- {r.server}, {key}, round {r.round}: {', '.join(r.problems)}"
                           + (f" (known limit of `{why}`, below)" if why else ""))
                if why and KNOWN_LIMIT_NOTE[why] not in notes:
                    notes.append(KNOWN_LIMIT_NOTE[why])
    if not out:
        return ["Every run: every correlation id matched, no error code, nothing "
                "unanswered.", ""]
    return ["### Runs with problems", "", *out, "", *(f"Known limit: {n}." for n in notes), ""]
