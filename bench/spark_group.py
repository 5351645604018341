"""Group ``spark``: the conformance job on a generated capture, Spark local[2]
(``bench/spark_bench.py`` in a subprocess under a timeout): session start and job
(``conformance.run`` plus the report files) timed apart; frames/s = frames / job time."""

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
TIMEOUT = 1500.0


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    frames = getattr(args, "spark_frames", FRAMES)
    out_json = tmp / "spark.json"
    argv = [sys.executable, "-m", "bench.spark_bench", "--frames", str(frames),
            "--json-out", str(out_json)]
    print("spark: " + " ".join(argv[1:]), flush=True)
    t0 = time.monotonic()
    try:
        code = subprocess.run(argv, cwd=ROOT, stdin=subprocess.DEVNULL,
                              timeout=TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        code = None
    context["load_end"] = os.getloadavg()[0]
    try:
        result = json.loads(out_json.read_text())
    except (OSError, ValueError):
        how = f"timed out after {TIMEOUT:.0f} s" if code is None else f"exited with {code}"
        result = {"ok": False, "problems": [f"spark_bench {how} without writing its figures"]}
    result["wall_s"] = time.monotonic() - t0
    if not result.get("ok"):
        problems += [f"spark: {p}" for p in result.get("problems") or ["not ok"]]
    return render(result, context, frames)


def render(r: dict, context: dict, frames: int) -> str:
    cap = r.get("capture", {})
    lines = [f"## Conformance job on a {frames:,}-frame capture, Spark local[2]", ""]
    extra = [f"- Job: `python -m bench.spark_bench --frames {frames}` in a subprocess; "
             f"Spark {r.get('spark_version', '?')}, master `{r.get('master', 'local[2]')}`."]
    if cap:
        mix = ", ".join(f"{k} {v:,}" for k, v in sorted(cap["per_api"].items()))
        extra.append(
            f"- Capture: {cap['frames']:,} frames ({cap['pairs']:,} pairs: {mix}) over "
            f"{cap['connections']:,} connections, {cap['processors']} Processors, "
            f"{cap['files']} segment files, {cap['bytes'] / 1e6:.0f} MB; written in "
            f"{r.get('generate_s', 0):.1f} s.")
    lines += context_lines(context, extra)
    if "job_s" not in r:
        return "\n".join(lines + ["**The job did not finish**: "
                                  + "; ".join(r.get("problems", []))]) + "\n"
    t = r["report_totals"]
    lines += table(["frames", "session start, s", "job, s", "frames/s", "violations",
                    "report checked"],
                   [[f"{t['frames']:,}", num(r["session_s"], 1), num(r["job_s"], 1),
                     f"**{rate(r['frames_per_s'])}**", str(t["violations"]),
                     "as written" if r.get("ok") else "**" + "; ".join(r["problems"]) + "**"]],
                   right={0, 1, 2, 3, 4})
    prof = r.get("profile")
    if prof:
        lines += [f"Row functions alone, one process, {prof['frames_checked']:,} frames "
                  "(cProfile, top 6 by own time):", ""]
        lines += table(["function", "calls", "own µs/frame", "with callees µs/frame"],
                       [[f"`{row['function']}`", f"{row['calls']:,}",
                         num(row["tottime_us_per_frame"], 1),
                         num(row["cumtime_us_per_frame"], 1)]
                        for row in prof["top_tottime"][:6]], right={1, 2, 3})
    return "\n".join(lines) + "\n"
