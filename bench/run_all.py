"""Run every benchmark group against kafka-net and its yardsticks; write RESULTS.md.

``python -m bench.run_all`` (what ``make bench`` runs) runs every group;
``--group NAME`` (repeatable) runs only those.  Groups:

* ``apiversions``: ApiVersions through the load generator, kafka-net beside
  the single-threaded reference server (``bench/reference_server.py``);
* ``produce``: Produce requests/s from the load generator, then confluent-kafka
  producer and consumer throughput (200,000 messages of 100 bytes, one
  client process, ``bench/clients.py``), kafka-net beside the reference;
* ``capture``: kafka-net with ``--capture-dir`` beside kafka-net without it
  (ApiVersions and Produce): the cost of wire captures;
* ``spark``: the conformance job on a generated 1,000,000-frame capture with
  Spark local[2] (``bench/spark_bench.py``).

For the server groups:

1. start the group's two servers as subprocesses (``python -m kafka_net
   serve`` on its defaults but an ephemeral loopback port; ``python -m
   bench.reference_server``; kafka-net again with ``--capture-dir``);
2. preflight: both must give the same ApiVersions answer, byte for byte,
   and create the group's topics;
3. run every scenario against both, interleaved in one run: round 1 goes
   first server then second, round 2 the other way round, and so on, so
   drift in the machine's load hits both alike; each figure is the median
   over the rounds, each ratio the median of the per-round ratios;
4. stop both with SIGTERM and check they exit cleanly and logged no warning;
5. rewrite, in ``bench/RESULTS.md``, the section of each group that ran
   (between ``<!-- bench:NAME begin -->`` and ``<!-- bench:NAME end -->``)
   and keep every other section as it is.

Adding a benchmark: add its scenarios to :data:`SCENARIOS` (and a
:class:`Group` to :data:`GROUPS` plus a runner in :data:`RUNNERS` for a new
section).  The reference server uses kafka-net's own ``KafkaApis``,
``ReplicaManager`` and ``GroupCoordinator``, so it serves every API kafka-net
serves.

Everything is bounded: each load run has a duration and a hard timeout, each
client process and the Spark job a timeout, each server start and stop a
timeout.  Exit code 0 when every run was clean (no correlation mismatch, no
error, nothing unanswered, every message delivered and read back, the Spark
report as expected), 1 otherwise, 2 when a server did not start or a group
could not be set up.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
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

from bench.capture_profile import table as capture_profile_table
from bench.loadgen import APIS, DEFAULT_TOPIC, PRODUCE_ACKS, LoadResult, LoadSpec, run_load
from kafka_net.capture.format import REQUEST, decode_segment
from kafka_net.protocol.codec import decode_response, encode_request

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
TARGET_RATIO = 0.5
CAPTURE_TARGET = 0.15              # issue 4: capture costs under 15% of throughput
KAFKA_NET, REFERENCE, CAPTURING = "kafka-net", "reference", "kafka-net+capture"
TOPIC_PARTITIONS = 4               # of every topic the groups create
CLIENT_MESSAGES, CLIENT_SIZE = 200_000, 100
CLIENT_TIMEOUT = 120.0
SPARK_FRAMES = 1_000_000
SPARK_TIMEOUT = 1500.0
SPARK_SLOW_S = 300.0               # beyond this the job is called slow


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
    # The two servers compared, the subject first: ratios are subject / baseline.
    servers: tuple[str, ...] = (KAFKA_NET, REFERENCE)


GROUPS: dict[str, Group] = {
    "apiversions": Group(
        title="ApiVersions: kafka-net beside the single-threaded reference",
        intro=("ApiVersions v3 requests (flexible, with client software name and "
               "version), answered by the same `KafkaApis` in both servers, so only the "
               "threading and network architecture differs. Target for the design: "
               f"kafka-net at least {TARGET_RATIO:.0%} of the reference's throughput."),
    ),
    "produce": Group(
        title="Produce and consume: kafka-net beside the single-threaded reference",
        intro=("Produce requests from the load generator, then a real client: "
               f"confluent-kafka (librdkafka) producing {CLIENT_MESSAGES:,} messages of "
               f"{CLIENT_SIZE} bytes from one client process and one consumer reading them "
               "back. Both servers run kafka-net's `KafkaApis`, `ReplicaManager` (in-memory "
               "logs, fetch purgatory) and `GroupCoordinator`; only the threading and "
               "network architecture differs."),
    ),
    "capture": Group(
        title="Wire capture: kafka-net with and without capture.dir",
        intro=("The same kafka-net twice, once with `--capture-dir` (every request and "
               "response frame written to the Processors' capture files) and once without, "
               "interleaved in one run. Target (issue 4): throughput with capture less than "
               f"{CAPTURE_TARGET:.0%} lower than without."),
        servers=(CAPTURING, KAFKA_NET),
    ),
    "spark": Group(
        title="Conformance job: frames per second on a 1,000,000-frame capture, Spark local[2]",
        intro=("`spark_jobs.conformance.run` plus the report files, end to end as the CLI "
               "runs them once its Spark session exists, on a kafka-net capture written by "
               "`bench/spark_bench.py`: real request and response frames of five APIs, over "
               "many connections, in rotated segment files of two Processors."),
        servers=(),
    ),
}

SCENARIOS: list[Scenario] = [
    Scenario("apiversions", "16 connections, 1 request in flight each (no pipelining)", 16, 1),
    Scenario("apiversions", "64 connections, 4 requests in flight each", 64, 4),
    Scenario("produce", "Load generator: Produce v9 acks=1, 16 connections, 1 request in "
             "flight each", 16, 1, api="produce"),
    Scenario("capture", "ApiVersions v3, 16 connections, 1 request in flight each", 16, 1),
    Scenario("capture", "Produce v9 acks=1, 16 connections, 1 request in flight each", 16, 1,
             api="produce"),
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


def server_process(name: str, capture_dir: Path | None = None) -> ServerProcess:
    py = sys.executable
    if name == REFERENCE:
        return ServerProcess(REFERENCE, [py, "-m", "bench.reference_server", "--port", "0"],
                             re.compile(r"listening on 127\.0\.0\.1:(\d+)"))
    argv = [py, "-m", "kafka_net", "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0"]
    if capture_dir is not None:
        argv += ["--capture-dir", str(capture_dir)]
    return ServerProcess(name, argv,
                         re.compile(r"listening on PLAINTEXT://127\.0\.0\.1:(\d+)"))


def make_servers() -> list[ServerProcess]:
    return [server_process(KAFKA_NET), server_process(REFERENCE)]


@contextlib.contextmanager
def serving(servers: list[ServerProcess], log_dir: Path, problems: list[str]):
    """Start the servers (RuntimeError if one does not); on the way out stop them and
    add to ``problems`` an unclean exit or any warning or error they logged."""
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        for server in servers:
            server.start(log_dir)
            print(f"{server.name}: pid {server.proc.pid}, port {server.port}", flush=True)
        yield servers
    finally:
        for server in servers:
            code = server.stop()
            if code not in (0, None):
                problems.append(f"{server.name} exited with {code}")
        for server in servers:
            bad = [line for line in server.log_text().splitlines()
                   if " WARNING " in line or " ERROR " in line]
            if bad:
                problems.append(f"{server.name} logged {len(bad)} warnings/errors, "
                                f"first: {bad[0]}")


def _exchange(port: int, frame: bytes, timeout: float) -> bytes:
    """Send one request frame, return the raw response frame (size prefix included)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed before answering")
            data += chunk
        return data


def api_versions_answer(port: int, timeout: float = 10.0) -> bytes:
    """The raw response frame to one ApiVersions v3 request (correlation id 7)."""
    api_key, version, body = APIS["apiversions"]
    return _exchange(port, encode_request(api_key, version, 7, body,
                                          client_id="kafka-net-bench"), timeout)


def kafka_call(port: int, api_key: int, version: int, body: dict,
               timeout: float = 10.0) -> dict:
    """One request on a fresh connection; the decoded response body."""
    frame = _exchange(port, encode_request(api_key, version, 7, body,
                                           client_id="kafka-net-bench"), timeout)
    return decode_response(api_key, version, frame[4:])[1]


def create_topic(port: int, name: str, partitions: int) -> None:
    """CreateTopics v7; RuntimeError unless the topic was created."""
    answer = kafka_call(port, 19, 7, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout_ms": 10000, "validate_only": False})
    code = answer["topics"][0]["error_code"]
    if code != 0:
        raise RuntimeError(f"CreateTopics {name} on port {port} answered error code {code}")


def preflight(servers: list[ServerProcess], problems: list[str]) -> str:
    answers = {s.name: api_versions_answer(s.port) for s in servers}
    if len(set(answers.values())) == 1:
        return (f"both servers gave the same ApiVersions v3 answer "
                f"({len(answers[servers[0].name])} bytes).")
    problems.append("ApiVersions answers differ")
    return ("**the servers' ApiVersions answers differ** (" + ", ".join(
        f"{k}: {len(v)} bytes" for k, v in answers.items()) + ").")


# --- one load-generator run --------------------------------------------------------------


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
    subject: str = KAFKA_NET
    baseline: str = REFERENCE

    def of(self, server: str) -> list[Measurement]:
        return sorted((m for m in self.runs if m.server == server), key=lambda m: m.round)

    def median(self, server: str, attr: str) -> float:
        values = [getattr(m.result, attr) if hasattr(m.result, attr) else getattr(m, attr)
                  for m in self.of(server)]
        return statistics.median(values) if values else float("nan")

    def ratio(self) -> float:
        """Median over rounds of subject req/s / baseline req/s in the same round:
        the two runs of a round are back to back, so they share the machine's mood."""
        ratios = self.round_ratios()
        return statistics.median(ratios) if ratios else float("nan")

    def round_ratios(self) -> list[float]:
        base = {m.round: m.result.throughput for m in self.of(self.baseline)}
        return [m.result.throughput / base[m.round] for m in self.of(self.subject)
                if base.get(m.round)]

    def clean(self) -> bool:
        return all(m.result.ok for m in self.runs)


def measure(server: ServerProcess, scenario: Scenario, rnd: int, args) -> Measurement:
    spec = LoadSpec(port=server.port, connections=scenario.connections, depth=scenario.depth,
                    duration=args.duration, warmup=args.warmup, api=scenario.api,
                    workers=args.workers, timeout=args.warmup + args.duration + 60,
                    topic=DEFAULT_TOPIC, partitions=TOPIC_PARTITIONS)
    cpu0, cs0, t0 = server.cpu_seconds(), server.context_switches(), time.monotonic()
    result = run_load(spec)
    cpu1, cs1, t1 = server.cpu_seconds(), server.context_switches(), time.monotonic()
    return Measurement(server.name, rnd, result, cpu1 - cpu0, cs1 - cs0, t1 - t0)


def run_scenario(server: ServerProcess, sr: ScenarioResult, rnd: int, args,
                 problems: list[str]) -> None:
    scenario = sr.scenario
    m = measure(server, scenario, rnd, args)
    sr.runs.append(m)
    r = m.result
    print(f"round {rnd} {scenario.api} {scenario.connections}x{scenario.depth} "
          f"{server.name:17}: {r.throughput:9,.0f} req/s  p50 "
          f"{r.p50_ms:7.2f} ms  p99 {r.p99_ms:7.2f} ms  server CPU "
          f"{m.cpu_us_per_request:4.0f} us/req  "
          f"{m.switches_per_request:5.1f} cs/req  "
          f"{'ok' if r.ok else 'NOT OK ' + str(r.notes)}", flush=True)
    if not r.ok:
        problems.append(f"{server.name} round {rnd} {scenario.title}")


def round_order(servers: list, rnd: int) -> list:
    return servers if rnd % 2 else list(reversed(servers))


# --- one client run (confluent-kafka, in its own process) ---------------------------------


@dataclass
class ClientRun:
    server: str
    round: int
    mode: str                  # "produce" or "consume"
    result: dict               # what bench.clients printed
    server_cpu_s: float

    @property
    def ok(self) -> bool:
        return bool(self.result.get("ok"))

    @property
    def seconds(self) -> float:
        return self.result.get("seconds") or float("nan")

    @property
    def messages_per_s(self) -> float:
        return self.result["messages"] / self.seconds if self.ok and self.seconds else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.messages_per_s * self.result.get("size", 0) / 1e6

    @property
    def cpu_us_per_message(self) -> float:
        n = self.result.get("messages") or 0
        return self.server_cpu_s / n * 1e6 if n else 0.0


def client_run(server: ServerProcess, mode: str, topic: str, rnd: int, messages: int,
               problems: list[str]) -> ClientRun:
    argv = [sys.executable, "-m", "bench.clients", mode, "--bootstrap",
            f"127.0.0.1:{server.port}", "--topic", topic, "--messages", str(messages),
            "--size", str(CLIENT_SIZE), "--timeout", str(CLIENT_TIMEOUT)]
    cpu0 = server.cpu_seconds()
    try:
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                              timeout=CLIENT_TIMEOUT + 30)
        try:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            result = {"ok": False, "first_error": f"exit code {proc.returncode}: "
                                                  f"{proc.stderr.strip()[-300:]}"}
    except subprocess.TimeoutExpired:
        result = {"ok": False, "first_error": "the client process timed out"}
    run = ClientRun(server.name, rnd, mode, result, server.cpu_seconds() - cpu0)
    print(f"round {rnd} confluent {mode:8} {server.name:17}: "
          f"{run.messages_per_s:9,.0f} msg/s  {run.mb_per_s:6.1f} MB/s  "
          f"{run.seconds:6.2f} s  server CPU {run.cpu_us_per_message:5.1f} us/msg  "
          f"{'ok' if run.ok else 'NOT OK ' + str(result.get('first_error'))}", flush=True)
    if not run.ok:
        problems.append(f"confluent-kafka {mode} against {server.name} round {rnd}: "
                        f"{result.get('first_error')}")
    return run


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


def _median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def context_lines(context: dict, servers_line: str | None, load_line: str | None,
                  preflight_line: bool = True, extra: list[str] = ()) -> list[str]:
    m = context["machine"]
    lines = [
        f"- Date: {context['date']}",
        f"- Command: `{context['command']}`",
        f"- Machine: {m['cpus']}; {m['os']}; {m['python']}",
        f"- Load average (1 min) before / after the run: {context['load_start']:.2f} / "
        f"{context['load_end']:.2f} (the second includes the benchmark's own processes)",
    ]
    if servers_line:
        lines.append(servers_line)
    if load_line:
        lines.append(load_line)
    if preflight_line:
        lines.append(f"- Preflight: {context['preflight']}")
    return lines + list(extra) + [""]


KAFKA_NET_LINE = ("- kafka-net: `python -m kafka_net serve` on its defaults "
                  "(num.network.threads=3, num.io.threads=8, queued.max.requests=500), "
                  "loopback, ephemeral port. Reference: `python -m bench.reference_server` "
                  "(one thread, same `KafkaApis`).")


def loadgen_line(context: dict) -> str:
    return (f"- Load: `bench/loadgen.py`, {context['workers']} worker processes, "
            f"{context['warmup']:g} s warm-up then {context['duration']:g} s measured per run; "
            f"{context['rounds']} rounds, servers alternating order each round; req/s and "
            f"latencies are medians over the rounds.")


def loadgen_table(sr: ScenarioResult, title: str | None = None) -> list[str]:
    subject, baseline = sr.subject, sr.baseline
    label = f"{subject} / {baseline}"
    lines = [f"### {title or sr.scenario.title}", "",
             f"| server | req/s | p50 ms | p99 ms | {label} | "
             "server CPU µs/req | context switches/req | req/s per round |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name in (subject, baseline):
        runs = sr.of(name)
        if not runs:
            continue
        ratio = f"**{sr.ratio():.2f}**" if name == subject else ""
        lines.append(
            f"| {name} | {_fmt_rate(sr.median(name, 'throughput'))} | "
            f"{sr.median(name, 'p50_ms'):.2f} | {sr.median(name, 'p99_ms'):.2f} | "
            f"{ratio} | {sr.median(name, 'cpu_us_per_request'):.0f} | "
            f"{sr.median(name, 'switches_per_request'):.1f} | "
            f"{', '.join(_fmt_rate(m.result.throughput) for m in runs)} |")
    checks = sum(m.result.received for m in sr.runs)
    bad = [m for m in sr.runs if not m.result.ok]
    lines += ["",
              f"{label} per round: "
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
    return lines


def render_group(group: str, results: list[ScenarioResult], context: dict) -> str:
    """The apiversions section."""
    g = GROUPS[group]
    lines = [f"## {g.title}", "", g.intro, ""]
    lines += context_lines(context, KAFKA_NET_LINE, loadgen_line(context))
    for sr in results:
        lines += loadgen_table(sr)
    lines += ["### Reading these numbers", ""] + interpretation(results, context)
    return "\n".join(lines) + "\n"


def _busy_machine_line(context: dict, who: str = "the servers got less CPU than they "
                                                   "could use") -> list[str]:
    cores = os.cpu_count() or 1
    before = context["load_start"]  # the end figure includes the benchmark itself
    if before < cores / 2:
        return []
    return [f"- **This run shared the machine with other work** (load average "
            f"{before:.1f} on {cores} cores before it started): {who}, so rates are low and "
            "ratios are less reliable than on a quiet machine."]


def _cpu_costs(results: list[ScenarioResult]) -> list[str]:
    costs = []
    for sr in results:
        k_cpu = sr.median(sr.subject, "cpu_us_per_request")
        r_cpu = sr.median(sr.baseline, "cpu_us_per_request")
        if k_cpu > 0 and r_cpu > 0:
            costs.append(
                f"{sr.scenario.connections}x{sr.scenario.depth}: {k_cpu:.0f} µs against "
                f"{r_cpu:.0f} ({k_cpu / r_cpu:.1f}x), "
                f"{sr.median(sr.subject, 'switches_per_request'):.1f} context switches per "
                f"request against {sr.median(sr.baseline, 'switches_per_request'):.1f}; "
                f"CPU-cost ratio {r_cpu / k_cpu:.2f}")
    return costs


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
        "the Processor's selector (coalesced: one byte for a burst of responses), a mute "
        "and an unmute of the connection (state changes; epoll is touched only when a "
        "muted client pipelines), and a GIL hand-over at each hand-off: most of the "
        "context switches per request in the table. The reference does the same work "
        "on one thread with none of that.",
    ]
    costs = _cpu_costs(results)
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
    out += [
        f"- The machine has {cores} cores, shared by the server under test, "
        f"the {context['workers']} load-generator processes and anything else running. "
        "Absolute req/s move a lot from run to run; compare the servers within a round "
        "(per-round ratios).",
    ]
    out += _busy_machine_line(context)
    out.append("- Latency with pipelining is mostly queueing (Little's law: requests in "
               "flight / throughput; 256 in flight for 64x4).")
    return out


# --- group: apiversions ------------------------------------------------------------------


def _scenario_results(group: str) -> list[ScenarioResult]:
    subject, baseline = GROUPS[group].servers
    return [ScenarioResult(s, subject=subject, baseline=baseline)
            for s in SCENARIOS if s.group == group]


def run_apiversions(group: str, args, context: dict, tmp: Path, problems: list[str]) -> str:
    results = _scenario_results(group)
    servers = make_servers()
    with serving(servers, tmp / group, problems):
        context["preflight"] = preflight(servers, problems)
        for rnd in range(1, args.rounds + 1):
            for sr in results:
                for server in round_order(servers, rnd):
                    run_scenario(server, sr, rnd, args, problems)
    context["load_end"] = os.getloadavg()[0]
    for sr in results:
        print(f"{sr.scenario.connections}x{sr.scenario.depth}: kafka-net / reference = "
              f"{sr.ratio():.2f} (target >= {TARGET_RATIO})")
    return render_group(group, results, context)


# --- group: produce ----------------------------------------------------------------------


def run_produce(group: str, args, context: dict, tmp: Path, problems: list[str]) -> str:
    results = _scenario_results(group)
    servers = make_servers()
    clients: list[ClientRun] = []
    with serving(servers, tmp / group, problems):
        context["preflight"] = preflight(servers, problems)
        for server in servers:
            create_topic(server.port, DEFAULT_TOPIC, TOPIC_PARTITIONS)
            for rnd in range(1, args.rounds + 1):
                create_topic(server.port, f"bench-clients-{rnd}", TOPIC_PARTITIONS)
        context["preflight"] += (f" Topics created on both: `{DEFAULT_TOPIC}` (load generator) "
                                 f"and one `bench-clients-ROUND` per round (confluent-kafka), "
                                 f"{TOPIC_PARTITIONS} partitions each.")
        for rnd in range(1, args.rounds + 1):
            order = round_order(servers, rnd)
            for sr in results:
                for server in order:
                    run_scenario(server, sr, rnd, args, problems)
            for mode in ("produce", "consume"):
                for server in order:
                    clients.append(client_run(server, mode, f"bench-clients-{rnd}", rnd,
                                              args.client_messages, problems))
    context["load_end"] = os.getloadavg()[0]
    return render_produce(group, results, clients, context, args.client_messages)


def _client_ratio_per_round(runs: list[ClientRun]) -> list[float]:
    base = {r.round: r.messages_per_s for r in runs if r.server == REFERENCE}
    return [r.messages_per_s / base[r.round] for r in sorted(runs, key=lambda r: r.round)
            if r.server == KAFKA_NET and base.get(r.round)]


def client_table(runs: list[ClientRun], title: str, what: str) -> list[str]:
    ratios = _client_ratio_per_round(runs)
    lines = [f"### {title}", "",
             "| server | messages/s | MB/s | kafka-net / reference | seconds | "
             "server CPU µs/message | messages/s per round |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name in (KAFKA_NET, REFERENCE):
        mine = sorted((r for r in runs if r.server == name), key=lambda r: r.round)
        if not mine:
            continue
        ratio = f"**{_median(ratios):.2f}**" if name == KAFKA_NET and ratios else ""
        lines.append(
            f"| {name} | {_fmt_rate(_median(r.messages_per_s for r in mine))} | "
            f"{_median(r.mb_per_s for r in mine):.1f} | {ratio} | "
            f"{_median(r.seconds for r in mine):.2f} | "
            f"{_median(r.cpu_us_per_message for r in mine):.1f} | "
            f"{', '.join(_fmt_rate(r.messages_per_s) for r in mine)} |")
    bad = [r for r in runs if not r.ok]
    lines += ["", f"kafka-net / reference per round: {', '.join(f'{x:.2f}' for x in ratios)} "
                  f"(the ratio column is their median). "
              + (what if not bad else "**PROBLEMS** " + "; ".join(
                  f"{r.server} round {r.round}: {r.result.get('first_error')}" for r in bad)),
              ""]
    return lines


def render_produce(group: str, results: list[ScenarioResult], clients: list[ClientRun],
                   context: dict, messages: int) -> str:
    g = GROUPS[group]
    lines = [f"## {g.title}", "", g.intro, ""]
    lines += context_lines(
        context,
        KAFKA_NET_LINE[:-len("(one thread, same `KafkaApis`).")]
        + "(one thread; same `KafkaApis`, `ReplicaManager` and `GroupCoordinator`, "
          "long-poll Fetch answered from its purgatory through a socketpair wake-up).",
        loadgen_line(context) + f" Produce: v9, acks={PRODUCE_ACKS}, every request one "
        f"batch of one {CLIENT_SIZE}-byte record built once with `build_batch`; connection i "
        f"writes partition i % {TOPIC_PARTITIONS} of `{DEFAULT_TOPIC}`.",
        extra=[
        f"- confluent-kafka {_client_version()}: one client process per measurement "
        f"(`python -m bench.clients produce|consume --messages {messages} --size "
        f"{CLIENT_SIZE}`), against each server in the round's order, a fresh topic of "
        f"{TOPIC_PARTITIONS} partitions per round. Producer: librdkafka's defaults except "
        "`bootstrap.servers` (acks=all, linger.ms=5, no compression), timed from the first "
        "`produce()` to `flush()` returning. Consumer: `assign` with OFFSET_BEGINNING on "
        "every partition, timed from `assign` to the last message; defaults except "
        "`bootstrap.servers`, `group.id` and `queued.min.messages=1000000` (see "
        "`bench/clients.py`: the default 100,000 makes librdkafka pause fetching for 1 s "
        "whenever the Python loop falls behind). MB/s counts message values "
        f"({CLIENT_SIZE} bytes each), 10^6 bytes per MB. Server CPU is the server "
        "process's CPU time during the client run divided by the messages."])
    for sr in results:
        lines += loadgen_table(sr)
    produced = [r for r in clients if r.mode == "produce"]
    consumed = [r for r in clients if r.mode == "consume"]
    lines += client_table(
        produced, f"confluent-kafka producer: {messages:,} messages of {CLIENT_SIZE} bytes, "
                  "one client process",
        f"Every run: all {messages:,} delivery reports said delivered, none failed.")
    lines += client_table(
        consumed, f"confluent-kafka consumer: the {messages:,} messages read back",
        f"Every run read {messages:,} messages, each partition's offsets dense from 0, every "
        f"value {CLIENT_SIZE} bytes, and the partitions' high watermarks added up to "
        f"{messages:,}.")
    lines += ["### Reading these numbers", ""]
    for sr in results:
        k_cpu = sr.median(KAFKA_NET, "cpu_us_per_request")
        r_cpu = sr.median(REFERENCE, "cpu_us_per_request")
        lines.append(
            f"- Produce requests from the load generator: kafka-net / reference "
            f"**{sr.ratio():.2f}** (the design target set for ApiVersions, >= "
            f"{TARGET_RATIO}: **{'met' if sr.ratio() >= TARGET_RATIO else 'not met'}**). "
            f"Server CPU per request {k_cpu:.0f} µs against {r_cpu:.0f} (CPU-cost ratio "
            f"{r_cpu / k_cpu if k_cpu else float('nan'):.2f}). Both run the same handler "
            "(decode the batch, validate it with CRC32C, take the partition lock, append, "
            "wake the fetch purgatory, encode the answer); kafka-net adds the hand-offs "
            "between its 11 threads, which cost more GIL hand-overs the longer each step "
            "holds the GIL (see `bench/README.md`, Findings).")
    p_ratio = _median(_client_ratio_per_round(produced))
    c_ratio = _median(_client_ratio_per_round(consumed))
    lines += [
        f"- confluent-kafka producer: kafka-net / reference {p_ratio:.2f}. librdkafka "
        f"batches: with linger.ms=5 and batch.size 1 MB, {messages:,} messages go in a few "
        "hundred Produce requests of hundreds to thousands of records each, and one "
        "connection per "
        "broker carries them (up to 5 in flight, but kafka-net, as Kafka, reads the next "
        "request of a connection only after answering the previous one). So the broker's "
        "per-request overhead matters little here; what a server spends per message is in "
        "the CPU column.",
        f"- confluent-kafka consumer: kafka-net / reference {c_ratio:.2f}. A Fetch returns "
        f"up to 1 MB per partition, so {messages:,} messages come in a few dozen responses; "
        "the "
        "client's own Python loop (one `consume()` call per 10,000 messages, a check per "
        "message) is a large part of the time, on both servers.",
    ]
    lines += _busy_machine_line(context)
    return "\n".join(lines) + "\n"


def _client_version() -> str:
    try:
        import confluent_kafka
        return f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"
    except ImportError:
        return "(not installed)"


# --- group: capture ----------------------------------------------------------------------


def read_capture(directory: Path) -> dict:
    """What the capture files hold: files, bytes, records by direction, problems."""
    files = sorted(directory.glob("*.kncap"))
    requests = responses = 0
    problems: list[str] = []
    for path in files:
        result = decode_segment(path.read_bytes())
        problems += [f"{path.name}: {p}" for p in result.problems]
        for rec in result.records:
            if rec.direction == REQUEST:
                requests += 1
            else:
                responses += 1
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files),
            "requests": requests, "responses": responses, "problems": problems}


def run_capture(group: str, args, context: dict, tmp: Path, problems: list[str]) -> str:
    results = _scenario_results(group)
    capture_dir = tmp / "captures"
    servers = [server_process(CAPTURING, capture_dir=capture_dir), server_process(KAFKA_NET)]
    with serving(servers, tmp / group, problems):
        context["preflight"] = preflight(servers, problems)
        for server in servers:
            create_topic(server.port, DEFAULT_TOPIC, TOPIC_PARTITIONS)
        for rnd in range(1, args.rounds + 1):
            for sr in results:
                for server in round_order(servers, rnd):
                    run_scenario(server, sr, rnd, args, problems)
    context["load_end"] = os.getloadavg()[0]
    captured = read_capture(capture_dir)
    answered = sum(m.result.received for sr in results for m in sr.of(CAPTURING))
    # Every request the capturing server read was answered before it stopped (a graceful
    # stop), so both directions must be on record, at least once per answer we counted.
    if captured["problems"]:
        problems.append(f"capture files: {captured['problems'][:3]}")
    if captured["requests"] != captured["responses"] or captured["requests"] < answered:
        problems.append(f"capture holds {captured['requests']} requests and "
                        f"{captured['responses']} responses; the load generator got "
                        f"{answered} answers")
    for sr in results:
        print(f"capture {sr.scenario.api}: with / without = {sr.ratio():.2f} "
              f"(overhead {1 - sr.ratio():.1%}, target < {CAPTURE_TARGET:.0%})")
    breakdown = None
    missed = [sr for sr in results if 1 - sr.ratio() >= CAPTURE_TARGET]
    if missed:
        # Where the cost goes, for the scenario that missed the target by most.
        worst = min(missed, key=lambda sr: sr.ratio()).scenario.api
        breakdown = capture_breakdown(worst, args, problems)
    return render_capture(group, results, captured, answered, context, breakdown)


def capture_breakdown(api: str, args, problems: list[str]) -> dict | None:
    argv = [sys.executable, "-m", "bench.capture_profile", "--api", api, "--rounds", "2",
            "--duration", "3", "--warmup", "1", "--workers", str(args.workers), "--json"]
    print("capture: the target was missed; " + " ".join(argv[1:]), flush=True)
    try:
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, ValueError) as exc:
        problems.append(f"capture breakdown failed: {type(exc).__name__}: {exc}")
        return None
    result["command"] = "python -m bench.capture_profile " + " ".join(argv[3:-1])
    if not all(v["ok"] for v in result["variants"].values()):
        problems.append("capture breakdown: a load run was not clean")
    return result


def render_capture(group: str, results: list[ScenarioResult], captured: dict, answered: int,
                   context: dict, breakdown: dict | None = None) -> str:
    g = GROUPS[group]
    lines = [f"## {g.title}", "", g.intro, ""]
    lines += context_lines(
        context,
        f"- Servers: `python -m kafka_net serve` on its defaults (3 network, 8 handler "
        f"threads), loopback, ephemeral port; `{CAPTURING}` adds `--capture-dir DIR` "
        f"(capture.segment.bytes and capture.max.frame.bytes at their defaults, 64 MiB "
        f"and 1 MiB). Produce: `{DEFAULT_TOPIC}`, {TOPIC_PARTITIONS} partitions, created "
        f"on both.",
        loadgen_line(context))
    for sr in results:
        lines += loadgen_table(sr)
    ok = not captured["problems"] and captured["requests"] == captured["responses"] \
        and captured["requests"] >= answered
    lines += [
        f"Capture written by `{CAPTURING}` over the whole run: {captured['requests']:,} "
        f"request and {captured['responses']:,} response records in {captured['files']} "
        f"file(s), {captured['bytes'] / 1e6:.1f} MB; "
        + ("every file read back by `decode_segment` without a problem, one request "
           "record per response record, and at least one per answer the load generator "
           f"counted ({answered:,})." if ok else
           f"**PROBLEMS** reading them back: {captured['problems'][:3]}, "
           f"{answered:,} answers counted by the load generator."),
        "", "### Reading these numbers", ""]
    verdicts = []
    for sr in results:
        overhead = 1 - sr.ratio()
        per_round = ", ".join(f"{1 - r:.0%}" for r in sr.round_ratios())
        c_cpu = sr.median(CAPTURING, "cpu_us_per_request")
        n_cpu = sr.median(KAFKA_NET, "cpu_us_per_request")
        verdicts.append(overhead < CAPTURE_TARGET)
        lines.append(
            f"- {sr.scenario.api}: throughput with capture **{overhead:.0%} lower** than "
            f"without (per round: {per_round}; the figure is their median): target (< "
            f"{CAPTURE_TARGET:.0%}) **{'met' if overhead < CAPTURE_TARGET else 'not met'}**. "
            f"Server CPU per request {c_cpu:.0f} µs with capture against {n_cpu:.0f} "
            f"without ({(c_cpu / n_cpu - 1) if n_cpu else float('nan'):+.0%}).")
    lines += [
        "- What capture adds per request, on the Processor thread: two records (request "
        "and response), each encoded (struct packing, the connection's ids cached once "
        "encoded, a zlib CRC-32 of the body) and copied into a shared memory mapping of "
        "the Processor's current segment file: no system call per record, so the "
        "Processor keeps the GIL (an `os.write` per record, the earlier design, let one "
        "of the 10 other threads take it each time and cost about 250-430 µs of wall "
        "time per request; `bench/README.md`, Findings). A crash still loses at most "
        "the record being copied.",
        "- A negative overhead means the run with capture was faster: the difference is "
        "inside this machine's noise; the CPU column is the steadier measure.",
    ]
    lines += _busy_machine_line(context)
    if breakdown:
        v = breakdown["variants"]
        lines += [
            "", f"### Where the cost goes ({breakdown['api']}, the scenario furthest from "
                "the target)", "",
            f"Command: `{breakdown['command']}` (run by this group because the target was "
            "missed): one kafka-net in-process, each Processor's capture object swapped "
            f"between runs, {breakdown['rounds']} rounds interleaved, medians; see "
            "`bench/capture_profile.py` for the variants.", ""]
        lines += capture_profile_table(breakdown)
        full, write, enc = v["full"], v["write"], v["encode"]
        lines += [
            "",
            f"- Inside the real writer (`full`) the Processor spends "
            f"{full['inside_cpu_us']:.0f} µs of CPU and {full['inside_wall_us']:.0f} µs "
            f"of wall time per request; `encode` alone costs {enc['inside_cpu_us']:.0f} µs "
            f"(two records). For comparison, the two `os.write` calls of the earlier "
            f"design alone: {write['inside_cpu_us']:.0f} µs of CPU but "
            f"{write['inside_wall_us']:.0f} µs of wall time, the wait for the GIL after "
            "each write released it.",
        ]
    return "\n".join(lines) + "\n"



# --- group: spark ------------------------------------------------------------------------


def run_spark(group: str, args, context: dict, tmp: Path, problems: list[str]) -> str:
    out_json = tmp / "spark.json"
    argv = [sys.executable, "-m", "bench.spark_bench", "--frames", str(args.spark_frames),
            "--json-out", str(out_json)]
    context["spark_command"] = "python -m bench.spark_bench --frames " + str(args.spark_frames)
    print("spark: " + " ".join(argv[1:]), flush=True)
    t0 = time.monotonic()
    try:
        code = subprocess.run(argv, cwd=ROOT, stdin=subprocess.DEVNULL,
                              timeout=SPARK_TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        code = None
    wall = time.monotonic() - t0
    context["load_end"] = os.getloadavg()[0]
    try:
        result = json.loads(out_json.read_text())
    except (OSError, ValueError):
        how = (f"timed out after {SPARK_TIMEOUT:.0f} s" if code is None
               else f"exited with {code}")
        result = {"ok": False, "problems": [f"spark_bench {how} without writing its figures"]}
    result["wall_s"] = wall
    if not result.get("ok"):
        problems += [f"spark: {p}" for p in result.get("problems") or ["not ok"]]
    return render_spark(group, result, context)


def render_spark(group: str, r: dict, context: dict) -> str:
    g = GROUPS[group]
    cap = r.get("capture", {})
    title = g.title.replace("1,000,000", f"{cap['frames']:,}") if cap else g.title
    lines = [f"## {title}", "", g.intro, ""]
    lines += context_lines(context, None, None, preflight_line=False)[:-1]
    lines.append(f"- Job: `{context['spark_command']}` (what this group runs, in a "
                 f"subprocess); Spark {r.get('spark_version', '?')}, master "
                 f"`{r.get('master', 'local[2]')}`, driver and executors on this machine.")
    if cap:
        mix = ", ".join(f"{k} {v:,}" for k, v in sorted(cap["per_api"].items()))
        lines.append(
            f"- Capture: {cap['frames']:,} frames ({cap['pairs']:,} request/response pairs: "
            f"{mix}) over {cap['connections']:,} connections, {cap['processors']} Processors, "
            f"{cap['files']} segment files of up to {cap['segment_bytes'] // 2**20} MiB, "
            f"{cap['bytes'] / 1e6:.0f} MB; written in {r.get('generate_s', 0):.1f} s.")
    lines.append("")
    if "job_s" in r:
        t = r["report_totals"]
        lines += [
            "| frames | Spark session start, s | job (run + report files), s | frames/s | "
            "violations | report checked |",
            "| ---: | ---: | ---: | ---: | ---: | --- |",
            f"| {t['frames']:,} | {r['session_s']:.1f} | {r['job_s']:.1f} | "
            f"**{_fmt_rate(r['frames_per_s'])}** | {t['violations']} | "
            + ("frames, requests, pairs and connections as written, 0 violations, nothing "
               "in flight, nothing unreadable" if r.get("ok") else
               "**PROBLEMS**: " + "; ".join(r.get("problems", []))) + " |",
            ""]
    else:
        lines += ["**The job did not finish**: " + "; ".join(r.get("problems", [])), ""]
    prof = r.get("profile")
    lines += ["### Reading these numbers", ""]
    if "job_s" in r:
        slow = r["job_s"] > SPARK_SLOW_S
        lines.append(
            f"- {r['job_s']:.0f} s for {r['report_totals']['frames']:,} frames: "
            + (f"**slow** (over the {SPARK_SLOW_S:.0f} s we call slow)" if slow else
               f"under the {SPARK_SLOW_S:.0f} s we call slow")
            + ". Where the time goes, per Spark stage (measured with "
            "`spark.python.profile`), and what would cut it: `bench/README.md`, Findings. "
            "Its time moves a lot with other work on this 2-core machine (the load "
            "averages above; Findings has the same job at 222 s and 419 s).")
    if prof:
        per_frame = prof["file_units_us_per_frame"] + prof["check_connection_us_per_frame"]
        lines.append(
            f"- The job's row functions alone, in one process without Spark (on "
            f"{prof['frames_checked']:,} frames of the same capture): "
            f"`transforms.file_units` {prof['file_units_us_per_frame']:.0f} µs per frame, "
            f"`transforms.check_connection` (the pairing state machine, which decodes every "
            f"request and response body) {prof['check_connection_us_per_frame']:.0f} µs per "
            f"frame: {per_frame * cap.get('frames', 0) / 1e6:.0f} CPU seconds for the whole "
            "capture, spread over the 2 executor slots.")
        lines += ["- Where `check_connection` spends its time (cProfile, top 6 by own time; "
                  "the profiler inflates every figure, about 3x here, so read them as "
                  "shares):", ""]
        lines += ["  | function | calls | own µs/frame | with callees µs/frame |",
                  "  | --- | ---: | ---: | ---: |"]
        for row in prof["top_tottime"][:6]:
            lines.append(f"  | `{row['function']}` | {row['calls']:,} | "
                         f"{row['tottime_us_per_frame']:.1f} | "
                         f"{row['cumtime_us_per_frame']:.1f} |")
        lines.append("")
    if "session_s" in r:
        lines.append(f"- The session start ({r['session_s']:.0f} s) is the JVM's; the CLI pays "
                     "it once per run.")
    lines += _busy_machine_line(context, "the job got less CPU than it could use")
    return "\n".join(lines) + "\n"


# --- main ----------------------------------------------------------------------------------


RUNNERS = {
    "apiversions": run_apiversions,
    "produce": run_produce,
    "capture": run_capture,
    "spark": run_spark,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=4.0,
                        help="seconds measured per load-generator run (after --warmup)")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2, help="load generator processes")
    parser.add_argument("--group", action="append", choices=sorted(GROUPS),
                        help="run only this group (repeatable); default: all")
    parser.add_argument("--client-messages", type=int, default=CLIENT_MESSAGES,
                        help="produce group: messages per confluent-kafka run")
    parser.add_argument("--spark-frames", type=int, default=SPARK_FRAMES,
                        help="spark group: frames in the generated capture")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.duration <= 0 or args.warmup < 0 or args.workers < 1 \
            or args.client_messages < 1 or args.spark_frames < 2:
        parser.error("rounds >= 1, duration > 0, warmup >= 0, workers >= 1, "
                     "client-messages >= 1, spark-frames >= 2")
    groups = args.group or list(GROUPS)
    command = " ".join(["python -m bench.run_all", *(argv if argv is not None else sys.argv[1:])])
    base = {"command": command, "machine": machine_info(), "rounds": args.rounds,
            "duration": args.duration, "warmup": args.warmup, "workers": args.workers}
    problems: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kafka-net-bench-") as tmp:
        for group in groups:
            context = dict(base, load_start=os.getloadavg()[0], date=_dt.datetime.now(
                _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
            print(f"== group {group} (load average {context['load_start']:.2f})", flush=True)
            group_started = time.monotonic()
            try:
                section = RUNNERS[group](group, args, context, Path(tmp), problems)
            except (RuntimeError, OSError) as exc:
                print(f"run_all: {group}: {exc}", file=sys.stderr)
                for p in problems:
                    print(f"problem: {p}", file=sys.stderr)
                return 2
            update_results(args.output, group, section)
            print(f"== group {group}: {time.monotonic() - group_started:.0f} s; "
                  f"wrote its section of {args.output}", flush=True)
    print(f"all groups: {time.monotonic() - started:.0f} s")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
