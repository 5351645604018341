"""Group ``spark``: the conformance job on generated captures (``bench/spark_bench.py``
in a subprocess per run, under a timeout): session start and job (``conformance.run``
plus the report files) timed apart; frames/s = frames / job time; CPU seconds of the
whole process tree (driver, JVM, Python workers) per frame beside it.

Runs: the 1,000,000-frame conversation as kafka-net captures and as pcap files, each on
``local[2]`` and ``local[1]`` (does a second core help?), as kafka-net captures on a
standalone master with two 1-core workers on loopback (started by spark_bench, checked
for lost executors); and a small (800-frame) capture through the CLI
(``python -m kafka_net.spark_jobs.conformance``), three times, timed from the command's
start to its exit, as a user waits for it (under --in-process-below-mb: no JVM starts)."""

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

# (label, input, master: "standalone 2" for a loopback cluster of 2 workers)
# "in-process": the job with no Spark (as for a small input); "tshark": tshark
# -Y kafka over the same pcap files, for scale.
RUNS = (
    ("pcap", "pcap", "tshark"),
    ("kncap", "kncap", "in-process"),
    ("pcap", "pcap", "in-process"),
    ("kncap", "kncap", "local[2]"),
    ("pcap", "pcap", "local[2]"),
    ("kncap", "kncap", "local[1]"),
    ("pcap", "pcap", "local[1]"),
    ("kncap", "kncap", "standalone 2"),
)
SMALL_RUNS = 3


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    frames = getattr(args, "spark_frames", FRAMES)
    results = []
    for label, kind, master in RUNS:
        results.append(one_run(tmp, kind, master, frames, problems))
        results[-1]["label"] = label
    small = small_runs(tmp, problems)
    context["load_end"] = os.getloadavg()[0]
    return render(results, context, frames, small)


def small_runs(tmp: Path, problems: list[str]) -> list[dict]:
    """The CLI on an 800-frame capture, as a user runs it: wall time from the
    command's start to its exit, and the CPU of its process tree (psutil,
    sampled every 0.1 s: a JVM and workers, were any started, are gone at the
    exit).  The input is under --in-process-below-mb: no JVM starts."""
    import psutil
    from bench.spark_bench import generate
    caps = tmp / "small-captures"
    written = generate(str(caps), SMALL_FRAMES, 10)
    out = []
    for i in range(SMALL_RUNS):
        argv = [sys.executable, "-m", "kafka_net.spark_jobs.conformance", str(caps),
                "--out", str(tmp / f"small-out-{i}")]
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen: dict[int, float] = {}
        top = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                for p in [top] + top.children(recursive=True):
                    t = p.cpu_times()
                    seen[p.pid] = t.user + t.system
            except psutil.Error:
                pass
            time.sleep(0.1)
        wall = time.monotonic() - t0
        verdict = proc.stdout.read().decode(errors="replace")   # the verdict line
        err = proc.stderr.read().decode(errors="replace")
        ok = proc.returncode == 0 and f"of {written['frames']} frames" in verdict
        if not ok:
            problems.append(f"spark small run {i}: exit {proc.returncode}: {err[-300:]}")
        out.append({"wall_s": wall, "cpu_s": sum(seen.values()), "load": load, "ok": ok,
                    "frames": written["frames"]})
        print(f"spark: small run {i}: {wall:.1f} s wall, {out[-1]['cpu_s']:.1f} CPU s, "
              f"load {load:.1f}", flush=True)
    return out


def one_run(tmp: Path, kind: str, master: str, frames: int, problems: list[str]) -> dict:
    tag = master.replace(" ", "-").strip("local[]")
    out_json = tmp / f"spark-{kind}-{tag}-{frames}.json"
    where = (["--standalone", master.split()[1]] if master.startswith("standalone")
             else ["--in-process"] if master == "in-process"
             else ["--tshark"] if master == "tshark" else ["--master", master])
    argv = [sys.executable, "-m", "bench.spark_bench", "--frames", str(frames),
            "--input", kind, *where, "--json-out", str(out_json)]
    if master != "local[2]" or kind != "kncap":
        argv += ["--profile-frames", "0"]   # the profile once, on the first row
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
    result["master"] = master
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


def render(results: list[dict], context: dict, frames: int, small: list[dict]) -> str:
    version = next((r["spark_version"] for r in results if "spark_version" in r), "?")
    lines = [f"## Conformance job on a {frames:,}-frame conversation, Spark local mode "
             "and a loopback standalone cluster", ""]
    extra = [f"- Job: `python -m bench.spark_bench --frames N --input KIND --master M` (or "
             f"`--standalone 2`) in a subprocess per row; Spark {version}; driver and "
             "executors on this machine, shared with other engineers' work (load average "
             "above)."]
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
    by = {(r["input"], r["master"]): r for r in results if "job_s" in r}
    for kind in ("kncap", "pcap"):
        one, two = by.get((kind, "local[1]")), by.get((kind, "local[2]"))
        here = by.get((kind, "in-process"))
        if one and two:
            lines += [f"{kind}: local[1] -> local[2] speed-up {one['job_s'] / two['job_s']:.2f}x "
                      f"(job seconds {one['job_s']:.1f} / {two['job_s']:.1f}).", ""]
        if here and two and one:
            jvm = two["job_cpu_by_kind_s"]["jvm"] / two["job_cpu_s"]
            lines += [f"{kind}: local[2] {here['job_s'] / two['job_s']:.2f}x the in-process "
                      f"rate; local[1] CPU {one['job_cpu_s'] / here['job_cpu_s']:.2f}x the "
                      f"in-process CPU; JVM {jvm:.0%} of local[2]'s CPU.", ""]
    cluster, local = by.get(("kncap", "standalone 2")), by.get(("kncap", "local[2]"))
    if cluster and local:
        lines += [f"Standalone, 2 workers x 1 core: job {cluster['job_s']:.1f} s against "
                  f"local[2] {local['job_s']:.1f} s ({local['job_s'] / cluster['job_s']:.2f}x "
                  f"local[2]'s rate); cluster start {cluster.get('cluster_start_s', 0):.1f} s; "
                  f"executors launched {cluster.get('executors_launched')}, failures "
                  f"{len(cluster.get('executor_failures', []))}.", ""]
    if small:
        lines += [f"Small input, the CLI end to end ({small[0]['frames']} frames, a fresh "
                  "process; read, checked and summarised in it, no JVM): " + "; ".join(
                      f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU s at load "
                      f"{r['load']:.1f}" + ("" if r["ok"] else " (FAILED)") for r in small)
                  + ".", ""]
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
