"""Group ``protections`` (issue 8): what the broker's protections cost on the normal path.

Two kafka-net servers on Kafka's default thread counts (3 network + 8 handler threads),
driven by kload, interleaved (the order rotated each round):

* ``off``: the defaults: no connection limits, no memory-pool bound, no client quota;
* ``on``: every protection active but far from binding: connection limits
  (``max.connections``, ``max.connections.per.ip``, ``max.connection.creation.rate``),
  a bounded memory pool (``queued.max.request.bytes``, at least
  ``socket.request.max.bytes``), and client quotas set after startup with
  AlterClientQuotas (default client-id: byte rates and request percentage; default
  ip: connection creation rate), so that every request is recorded by the quota
  managers and every connection counted, but none is throttled or refused.

A figure is the median over the rounds, a ratio (on / off) the median of the per-round
ratios."""

from __future__ import annotations

import os
from pathlib import Path

from bench import harness
from bench.measure import Run, interleaved_kload, median
from bench.results import context_lines, num, rate, table

GROUP = "protections"
ON, OFF = "kafka-net protections on", "kafka-net protections off"
TOPIC = "bench"
ALTER_CLIENT_QUOTAS = 49
ON_OVERRIDES = ("max.connections=10000", "max.connections.per.ip=5000",
                "max.connection.creation.rate=100000",
                "queued.max.request.bytes=209715200")   # >= socket.request.max.bytes
# AlterClientQuotas entries: (entity type, {key: value}); the entity is the default
# (null name) of its type.  High enough that nothing is throttled.
QUOTAS = (("client-id", {"producer_byte_rate": 1e12, "consumer_byte_rate": 1e12,
                         "request_percentage": 100000.0}),
          ("ip", {"connection_creation_rate": 100000.0}))
SCENARIOS = {
    "av16x1": ("ApiVersions v0, 16 connections, 1 in flight",
               ("--api", "apiversions", "--conns", "16", "--pipeline", "1")),
    "av64x4": ("ApiVersions v0, 64 connections, 4 in flight",
               ("--api", "apiversions", "--conns", "64", "--pipeline", "4")),
    "produce8x4": ("Produce v3 (10 x 100 B records), 8 connections, 4 in flight",
                   ("--api", "produce", "--topic", TOPIC, "--batch", "10", "--size", "100",
                    "--conns", "8", "--pipeline", "4")),
}


def set_default_quotas(port: int) -> None:
    """Set ``QUOTAS`` with one AlterClientQuotas v1 request; RuntimeError unless every
    entry answers error code 0."""
    answer = harness.kafka_call(port, ALTER_CLIENT_QUOTAS, 1, {"validate_only": False,
        "entries": [{"entity": [{"entity_type": kind, "entity_name": None}],
                     "ops": [{"key": k, "value": v, "remove": False}
                             for k, v in ops.items()]}
                    for kind, ops in QUOTAS]})
    codes = [(e["entity"][0]["entity_type"], e["error_code"], e["error_message"])
             for e in answer["entries"]]
    if len(codes) != len(QUOTAS) or any(code != 0 for _, code, _ in codes):
        raise RuntimeError(f"AlterClientQuotas on port {port} answered {codes}")


def servers() -> list[harness.ServerProcess]:
    return [harness.kafka_net(ON, ON_OVERRIDES), harness.kafka_net(OFF)]


def run(args, context: dict, tmp: Path, problems: list[str]) -> str:
    kload = harness.build_kload()
    compared = servers()
    with harness.serving(compared, tmp / GROUP, problems):
        for server in compared:
            harness.create_topic(server.port, TOPIC, 1)
        set_default_quotas(compared[0].port)
        runs = interleaved_kload(kload, compared, SCENARIOS, args, problems)
    context["load_end"] = os.getloadavg()[0]
    return render(runs, context)


def round_ratios(rs: list[Run], measure) -> list[float]:
    """measure(on) / measure(off) of each round that has both runs."""
    off = {r.round: measure(r) for r in rs if r.server == OFF}
    return [measure(r) / off[r.round] for r in rs if r.server == ON and off.get(r.round)]


def _ratio_cell(ratios: list[float]) -> str:
    return f"**{num(median(ratios), 2)}** ({', '.join(f'{x:.2f}' for x in ratios)})"


def render(runs: dict[str, list[Run]], context: dict) -> str:
    lines = ["## Protections on the normal path: kafka-net with every protection on / off",
             ""]
    quotas = "; ".join(f"default {kind}: " + ", ".join(f"`{k}={v:g}`" for k, v in ops.items())
                       for kind, ops in QUOTAS)
    lines += context_lines(context, [
        f"- `{OFF}`: `python -m kafka_net serve` on its defaults (3 network + 8 handler "
        "threads, no connection limit, unbounded memory pool, no client quota).",
        f"- `{ON}`: the same with " + ", ".join(f"`{kv}`" for kv in ON_OVERRIDES)
        + f", and after startup AlterClientQuotas v1 ({quotas}), every entry answered "
        "error code 0.",
        f"- Load: kload, {context['rounds']} rounds, order alternating, "
        f"{context['warmup']:g} s warm-up then {context['duration']:g} s measured. Ratios: "
        "on / off, median of the per-round ratios (per round in brackets)."])
    rows = []
    for key, (title, _) in SCENARIOS.items():
        for name in (ON, OFF):
            rs = [r for r in runs[key] if r.server == name]
            mine = name == ON
            rows.append([title, name, rate(median(r.req_per_s for r in rs)),
                         num(median(r.cpu_us_per_request for r in rs)),
                         num(median(r.p99_ms for r in rs), 1),
                         _ratio_cell(round_ratios(runs[key], lambda r: r.req_per_s))
                         if mine else "",
                         _ratio_cell(round_ratios(runs[key], lambda r: r.cpu_us_per_request))
                         if mine else ""])
    lines += table(["scenario", "server", "req/s", "server CPU µs/req", "p99 ms",
                    "req/s on / off", "CPU µs/req on / off"], rows, right={2, 3, 4})
    return "\n".join(lines) + "\n"
