"""Group ``clients``: a real client's throughput, confluent-kafka (librdkafka) producing
and consuming through kafka-net (defaults) and through Tansu, interleaved.  kload cannot
drive this (consumer fetching, batching by the client), so it stays a group of its own;
the clients run as separate processes (``bench/clients.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench import harness
from bench.harness import ROOT, ServerProcess
from bench.measure import cpu_seconds, median
from bench.results import context_lines, num, rate, table

GROUP = "clients"
MESSAGES, SIZE, PARTITIONS = 200_000, 100, 4
TIMEOUT = 120.0
SUBJECT, BASELINE = "kafka-net 3+8", "Tansu"


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
    def messages_per_s(self) -> float:
        s = self.result.get("seconds") or 0.0
        return self.result["messages"] / s if self.ok and s else 0.0

    @property
    def cpu_us_per_message(self) -> float:
        n = self.result.get("messages") or 0
        return self.server_cpu_s / n * 1e6 if n else float("nan")


def client_run(server: ServerProcess, mode: str, topic: str, rnd: int,
               problems: list[str]) -> ClientRun:
    argv = [sys.executable, "-m", "bench.clients", mode, "--bootstrap",
            f"127.0.0.1:{server.port}", "--topic", topic, "--messages", str(MESSAGES),
            "--size", str(SIZE), "--timeout", str(TIMEOUT)]
    cpu0 = cpu_seconds(server)
    try:
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                              timeout=TIMEOUT + 30)
        try:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            result = {"ok": False, "first_error": f"exit code {proc.returncode}: "
                                                  f"{proc.stderr.strip()[-300:]}"}
    except subprocess.TimeoutExpired:
        result = {"ok": False, "first_error": "the client process timed out"}
    run = ClientRun(server.name, rnd, mode, result, cpu_seconds(server) - cpu0)
    print(f"round {rnd} {mode:8} {server.name:14}: {run.messages_per_s:9,.0f} msg/s  "
          f"server CPU {run.cpu_us_per_message:5.1f} us/msg  "
          f"{'ok' if run.ok else result.get('first_error')}", flush=True)
    high = result.get("high_watermarks")
    if mode == "consume" and server.name == SUBJECT and run.ok and high != MESSAGES:
        problems.append(f"{SUBJECT}'s high watermarks add up to {high}, not {MESSAGES}")
    if not run.ok:
        problems.append(f"confluent-kafka {mode} against {server.name} round {rnd}: "
                        f"{result.get('first_error')}")
    return run


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    servers = [harness.kafka_net(SUBJECT), harness.tansu()]
    runs: list[ClientRun] = []
    with harness.serving(servers, tmp / GROUP, problems):
        for server in servers:
            for rnd in range(1, args.rounds + 1):
                harness.create_topic(server.port, f"bench-clients-{rnd}", PARTITIONS)
        for rnd in range(1, args.rounds + 1):
            for mode in ("produce", "consume"):
                for server in harness.round_order(servers, rnd):
                    runs.append(client_run(server, mode, f"bench-clients-{rnd}", rnd,
                                           problems))
    context["load_end"] = os.getloadavg()[0]
    return render(runs, context, {s.name: s.describe for s in servers})


def render(runs: list[ClientRun], context: dict, servers: dict[str, str]) -> str:
    lines = [f"## confluent-kafka: {MESSAGES:,} messages of {SIZE} B, {SUBJECT} beside "
             f"{BASELINE}", ""]
    lines += context_lines(context, [
        f"- confluent-kafka {client_version()}, one client process per run "
        f"(`python -m bench.clients produce|consume --messages {MESSAGES} --size {SIZE}`), "
        f"a fresh topic of {PARTITIONS} partitions per round; {context['rounds']} rounds, "
        "the servers' order rotated each round.",
        "- Servers: " + "; ".join(f"{k}: {v}" for k, v in servers.items())])
    rows = []
    for mode in ("produce", "consume"):
        mine = [r for r in runs if r.mode == mode]
        base = {r.round: r.messages_per_s for r in mine if r.server == BASELINE}
        ratios = [r.messages_per_s / base[r.round] for r in mine
                  if r.server == SUBJECT and base.get(r.round)]
        for name in (SUBJECT, BASELINE):
            rs = [r for r in mine if r.server == name]
            rows.append([mode, name, rate(median(r.messages_per_s for r in rs)),
                         num(median(r.cpu_us_per_message for r in rs), 1),
                         ", ".join(rate(r.messages_per_s) for r in rs),
                         f"**{num(median(ratios), 2)}**" if name == SUBJECT else ""])
    lines += table(["client", "server", "messages/s", "server CPU µs/message",
                    "messages/s per round", f"{SUBJECT} / {BASELINE}"], rows, right={2, 3, 5})
    highs = {r.server: r.result.get("high_watermarks") for r in runs if r.mode == "consume"}
    lines.append("High watermarks after consuming (ListOffsets latest, summed over the "
                 "partitions): " + ", ".join(f"{k}: {v:,}" for k, v in highs.items()
                                             if v is not None) + ".")
    bad = [r for r in runs if not r.ok]
    lines.append("Every run: every delivery report said delivered; every message read back "
                 "once, offsets dense per partition." if not bad else "**Problems**: " +
                 "; ".join(f"{r.mode} {r.server} round {r.round}: "
                           f"{r.result.get('first_error')}" for r in bad))
    return "\n".join(lines) + "\n"


def client_version() -> str:
    try:
        import confluent_kafka
        return f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"
    except ImportError:
        return "(not installed)"
