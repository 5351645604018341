"""Group ``spark``: the conformance job on generated captures (``bench/spark_bench.py``
in a subprocess per run, under a timeout): session start and job (``conformance.run``
plus the report files) timed apart; frames/s = frames / job time; CPU seconds of the
whole process tree (driver, JVM, Python workers) per frame beside it.

Runs: the 1,000,000-frame conversation as kafka-net captures on ``local[2]`` and on
``local[4]`` (does the job spread over more executor slots?), as pcap files on
``local[2]``, and a small (800-frame) capture on ``local[2]``, timed from the command's
start to its exit (JVM start included), as a user waits for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import ROOT
from bench.results import context_lines, num, rate, table

GROUP = "spark"
FRAMES = 1_000_000
SMALL_FRAMES = 800
TIMEOUT = 1500.0

# (label, input, master, frames or None for --spark-frames)
RUNS = (
    ("kncap", "kncap", "local[2]", None),
    ("pcap", "pcap", "local[2]", None),
    ("kncap", "kncap", "local[4]", None),
    ("small kncap", "kncap", "local[2]", SMALL_FRAMES),
)


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    frames = getattr(args, "spark_frames", FRAMES)
    results = []
    for label, kind, master, n in RUNS:
        n = n or frames
        results.append(one_run(tmp, kind, master, n, problems))
        results[-1]["label"] = label
    context["load_end"] = os.getloadavg()[0]
    return render(results, context, frames)


def one_run(tmp: Path, kind: str, master: str, frames: int, problems: list[str]) -> dict:
    out_json = tmp / f"spark-{kind}-{master.strip('local[]')}-{frames}.json"
    argv = [sys.executable, "-m", "bench.spark_bench", "--frames", str(frames),
            "--input", kind, "--master", master, "--json-out", str(out_json)]
    if frames < 10_000:
        argv += ["--profile-frames", "0", "--connections", "10"]
    print("spark: " + " ".join(argv[1:]), flush=True)
    t0 = time.monotonic()
    try:
        code = subprocess.run(argv, cwd=ROOT, stdin=subprocess.DEVNULL,
                              timeout=TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        code = None
    try:
        result = json.loads(out_json.read_text())
    except (OSError, ValueError):
        how = f"timed out after {TIMEOUT:.0f} s" if code is None else f"exited with {code}"
        result = {"ok": False, "problems": [f"spark_bench {how} without writing its figures"]}
    result["wall_s"] = time.monotonic() - t0
    result.setdefault("master", master)
    result["input"] = kind
    if not result.get("ok"):
        problems += [f"spark ({kind}, {master}): {p}" for p in result.get("problems")
                     or ["not ok"]]
    return result


def _split(r: dict) -> str:
    k = r.get("job_cpu_by_kind_s")
    if not k:
        return "-"
    return f"{k['jvm']:.0f} / {k['python_workers']:.0f} / {k['driver']:.0f}"


def render(results: list[dict], context: dict, frames: int) -> str:
    version = next((r["spark_version"] for r in results if "spark_version" in r), "?")
    lines = [f"## Conformance job on a {frames:,}-frame conversation, Spark local mode", ""]
    extra = [f"- Job: `python -m bench.spark_bench --frames N --input KIND --master M` in a "
             f"subprocess per row; Spark {version}; driver and executors on this machine."]
    cap = next((r["capture"] for r in results if r.get("capture")), None)
    if cap:
        mix = ", ".join(f"{k} {v:,}" for k, v in sorted(cap["per_api"].items()))
        extra.append(f"- Conversation: {cap['pairs']:,} pairs ({mix}) over "
                     f"{cap['connections']:,} connections; kncap: 2 Processors' rotated "
                     "segments; pcap: one TCP connection per client in rotated 32 MiB files.")
    lines += context_lines(context, extra)
    rows = []
    for r in results:
        if "job_s" not in r:
            rows.append([r["label"], r.get("master", "?"), "-", "-", "-", "-", "-", "-", "-",
                         "**did not finish: " + "; ".join(r.get("problems", [])) + "**"])
            continue
        t, c = r["report_totals"], r["capture"]
        rows.append([r["label"], f"`{r['master']}`", f"{t['frames']:,}", f"{c['files']}",
                     num(r["session_s"], 1), num(r["job_s"], 1),
                     f"**{rate(r['frames_per_s'])}**",
                     num(r.get("cpu_us_per_frame", float("nan")), 1), _split(r),
                     "as written" if r.get("ok") else "**" + "; ".join(r["problems"]) + "**"])
    lines += table(["input", "master", "frames", "files", "session start, s", "job, s",
                    "frames/s", "CPU µs/frame (all processes)",
                    "CPU s: JVM / Python workers / driver", "report checked"],
                   rows, right={2, 3, 4, 5, 6, 7, 8})
    small = next((r for r in results if r.get("label", "").startswith("small")), None)
    if small and "job_s" in small:
        lines += [f"Small input: {small['report_totals']['frames']:,} frames, JVM start plus "
                  f"job {small['session_s'] + small['job_s']:.1f} s "
                  f"(the whole command, Python start and capture writing included: "
                  f"{small['wall_s']:.1f} s).", ""]
    prof = next((r["profile"] for r in results if r.get("profile")), None)
    if prof:
        lines += ["Row functions alone, one process, "
                  f"{prof['frames_checked']:,} frames of the kncap input: file_units "
                  f"{prof['file_units_us_per_frame']:.1f} µs/frame, check_connection "
                  f"{prof['check_connection_us_per_frame']:.1f} µs/frame; "
                  "cProfile, top 6 by own time:", ""]
        lines += table(["function", "calls", "own µs/frame", "with callees µs/frame"],
                       [[f"`{row['function']}`", f"{row['calls']:,}",
                         num(row["tottime_us_per_frame"], 1),
                         num(row["cumtime_us_per_frame"], 1)]
                        for row in prof["top_tottime"][:6]], right={1, 2, 3})
    return "\n".join(lines) + "\n"
