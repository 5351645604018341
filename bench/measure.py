"""What a run measures: the server process's CPU time and context switches around a
load run, the load run itself (kload's JSON line), and the statistics over rounds."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import ServerProcess, round_order


def cpu_seconds(server: ServerProcess) -> float:
    """User + system CPU of the whole process (every thread) so far."""
    t = server.ps.cpu_times()
    return t.user + t.system


def context_switches(server: ServerProcess) -> int:
    """Voluntary + involuntary context switches of all the server's threads so far
    (Linux; psutil's num_ctx_switches counts the main thread only).  0 elsewhere."""
    total = 0
    for task in Path(f"/proc/{server.proc.pid}/task").glob("*/status"):
        try:
            for line in task.read_text().splitlines():
                if "ctxt_switches:" in line:
                    total += int(line.split(":", 1)[1])
        except (OSError, ValueError):
            continue  # a thread that just ended
    return total


@dataclass
class Run:
    """One load run against one server: what the load generator saw and what the
    server spent.  ``result`` is the generator's own report (kload's JSON fields)."""
    server: str
    round: int
    result: dict
    server_cpu_s: float
    context_switches: int
    wall_s: float
    problems: list[str] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return int(self.result.get("measured", 0))

    @property
    def req_per_s(self) -> float:
        return float(self.result.get("req_per_s", 0.0))

    @property
    def p50_ms(self) -> float:
        return float(self.result.get("p50_us", float("nan"))) / 1e3

    @property
    def p99_ms(self) -> float:
        return float(self.result.get("p99_us", float("nan"))) / 1e3

    @property
    def all_responses(self) -> int:
        return int(self.result.get("responses", self.answered))

    @property
    def cpu_us_per_request(self) -> float:
        # The CPU window covers warm-up and drain too, so divide by every response.
        n = self.all_responses
        return self.server_cpu_s / n * 1e6 if n else float("nan")

    @property
    def switches_per_request(self) -> float:
        n = self.all_responses
        return self.context_switches / n if n else float("nan")

    @property
    def ok(self) -> bool:
        return not self.problems


KLOAD_PROBLEMS = ("mismatches", "errors", "malformed", "conn_errors", "unanswered",
                  "offset_regressions", "offset_overlaps")


def run_kload(kload: Path, server: ServerProcess, rnd: int, args: list[str],
              timeout: float) -> Run:
    """One kload run against ``server``; the server's CPU and switches around it."""
    argv = [str(kload), "--port", str(server.port), "--quiet", *args]
    cpu0, cs0, t0 = cpu_seconds(server), context_switches(server), time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        lines = proc.stdout.strip().splitlines()
        result = json.loads(lines[-1]) if lines else {}
        problems = [f"{k} {result[k]}" for k in KLOAD_PROBLEMS if result.get(k)]
        if proc.returncode != 0 or not lines:
            problems.append(f"kload exit code {proc.returncode} {proc.stderr.strip()[-200:]}"
                            .rstrip())
    except subprocess.TimeoutExpired:
        result, problems = {}, ["kload timed out"]
    cpu1, cs1, t1 = cpu_seconds(server), context_switches(server), time.monotonic()
    return Run(server.name, rnd, result, cpu1 - cpu0, cs1 - cs0, t1 - t0, problems)


def interleaved_kload(kload: Path, servers: list[ServerProcess], scenarios: dict, args,
                      problems: list[str]) -> dict[str, list[Run]]:
    """``args.rounds`` rounds; in each, every scenario (key -> (title, kload options))
    against every server, in the round's rotated order.  Each run printed as it ends,
    its problems added to ``problems``; the runs by scenario key."""
    runs: dict[str, list[Run]] = {k: [] for k in scenarios}
    width = max(len(s.name) for s in servers)
    for rnd in range(1, args.rounds + 1):
        for key, (_, kargs) in scenarios.items():
            for server in round_order(servers, rnd):
                r = run_kload(kload, server, rnd, [*kargs, "--duration", str(args.duration),
                                                   "--warmup", str(args.warmup)],
                              timeout=args.duration + args.warmup + 60)
                runs[key].append(r)
                print(f"round {rnd} {key:12} {server.name:{width}} {r.req_per_s:9,.0f} req/s  "
                      f"CPU {r.cpu_us_per_request:5.0f} us/req  "
                      f"{'ok' if r.ok else r.problems}", flush=True)
                problems += [f"{server.name} {key} round {rnd}: {p}" for p in r.problems]
    return runs


def median(values) -> float:
    values = [v for v in values if v == v]      # drop NaN
    return statistics.median(values) if values else float("nan")


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
