"""Run every benchmark scenario against kafka-net and the reference server; write RESULTS.md.

``python -m bench.run_all`` (what ``make bench`` runs) does everything:

1. starts ``python -m kafka_net serve`` (defaults, but an ephemeral loopback
   port) and ``python -m bench.reference_server`` as subprocesses;
2. preflight: both must give the same ApiVersions answer, byte for byte;
3. runs every scenario against both, interleaved in one run: round 1 goes
   kafka-net then reference, round 2 reference then kafka-net, and so on, so
   drift in the machine's load hits both alike; each figure is the median
   over the rounds;
4. stops both with SIGTERM and checks they exit cleanly;
5. rewrites, in ``bench/RESULTS.md``, the section of each scenario group that
   ran (between ``<!-- bench:NAME begin -->`` and ``<!-- bench:NAME end -->``)
   and keeps every other section as it is.

Adding a benchmark: add its scenarios to :data:`SCENARIOS` (and a
:class:`Group` to :data:`GROUPS` for a new section).  The reference server
uses kafka-net's own ``KafkaApis``, so it serves every API kafka-net serves.

Everything is bounded: each load run has a duration and a hard timeout, each
server start and stop a timeout.  Exit code 0 when every run was clean (no
correlation mismatch, no error, nothing unanswered), 1 otherwise, 2 when a
server did not start.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench.loadgen import APIS, LoadResult, LoadSpec, run_load
from kafka_net.protocol.codec import encode_request

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
TARGET_RATIO = 0.5
KAFKA_NET, REFERENCE = "kafka-net", "reference"


# --- what to run -------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    group: str            # the RESULTS.md section it belongs to
    title: str
    connections: int
    depth: int            # requests in flight per connection
    api: str = "apiversions"


@dataclass(frozen=True)
class Group:
    title: str
    intro: str


GROUPS: dict[str, Group] = {
    "apiversions": Group(
        title="ApiVersions: kafka-net beside the single-threaded reference",
        intro=("ApiVersions v3 requests (flexible, with client software name and "
               "version), answered by the same `KafkaApis` in both servers, so only the "
               "threading and network architecture differs. Target for the design: "
               f"kafka-net at least {TARGET_RATIO:.0%} of the reference's throughput."),
    ),
}

SCENARIOS: list[Scenario] = [
    Scenario("apiversions", "16 connections, 1 request in flight each (no pipelining)", 16, 1),
    Scenario("apiversions", "64 connections, 4 requests in flight each", 64, 4),
]


# --- the servers -------------------------------------------------------------------------


@dataclass
class ServerProcess:
    name: str
    argv: list[str]
    ready: re.Pattern          # matched against the log; group 1 is the port
    proc: subprocess.Popen | None = None
    port: int = 0
    log_path: Path | None = None
    ps: psutil.Process | None = None
    exit_code: int | None = None

    def start(self, log_dir: Path, timeout: float = 30.0) -> None:
        self.log_path = log_dir / f"{self.name}.log"
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.ready.search(self.log_text())
            if m:
                self.port = int(m.group(1))
                self.ps = psutil.Process(self.proc.pid)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} did not start; its log:\n{self.log_text()[-2000:]}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def cpu_seconds(self) -> float:
        t = self.ps.cpu_times()
        return t.user + t.system

    def context_switches(self) -> int:
        """Voluntary + involuntary context switches of all the server's threads so far
        (Linux; psutil's num_ctx_switches counts the main thread only).  0 elsewhere."""
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").glob("*/status"):
            try:
                for line in task.read_text().splitlines():
                    if "ctxt_switches:" in line:
                        total += int(line.split(":", 1)[1])
            except (OSError, ValueError):
                continue  # a thread that just ended
        return total

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None or self.exit_code is not None:
            return self.exit_code
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.exit_code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.exit_code = self.proc.wait(10)
        return self.exit_code


def make_servers() -> list[ServerProcess]:
    py = sys.executable
    return [
        ServerProcess(KAFKA_NET,
                      [py, "-m", "kafka_net", "serve",
                       "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
                      re.compile(r"listening on PLAINTEXT://127\.0\.0\.1:(\d+)")),
        ServerProcess(REFERENCE, [py, "-m", "bench.reference_server", "--port", "0"],
                      re.compile(r"listening on 127\.0\.0\.1:(\d+)")),
    ]


def api_versions_answer(port: int, timeout: float = 10.0) -> bytes:
    """The raw response frame to one ApiVersions v3 request (correlation id 7)."""
    api_key, version, body = APIS["apiversions"]
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(encode_request(api_key, version, 7, body, client_id="kafka-net-bench"))
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed before answering")
            data += chunk
        return data


# --- one run -----------------------------------------------------------------------------


@dataclass
class Measurement:
    server: str
    round: int
    result: LoadResult
    server_cpu_s: float         # CPU the server process used during the run
    context_switches: int       # of the server's threads during the run
    wall_s: float

    @property
    def cpu_us_per_request(self) -> float:
        return self.server_cpu_s / self.result.received * 1e6 if self.result.received else 0.0

    @property
    def switches_per_request(self) -> float:
        return self.context_switches / self.result.received if self.result.received else 0.0


@dataclass
class ScenarioResult:
    scenario: Scenario
    runs: list[Measurement] = field(default_factory=list)

    def of(self, server: str) -> list[Measurement]:
        return sorted((m for m in self.runs if m.server == server), key=lambda m: m.round)

    def median(self, server: str, attr: str) -> float:
        values = [getattr(m.result, attr) if hasattr(m.result, attr) else getattr(m, attr)
                  for m in self.of(server)]
        return statistics.median(values) if values else float("nan")

    def ratio(self) -> float:
        """Median over rounds of kafka-net req/s / reference req/s in the same round:
        the two runs of a round are back to back, so they share the machine's mood."""
        ratios = self.round_ratios()
        return statistics.median(ratios) if ratios else float("nan")

    def round_ratios(self) -> list[float]:
        ref = {m.round: m.result.throughput for m in self.of(REFERENCE)}
        return [m.result.throughput / ref[m.round] for m in self.of(KAFKA_NET)
                if ref.get(m.round)]

    def clean(self) -> bool:
        return all(m.result.ok for m in self.runs)


def measure(server: ServerProcess, scenario: Scenario, rnd: int, args) -> Measurement:
    spec = LoadSpec(port=server.port, connections=scenario.connections, depth=scenario.depth,
                    duration=args.duration, warmup=args.warmup, api=scenario.api,
                    workers=args.workers, timeout=args.warmup + args.duration + 60)
    cpu0, cs0, t0 = server.cpu_seconds(), server.context_switches(), time.monotonic()
    result = run_load(spec)
    cpu1, cs1, t1 = server.cpu_seconds(), server.context_switches(), time.monotonic()
    return Measurement(server.name, rnd, result, cpu1 - cpu0, cs1 - cs0, t1 - t0)


# --- RESULTS.md ----------------------------------------------------------------------------


HEADER = """# Benchmark results

Written by `python -m bench.run_all` (`make bench`); see `bench/README.md` for what
is measured and how. Each section is regenerated when its group runs; sections of
other groups are left as they are. Numbers come from a shared 2-core machine, so
compare the servers within one section (measured in one run, interleaved), not
across sections or dates.
"""


def begin_marker(group: str) -> str:
    return f"<!-- bench:{group} begin -->"


def end_marker(group: str) -> str:
    return f"<!-- bench:{group} end -->"


def update_results(path: Path, group: str, section: str) -> None:
    """Replace the group's section between its markers (or append it), keep the rest."""
    text = path.read_text() if path.exists() else HEADER
    block = f"{begin_marker(group)}\n{section.rstrip()}\n{end_marker(group)}\n"
    begin, end = begin_marker(group), end_marker(group)
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpus": f"{os.cpu_count()} CPUs ({usable} usable), {cpu}",
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def render_group(group: str, results: list[ScenarioResult], context: dict) -> str:
    g = GROUPS[group]
    lines = [f"## {g.title}", "", g.intro, ""]
    lines += [
        f"- Date: {context['date']}",
        f"- Command: `{context['command']}`",
        f"- Machine: {context['machine']['cpus']}; {context['machine']['os']}; "
        f"{context['machine']['python']}",
        f"- Load average (1 min) before / after the run: {context['load_start']:.2f} / "
        f"{context['load_end']:.2f} (the second includes the benchmark's own processes)",
        f"- kafka-net: `python -m kafka_net serve` on its defaults "
        f"(num.network.threads=3, num.io.threads=8, queued.max.requests=500), "
        f"loopback, ephemeral port. Reference: `python -m bench.reference_server` "
        f"(one thread, same `KafkaApis`).",
        f"- Load: `bench/loadgen.py`, {context['workers']} worker processes, "
        f"{context['warmup']:g} s warm-up then {context['duration']:g} s measured per run; "
        f"{context['rounds']} rounds, servers alternating order each round; req/s and latencies are "
        f"medians over the rounds.",
        f"- Preflight: {context['preflight']}",
        "",
    ]
    for sr in results:
        s = sr.scenario
        lines += [f"### {s.title}", "",
                  "| server | req/s | p50 ms | p99 ms | kafka-net / reference | "
                  "server CPU µs/req | context switches/req | req/s per round |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for name in (KAFKA_NET, REFERENCE):
            runs = sr.of(name)
            if not runs:
                continue
            ratio = f"**{sr.ratio():.2f}**" if name == KAFKA_NET else ""
            lines.append(
                f"| {name} | {_fmt_rate(sr.median(name, 'throughput'))} | "
                f"{sr.median(name, 'p50_ms'):.2f} | {sr.median(name, 'p99_ms'):.2f} | "
                f"{ratio} | {sr.median(name, 'cpu_us_per_request'):.0f} | "
                f"{sr.median(name, 'switches_per_request'):.1f} | "
                f"{', '.join(_fmt_rate(m.result.throughput) for m in runs)} |")
        checks = sum(m.result.received for m in sr.runs)
        bad = [m for m in sr.runs if not m.result.ok]
        lines += ["",
                  f"kafka-net / reference per round: "
                  f"{', '.join(f'{r:.2f}' for r in sr.round_ratios())} (the ratio column is "
                  f"their median). "
                  f"Checked {checks:,} responses: "
                  + ("every correlation id matched, no error, nothing unanswered."
                     if not bad else
                     "**PROBLEMS** " + "; ".join(
                         f"{m.server} round {m.round}: mismatches {m.result.mismatches}, "
                         f"errors {m.result.errors}, unanswered {m.result.unanswered}, "
                         f"disconnects {m.result.disconnects} {m.result.notes}"
                         for m in bad)),
                  ""]
    lines += ["### Reading these numbers", ""] + interpretation(results, context)
    return "\n".join(lines) + "\n"


def interpretation(results: list[ScenarioResult], context: dict) -> list[str]:
    met = [sr for sr in results if sr.ratio() >= TARGET_RATIO]
    ratios = ", ".join(f"{sr.scenario.connections}x{sr.scenario.depth}: {sr.ratio():.2f}"
                       for sr in results)
    out = [
        f"- Target (kafka-net >= {TARGET_RATIO} x the reference's req/s): "
        + (f"**met** in every scenario ({ratios})." if len(met) == len(results) else
           f"**not met** in {len(results) - len(met)} of {len(results)} scenarios "
           f"({ratios})."),
        "- Both servers are pure Python and run the same parse and encode code. Only one "
        "thread of kafka-net runs Python at a time (the GIL), so its 3 network and 8 "
        "handler threads share about one core; what the design adds per request is a "
        "hand-off Processor -> request queue -> handler -> response queue -> wake-up of "
        "the Processor's selector, a mute and an unmute of the connection (epoll "
        "changes), and a GIL hand-over at each of these steps. The reference does the "
        "same work on one thread with none of that.",
    ]
    costs = []
    for sr in results:
        k_cpu = sr.median(KAFKA_NET, "cpu_us_per_request")
        r_cpu = sr.median(REFERENCE, "cpu_us_per_request")
        if k_cpu > 0 and r_cpu > 0:
            costs.append(
                f"{sr.scenario.connections}x{sr.scenario.depth}: {k_cpu:.0f} µs against "
                f"{r_cpu:.0f} ({k_cpu / r_cpu:.1f}x), "
                f"{sr.median(KAFKA_NET, 'switches_per_request'):.1f} context switches per "
                f"request against {sr.median(REFERENCE, 'switches_per_request'):.1f}; "
                f"CPU-cost ratio {r_cpu / k_cpu:.2f}")
    if costs:
        out.append(
            "- Server CPU per request, kafka-net against the reference: "
            + "; ".join(costs) + ". The CPU-cost ratio (reference µs/req / kafka-net "
            "µs/req) is roughly the throughput ratio to expect if each server had one "
            "core to itself (kafka-net can go a little beyond one core, as its threads "
            "make system calls without holding the GIL). It does not depend on how much "
            "CPU a server got, but kafka-net's cost per request rises when the machine "
            "is busy (more GIL hand-overs and context switches), so it moves too.")
    cores = os.cpu_count() or 1
    before = context["load_start"]  # the end figure includes the benchmark itself
    out += [
        f"- The machine has {cores} cores, shared by the server under test, "
        f"the {context['workers']} load-generator processes and anything else running. "
        "Absolute req/s move a lot from run to run; compare the servers within a round "
        "(per-round ratios).",
    ]
    if before >= cores / 2:
        out.append(
            f"- **This run shared the machine with other work** (load average "
            f"{before:.1f} on {cores} cores before it started): both servers got less CPU than they could use, "
            "so req/s are low and both ratios are less reliable than on a quiet machine.")
    out.append("- Latency with pipelining is mostly queueing (Little's law: requests in "
               "flight / throughput; 256 in flight for 64x4).")
    return out


# --- main ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=4.0,
                        help="seconds measured per run (after --warmup)")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2, help="load generator processes")
    parser.add_argument("--group", action="append", choices=sorted(GROUPS),
                        help="run only this group (repeatable); default: all")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.duration <= 0 or args.warmup < 0 or args.workers < 1:
        parser.error("rounds >= 1, duration > 0, warmup >= 0, workers >= 1")
    groups = args.group or list(GROUPS)
    scenarios = [s for s in SCENARIOS if s.group in groups]
    command = " ".join(["python -m bench.run_all", *(argv if argv is not None else sys.argv[1:])])

    context = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command, "machine": machine_info(), "load_start": os.getloadavg()[0],
        "rounds": args.rounds, "duration": args.duration, "warmup": args.warmup,
        "workers": args.workers,
    }
    servers = make_servers()
    results = {id(s): ScenarioResult(s) for s in scenarios}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kafka-net-bench-") as tmp:
        try:
            for server in servers:
                server.start(Path(tmp))
                print(f"{server.name}: pid {server.proc.pid}, port {server.port}", flush=True)
            answers = {s.name: api_versions_answer(s.port) for s in servers}
            same = len(set(answers.values())) == 1
            context["preflight"] = (
                f"both servers gave the same ApiVersions v3 answer "
                f"({len(answers[KAFKA_NET])} bytes)." if same else
                "**the servers' ApiVersions answers differ** (" + ", ".join(
                    f"{k}: {len(v)} bytes" for k, v in answers.items()) + ").")
            if not same:
                problems.append("ApiVersions answers differ")
            for rnd in range(1, args.rounds + 1):
                order = servers if rnd % 2 else list(reversed(servers))
                for scenario in scenarios:
                    for server in order:
                        m = measure(server, scenario, rnd, args)
                        results[id(scenario)].runs.append(m)
                        r = m.result
                        print(f"round {rnd} {scenario.connections}x{scenario.depth} "
                              f"{server.name:9}: {r.throughput:9,.0f} req/s  p50 "
                              f"{r.p50_ms:7.2f} ms  p99 {r.p99_ms:7.2f} ms  server CPU "
                              f"{m.cpu_us_per_request:4.0f} us/req  "
                              f"{m.switches_per_request:5.1f} cs/req  "
                              f"{'ok' if r.ok else 'NOT OK ' + str(r.notes)}", flush=True)
                        if not r.ok:
                            problems.append(f"{server.name} round {rnd} {scenario.title}")
        except RuntimeError as exc:
            print(f"run_all: {exc}", file=sys.stderr)
            for server in servers:
                server.stop()
            return 2
        finally:
            for server in servers:
                code = server.stop()
                if code not in (0, None):
                    problems.append(f"{server.name} exited with {code}")
            logs = {s.name: s.log_text() for s in servers}
        context["load_end"] = os.getloadavg()[0]
    for name, text in logs.items():
        bad = [line for line in text.splitlines() if " WARNING " in line or " ERROR " in line]
        if bad:
            problems.append(f"{name} logged {len(bad)} warnings/errors, first: {bad[0]}")

    for group in groups:
        group_results = [results[id(s)] for s in scenarios if s.group == group]
        update_results(args.output, group, render_group(group, group_results, context))
    print(f"wrote {args.output}")
    for sr in results.values():
        print(f"{sr.scenario.connections}x{sr.scenario.depth}: kafka-net / reference = "
              f"{sr.ratio():.2f} (target >= {TARGET_RATIO})")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
