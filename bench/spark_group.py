"""Group ``spark``: the conformance job on one conversation captured twice
(``bench/spark_bench.py`` in a subprocess per run, under a timeout): session start and
job (``conformance.run`` plus the report files) timed apart; frames/s = frames / job
time; CPU seconds of the whole process tree (driver, JVM, Python workers) per frame
beside it, and the JVM's share.  Every row runs ``--spark-rounds`` times (3), a
round of all rows at a time: on a shared machine one run of a row can be a fifth
off the next, so the table shows each row's median run (by job time) and every
round's frames/s, and each ratio of the issue's targets is taken within each
round (rows side by side) and given as the median of the rounds, with their range.

The conversation (default, ``--spark-capture real``): real clients against
``kafka-net serve``, recorded by its capture (.kncap) and by tcpdump (one pcap) at once
(``bench/spark_capture.py``, made once and reused while its parameters hold).  Runs on
both inputs: in one process (no Spark), two such processes at once (each on the whole
input: what the machine gives two processes), ``local[1]``, ``local[2]`` and a standalone
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
import statistics
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

# Two copies of the in-process job at the same time, each on the whole input:
# what this machine gives two processes with nothing shared between them, the
# measure beside which `local[2]`'s target (1.8x one process) reads.
TWO_AT_ONCE = "in-process x2"
# (label, input, master: "standalone 2" for a loopback cluster of 2 workers)
# "in-process": the job with no Spark (as for a small input); "tshark": tshark
# -Y kafka over the same pcap files, for scale.
RUNS = (
    ("pcap", "pcap", "tshark"),
    ("kncap", "kncap", "in-process"),
    ("pcap", "pcap", "in-process"),
    ("kncap", "kncap", TWO_AT_ONCE),
    ("pcap", "pcap", TWO_AT_ONCE),
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
ROUNDS = 3


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
    rounds = []
    for number in range(max(1, getattr(args, "spark_rounds", ROUNDS))):
        rounds.append([])
        for label, kind, master in RUNS:
            rounds[-1].append(one_run(tmp, kind, master, source, frames, problems,
                                      number))
            rounds[-1][-1]["label"] = label
    same_report([r for runs in rounds for r in runs], problems)
    small = small_runs(tmp, problems)
    context["load_end"] = os.getloadavg()[0]
    return render(rounds, context, frames, small)


def median_run(runs: list[dict]) -> dict:
    """The run whose job time is the median of a row's finished runs (the lower
    middle one of an even number); the first run if none finished."""
    done = sorted((r for r in runs if "job_s" in r), key=lambda r: r["job_s"])
    return done[(len(done) - 1) // 2] if done else runs[0]


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
            problems: list[str], number: int = 0) -> dict:
    tag = master.replace(" ", "-").strip("local[]")
    copies = 2 if master == TWO_AT_ONCE else 1
    where = (["--standalone", master.split()[1]] if master.startswith("standalone")
             else ["--in-process"] if master in ("in-process", TWO_AT_ONCE)
             else ["--tshark"] if master == "tshark" else ["--master", master])
    argv = [sys.executable, "-m", "bench.spark_bench", *source, "--input", kind, *where]
    if master != "local[2]" or kind != "kncap" or number:
        argv += ["--profile-frames", "0"]   # the profile once, in the first round
    outs = [tmp / f"spark-{kind}-{tag}-{frames}-{number}-{i}.json" for i in range(copies)]
    print(f"spark (round {number + 1}): " + " ".join(argv[1:])
          + (f", {copies} at once" if copies > 1 else ""), flush=True)
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    running = [subprocess.Popen(argv + ["--json-out", str(out)], cwd=ROOT,
                                stdin=subprocess.DEVNULL) for out in outs]
    results = [_figures(proc, out) for proc, out in zip(running, outs)]
    result = results[0] if copies == 1 else _at_once(results)
    result["wall_s"] = time.monotonic() - t0
    result["load"] = load
    result["master"] = master
    result["input"] = kind
    if not result.get("ok"):
        problems += [f"spark ({kind}, {master}): {p}" for p in result.get("problems")
                     or ["not ok"]]
    return result


def _figures(proc: subprocess.Popen, out_json: Path) -> dict:
    """One spark_bench run's figures, once it has exited (killed after TIMEOUT)."""
    try:
        code = proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    try:
        return json.loads(out_json.read_text())
    except (OSError, ValueError):
        how = f"timed out after {TIMEOUT:.0f} s" if code is None else f"exited with {code}"
        return {"ok": False, "problems": [f"spark_bench {how} without writing its figures"]}


def _at_once(results: list[dict]) -> dict:
    """Copies of one in-process job run at the same time, as one row: their frames
    over the last one's job time, their CPU added up.  Each copy's report must
    have the same totals as the other rows' (the first copy's stand for it)."""
    bad = [p for r in results if not r.get("ok") for p in r.get("problems", ["not ok"])]
    if bad or any("job_s" not in r for r in results):
        return {"ok": False, "problems": bad or ["a copy did not finish"]}
    if any(r["report_totals"] != results[0]["report_totals"] for r in results):
        return {"ok": False, "problems": ["the copies' report totals differ"]}
    together = dict(results[0])
    frames = sum(r["report_totals"]["frames"] for r in results)
    together["copies"] = len(results)
    together["job_s"] = max(r["job_s"] for r in results)
    together["job_cpu_s"] = sum(r["job_cpu_s"] for r in results)
    kinds = results[0]["job_cpu_by_kind_s"]
    together["job_cpu_by_kind_s"] = {
        k: sum(r["job_cpu_by_kind_s"][k] for r in results) for k in kinds}
    together["frames_per_s"] = frames / together["job_s"]
    together["cpu_us_per_frame"] = together["job_cpu_s"] / frames * 1e6
    return together


def _split(r: dict) -> str:
    k = r.get("job_cpu_by_kind_s")
    if not k:
        return "-"
    return f"{k['jvm']:.1f} / {k['python_workers']:.1f} / {k['driver']:.1f}"


def _jvm_share(r: dict) -> str:
    k = r.get("job_cpu_by_kind_s")
    if not k or r["master"] in ("tshark", "in-process", TWO_AT_ONCE) or not r.get("job_cpu_s"):
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


# The targets as ratios of two rows of one round: (key, how it reads).
RATIOS = (
    ("tshark", "in one process {} tshark's CPU per frame"),
    ("rate2", "`local[2]` {} the in-process rate"),
    ("ceiling", "two in-process jobs at once {} the in-process rate (what two processes get "
                "from this machine)"),
    ("share", "`local[2]` {} the rate of two in-process jobs at once"),
    ("cpu1", "`local[1]` CPU {} the in-process CPU"),
    ("scale", "`local[1]` -> `local[2]` {}"),
    ("cluster", "standalone 2 workers {} `local[1]`"),
)


def _round_ratios(runs: list[dict]) -> dict:
    """{(input, ratio key): value} for the rows of one round."""
    by = {(r["input"], r["master"]): r for r in runs if "job_s" in r}
    tshark = by.get(("pcap", "tshark"))
    found = {}
    for kind in ("pcap", "kncap"):
        here, one, two, pair = (by.get((kind, m)) for m in
                                ("in-process", "local[1]", "local[2]", TWO_AT_ONCE))
        cluster = next((r for (i, m), r in by.items()
                        if i == kind and m.startswith("standalone")), None)
        pairs = {"tshark": (here, tshark, "cpu_us_per_frame"),
                 "rate2": (two, here, "frames_per_s"), "cpu1": (one, here, "job_cpu_s"),
                 "ceiling": (pair, here, "frames_per_s"), "share": (two, pair, "frames_per_s"),
                 "scale": (two, one, "frames_per_s"), "cluster": (cluster, one, "frames_per_s")}
        for key, (top, bottom, field) in pairs.items():
            if top and bottom and bottom[field]:
                found[(kind, key)] = top[field] / bottom[field]
    return found


def _spread(values: list[float]) -> str:
    """The median of the rounds' values, and their range where there are several."""
    middle = statistics.median_low(values)
    if len(values) == 1:
        return f"{middle:.2f}x"
    return f"{middle:.2f}x (rounds {min(values):.2f}-{max(values):.2f}x)"


def _ratios(rounds: list[list[dict]]) -> list[str]:
    """The issue's targets, each taken within each round (rows side by side): the
    median of the rounds and their range; the clusters' executors, every round."""
    found = [_round_ratios(runs) for runs in rounds]
    out = []
    for kind in ("pcap", "kncap"):
        said = [how.format(_spread(values)) for key, how in RATIOS
                if (values := [f[(kind, key)] for f in found if (kind, key) in f])]
        clusters = [r for runs in rounds for r in runs
                    if r["input"] == kind and r["master"].startswith("standalone")
                    and "job_s" in r]
        if clusters:
            said.append("standalone executors launched "
                        + ", ".join(str(c.get("executors_launched")) for c in clusters)
                        + f" in its {len(clusters)} runs, failures "
                        f"{sum(len(c.get('executor_failures', [])) for c in clusters)}, "
                        "cluster start " + ", ".join(f"{c.get('cluster_start_s', 0):.1f}"
                                                     for c in clusters) + " s, "
                        "executors registered after the session's start in "
                        + ", ".join(f"{c.get('executors_wait_s', 0):.1f}" for c in clusters)
                        + " s (not in the job's time)")
        if said:
            out += [f"{kind}: " + "; ".join(said) + ".", ""]
    return out


def render(rounds: list[list[dict]], context: dict, frames: int, small: list[dict]) -> str:
    runs_all = [r for runs in rounds for r in runs]
    version = next((r["spark_version"] for r in runs_all
                    if r.get("spark_version") not in (None, "none")), "?")
    lines = [f"## Conformance job on a {frames:,}-frame capture: one process, Spark local "
             "mode, a loopback standalone cluster, and tshark on the same pcap", ""]
    extra = [f"- Job: `python -m bench.spark_bench --capture real --input KIND "
             f"(--in-process | --master M | --standalone 2 | --tshark)` in a subprocess per "
             f"run, the rows in this order, {len(rounds)} rounds of all of them; Spark "
             f"{version}; driver and executors on this machine.  Each row: its median run "
             "by job time (its load average at the start), and every round's frames/s.  "
             "The job is timed once its session is up: the driver's JVM in local mode, and "
             "with it the cluster's executors, registered, for `standalone`."]
    lines += context_lines(context, extra + _describe_capture(context, runs_all, frames))
    rows = []
    for row_runs in zip(*rounds):
        r = median_run(list(row_runs))
        each = ", ".join(rate(x["frames_per_s"]) if "job_s" in x else "-" for x in row_runs)
        if "job_s" not in r:
            rows.append([r["label"], r.get("master", "?"), num(r.get("load", float("nan")), 1),
                         "-", "-", "-", each, "-", "-", "-",
                         "**did not finish: " + "; ".join(r.get("problems", [])) + "**"])
            continue
        t = r["report_totals"]
        bad = [p for x in row_runs if not x.get("ok") for p in x.get("problems", ["not ok"])]
        rows.append([r["label"], f"`{r['master']}`", num(r.get("load", float("nan")), 1),
                     (f"{r['copies']} × " if r.get("copies") else "") + f"{t['frames']:,}",
                     num(r["job_s"], 1), f"**{rate(r['frames_per_s'])}**",
                     each, num(r.get("cpu_us_per_frame", float("nan")), 1), _split(r),
                     _jvm_share(r),
                     ("same totals" if r["master"] != "tshark" else "not checked")
                     if not bad else "**" + "; ".join(bad) + "**"])
    lines += table(["input", "run", "load", "frames", "job s (wall)", "frames/s",
                    "frames/s, each round", "CPU µs/frame (all processes)",
                    "CPU s: JVM / Python workers / driver", "JVM share", "report"], rows,
                   right={2, 3, 4, 5, 6, 7, 8, 9})
    lines += _ratios(rounds)
    if small:
        lines += [f"Small input, the CLI end to end ({small[0]['frames']} frames, a fresh "
                  "process; read, checked and summarised in it, no JVM): " + "; ".join(
                      f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU s at load "
                      f"{r['load']:.1f}" + ("" if r["ok"] else " (FAILED)") for r in small)
                  + ".", ""]
    prof = next((r["profile"] for r in runs_all if r.get("profile")), None)
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
