"""Group ``spark``: the conformance job on one conversation captured twice
(``bench/spark_bench.py`` in a subprocess per run, under a timeout): session start and
job (``conformance.run`` plus the report files) timed apart; frames/s = frames / job
time; CPU seconds of the whole process tree (driver, JVM, Python workers) per frame
beside it, and the JVM's share.

The conversation (default, ``--spark-capture real``): real clients against
``kafka-net serve``, recorded by its capture (.kncap) and by tcpdump (one pcap) at once
(``bench/spark_capture.py``, made once and reused while its parameters hold).  Runs on
both inputs: in one process (no Spark), ``local[1]``, ``local[2]`` and a standalone
master with two 1-core workers on loopback (checked for lost executors); and
``tshark -Y kafka`` over the same pcap.  Every job's report must show the same totals
(frames, requests, pairs, connections, findings) on every row and both inputs.
``--spark-capture synthetic``: the generated conversation (``--spark-frames``).  Then
a small (800-frame) capture through the CLI (``python -m
kafka_net.spark_jobs.conformance``), three times, timed from the command's start to its
exit, as a user waits for it (under --in-process-below-mb: no JVM starts)."""

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
    ("pcap", "pcap", "standalone 2"),
)
# report.json totals every job row must share, whatever its input and master
SAME_TOTALS = ("frames", "connections", "requests", "pairs", "violations",
               "in_flight_at_end", "acks0_requests", "unverifiable_connections")
SMALL_RUNS = 3


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    frames = getattr(args, "spark_frames", FRAMES)
    real = getattr(args, "spark_capture", "real") == "real"
    source = (["--capture", "real", "--scale", str(getattr(args, "spark_scale", 1.0))]
              if real else ["--frames", str(frames)])
    if real:      # recorded (or found) once, before any row is timed
        from bench.spark_capture import real_capture
        manifest = real_capture(getattr(args, "spark_scale", 1.0))
        frames = manifest["kncap_frames"]
        context["capture"] = manifest
    results = []
    for label, kind, master in RUNS:
        results.append(one_run(tmp, kind, master, source, frames, problems))
        results[-1]["label"] = label
    same_report(results, problems)
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


def same_report(results: list[dict], problems: list[str]) -> None:
    """Every job row's report totals equal the first's: the same report to the frame,
    in one process or on Spark, from .kncap or from pcap."""
    jobs = [r for r in results if r.get("master") != "tshark" and "report_totals" in r]
    for r in jobs[1:]:
        diff = {k: (jobs[0]["report_totals"].get(k), r["report_totals"].get(k))
                for k in SAME_TOTALS
                if jobs[0]["report_totals"].get(k) != r["report_totals"].get(k)}
        if diff:
            problems.append(f"spark ({r['input']}, {r['master']}): report totals differ from "
                            f"({jobs[0]['input']}, {jobs[0]['master']}): {diff}")
            r["ok"] = False
            r.setdefault("problems", []).append(f"totals differ: {diff}")


def one_run(tmp: Path, kind: str, master: str, source: list[str], frames: int,
            problems: list[str]) -> dict:
    tag = master.replace(" ", "-").strip("local[]")
    out_json = tmp / f"spark-{kind}-{tag}-{frames}.json"
    where = (["--standalone", master.split()[1]] if master.startswith("standalone")
             else ["--in-process"] if master == "in-process"
             else ["--tshark"] if master == "tshark" else ["--master", master])
    argv = [sys.executable, "-m", "bench.spark_bench", *source,
            "--input", kind, *where, "--json-out", str(out_json)]
    if master != "local[2]" or kind != "kncap":
        argv += ["--profile-frames", "0"]   # the profile once, on the first row
    print("spark: " + " ".join(argv[1:]), flush=True)
    load = os.getloadavg()[0]
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
    result["load"] = load
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
    return f"{k['jvm']:.1f} / {k['python_workers']:.1f} / {k['driver']:.1f}"


def _jvm_share(r: dict) -> str:
    k = r.get("job_cpu_by_kind_s")
    if not k or r["master"] in ("tshark", "in-process") or not r.get("job_cpu_s"):
        return "-"
    return f"{k['jvm'] / r['job_cpu_s']:.0%}"


def _describe_capture(context: dict, results: list[dict], frames: int) -> list[str]:
    m = context.get("capture")
    if not m:
        cap = next((r["capture"] for r in results if r.get("capture")), None)
        if not cap:
            return []
        mix = ", ".join(f"{k} {v:,}" for k, v in sorted(cap["per_api"].items()))
        return [f"- Conversation (generated): {cap['pairs']:,} pairs ({mix}) over "
                f"{cap['connections']:,} connections; kncap: 2 Processors' rotated "
                "segments; pcap: one TCP connection per client in rotated 32 MiB files."]
    clients = ", ".join(f"{k} {v.get('sent', v.get('read', 0)):,}"
                        for k, v in sorted(m["workers"].items()))
    sizes = " / ".join(f"{b / 1e6:.0f}" for b in m.get("processor_bytes", []))
    return [f"- Conversation: real clients against `kafka-net serve` (capture.dir on, "
            f"{m.get('processors', '?')} Processors, their segments {sizes} MB), recorded at "
            f"once by its capture ({len(m['kncap'])} .kncap segments) and by `tcpdump -i lo "
            "--immediate-mode -U -B 524288` (real-time priority, to tmpfs; one pcap, "
            f"{m['pcap_bytes'] / 1e6:.0f} MB; tcpdump: "
            f"{'; '.join(m['tcpdump'][-1:])}): {frames:,} frames, made "
            f"{m['made_at']} by `python -m bench.spark_capture --scale {m['scale']:g}` "
            f"(key {m['key']}); messages sent or read per client process: {clients}."]


def _ratios(results: list[dict]) -> list[str]:
    """The issue's targets, as ratios of rows of this run."""
    by = {(r["input"], r["master"]): r for r in results if "job_s" in r}
    out = []
    tshark = by.get(("pcap", "tshark"))
    for kind in ("pcap", "kncap"):
        here, one, two = (by.get((kind, m)) for m in ("in-process", "local[1]", "local[2]"))
        cluster = next((r for (i, m), r in by.items()
                        if i == kind and m.startswith("standalone")), None)
        said = []
        if here and tshark:
            ratio = here["cpu_us_per_frame"] / tshark["cpu_us_per_frame"]
            said.append(f"in one process {ratio:.2f}x tshark's CPU per frame")
        if here and two:
            said.append(f"`local[2]` {two['frames_per_s'] / here['frames_per_s']:.2f}x the "
                        "in-process rate")
        if here and one:
            said.append(f"`local[1]` CPU {one['job_cpu_s'] / here['job_cpu_s']:.2f}x the "
                        "in-process CPU")
        if one and two:
            ratio = two["frames_per_s"] / one["frames_per_s"]
            said.append(f"`local[1]` -> `local[2]` {ratio:.2f}x")
        if cluster and one:
            ratio = cluster["frames_per_s"] / one["frames_per_s"]
            said.append(f"standalone 2 workers {ratio:.2f}x `local[1]` (executors launched "
                        f"{cluster.get('executors_launched')}, failures "
                        f"{len(cluster.get('executor_failures', []))}, cluster start "
                        f"{cluster.get('cluster_start_s', 0):.1f} s)")
        if said:
            out += [f"{kind}: " + "; ".join(said) + ".", ""]
    return out


def render(results: list[dict], context: dict, frames: int, small: list[dict]) -> str:
    version = next((r["spark_version"] for r in results
                    if r.get("spark_version") not in (None, "none")), "?")
    lines = [f"## Conformance job on a {frames:,}-frame capture: one process, Spark local "
             "mode, a loopback standalone cluster, and tshark on the same pcap", ""]
    extra = [f"- Job: `python -m bench.spark_bench --capture real --input KIND "
             f"(--in-process | --master M | --standalone 2 | --tshark)` in a subprocess per "
             f"row, in this order; Spark {version}; driver and executors on this machine "
             "(load average at each row's start in the table)."]
    lines += context_lines(context, extra + _describe_capture(context, results, frames))
    rows = []
    for r in results:
        if "job_s" not in r:
            rows.append([r["label"], r.get("master", "?"), num(r.get("load", float("nan")), 1),
                         "-", "-", "-", "-", "-", "-",
                         "**did not finish: " + "; ".join(r.get("problems", [])) + "**"])
            continue
        t = r["report_totals"]
        rows.append([r["label"], f"`{r['master']}`", num(r.get("load", float("nan")), 1),
                     f"{t['frames']:,}", num(r["job_s"], 1), f"**{rate(r['frames_per_s'])}**",
                     num(r.get("cpu_us_per_frame", float("nan")), 1), _split(r),
                     _jvm_share(r),
                     ("same totals" if r["master"] != "tshark" else "not checked")
                     if r.get("ok") else "**" + "; ".join(r["problems"]) + "**"])
    lines += table(["input", "run", "load", "frames", "job s (wall)", "frames/s",
                    "CPU µs/frame (all processes)", "CPU s: JVM / Python workers / driver",
                    "JVM share", "report"], rows, right={2, 3, 4, 5, 6, 7, 8})
    lines += _ratios(results)
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
