"""Group ``capture`` (issue 4): kafka-net with ``--capture-dir`` beside kafka-net without,
both on their defaults, driven by kload, interleaved.  Target: throughput with capture
less than 15% lower.  When it is missed, ``bench/capture_profile.py`` runs on the
scenario furthest from it and its table joins the section.  Afterwards every capture
file is read back: one request record per response record, at least one per answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench import harness
from bench.capture_profile import table as profile_table
from bench.harness import ROOT
from bench.measure import Run, interleaved_kload, median
from bench.results import context_lines, num, rate, table
from kafka_net.capture.format import REQUEST
from kafka_net.capture.reader import kncap_columns

GROUP = "capture"
TARGET = 0.15
CAPTURING, PLAIN = "kafka-net+capture", "kafka-net"
SCENARIOS = {
    "apiversions": ("ApiVersions v0, 16 connections, 1 in flight",
                    ("--api", "apiversions", "--conns", "16", "--pipeline", "1")),
    "produce": ("Produce v3 (10 x 100 B records), 8 connections, 4 in flight",
                ("--api", "produce", "--topic", "bench", "--batch", "10", "--size", "100",
                 "--conns", "8", "--pipeline", "4")),
}


def read_capture(directory: Path) -> dict:
    """What the capture files hold: files, bytes, records by direction, problems."""
    files = sorted(directory.glob("*.kncap"))
    requests = responses = 0
    problems: list[str] = []
    for path in files:
        columns, found = kncap_columns(str(path), path.read_bytes())
        problems += [f"{path.name}: {p}" for p in found]
        for direction in columns["direction"]:
            if direction == REQUEST:
                requests += 1
            else:
                responses += 1
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files),
            "requests": requests, "responses": responses, "problems": problems}


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    kload = harness.build_kload()
    capture_dir = tmp / "captures"
    servers = [harness.kafka_net(CAPTURING, extra=("--capture-dir", str(capture_dir))),
               harness.kafka_net(PLAIN)]
    with harness.serving(servers, tmp / GROUP, problems):
        for server in servers:
            harness.create_topic(server.port, "bench", 1)
        runs = interleaved_kload(kload, servers, SCENARIOS, args, problems)
    context["load_end"] = os.getloadavg()[0]
    captured = read_capture(capture_dir)
    answered = sum(r.all_responses for rs in runs.values() for r in rs if r.server == CAPTURING)
    if captured["problems"]:
        problems.append(f"capture files: {captured['problems'][:3]}")
    if captured["requests"] != captured["responses"] or captured["requests"] < answered:
        problems.append(f"capture holds {captured['requests']} requests and "
                        f"{captured['responses']} responses; kload got {answered} answers")
    ratios = {k: round_ratios(rs) for k, rs in runs.items()}
    missed = [k for k, rr in ratios.items() if 1 - median(rr) >= TARGET]
    breakdown = None
    if missed:
        breakdown = profile(min(missed, key=lambda k: median(ratios[k])), problems)
    return render(runs, ratios, captured, answered, context, breakdown)


def round_ratios(rs: list[Run]) -> list[float]:
    base = {r.round: r.req_per_s for r in rs if r.server == PLAIN}
    return [r.req_per_s / base[r.round] for r in rs
            if r.server == CAPTURING and base.get(r.round)]


def profile(api: str, problems: list[str]) -> dict | None:
    argv = [sys.executable, "-m", "bench.capture_profile", "--api", api, "--json"]
    print("capture: the target was missed; " + " ".join(argv[1:]), flush=True)
    try:
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, ValueError) as exc:
        problems.append(f"capture breakdown failed: {type(exc).__name__}: {exc}")
        return None
    result["command"] = f"python -m bench.capture_profile --api {api}"
    return result


def render(runs: dict[str, list[Run]], ratios: dict[str, list[float]], captured: dict,
           answered: int, context: dict, breakdown: dict | None) -> str:
    lines = ["## Wire capture: kafka-net with and without capture.dir", ""]
    lines += context_lines(context, [
        f"- Servers: `python -m kafka_net serve` on its defaults; `{CAPTURING}` adds "
        "`--capture-dir DIR`. Load: kload, "
        f"{context['rounds']} rounds, order alternating, {context['warmup']:g} s warm-up "
        f"then {context['duration']:g} s measured."])
    rows = []
    for key, (title, _) in SCENARIOS.items():
        for name in (CAPTURING, PLAIN):
            rs = [r for r in runs[key] if r.server == name]
            rows.append([title, name, rate(median(r.req_per_s for r in rs)),
                         num(median(r.cpu_us_per_request for r in rs)),
                         num(median(r.p99_ms for r in rs), 1),
                         f"**{num(1 - median(ratios[key]), 2)}** "
                         f"({', '.join(f'{1 - x:.2f}' for x in ratios[key])})"
                         if name == CAPTURING else ""])
    lines += table(["scenario", "server", "req/s", "server CPU µs/req", "p99 ms",
                    f"throughput lost (per round); target < {TARGET}"], rows,
                   right={2, 3, 4})
    lines.append(
        f"Capture over the whole run: {captured['requests']:,} request and "
        f"{captured['responses']:,} response records in {captured['files']} file(s), "
        f"{captured['bytes'] / 1e6:.1f} MB, {answered:,} answers counted by kload; problems "
        f"reading them back: {captured['problems'][:3] or 'none'}.")
    if breakdown:
        lines += ["", f"### Where the cost goes: `{breakdown['command']}`", ""]
        lines += profile_table(breakdown)
    return "\n".join(lines) + "\n"
