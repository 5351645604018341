"""kafka-net 1+1 from several checkouts beside ``handoff_floor.py 1 1``, under kload.

``--threads 3+8`` runs the floor and kafka-net with 3 network and 8 handler threads
instead; ``--switch-interval NAME=S`` starts checkout NAME with
``sys.setswitchinterval(S)``; ``--scenarios av16x1`` runs one scenario only.

``python -m bench.ab_kload --checkout base=/tmp/base --checkout new=.`` starts the
floor and one kafka-net (``num.network.threads=1 num.io.threads=1``) per checkout
(each run from its own directory, so its own code), then runs kload's two
ApiVersions scenarios against each, interleaved, in rotated order
(``bench.measure.interleaved_kload``).  It prints, per scenario and server, the
median req/s, server CPU µs per request and the per-round ratio to the floor.

Made for hot-path changes: a checkout of the base commit is one
``git archive BASE | tar -x -C DIR`` away.  On a shared machine only figures from
one such run compare, and CPU µs per request is the steadier one.
"""

from __future__ import annotations

import argparse
import shlex
import tempfile
from pathlib import Path

from bench import harness
from bench.measure import interleaved_kload, median

FLOOR = "floor 1+1"
SCENARIOS = {
    "av16x1": ("ApiVersions 16x1", ["--api", "apiversions", "--conns", "16", "--pipeline", "1"]),
    # The floor stalls at the end of a pipelined run (see kload_group.KNOWN_LIMITS).
    "av64x4": ("ApiVersions 64x4", ["--api", "apiversions", "--conns", "64", "--pipeline", "4",
                                    "--stall-timeout", "2"]),
}


def kafka_net_from(name: str, checkout: Path, threads: tuple[int, int] = (1, 1),
                   switch_interval: float | None = None) -> harness.ServerProcess:
    server = harness.kafka_net(name, (f"num.network.threads={threads[0]}",
                                      f"num.io.threads={threads[1]}"))
    if switch_interval is not None:
        # The GIL's switch interval (CPython's default 0.005 s), set before the broker starts.
        start = (f"import runpy, sys; sys.setswitchinterval({switch_interval}); "
                 "runpy.run_module('kafka_net', run_name='__main__', alter_sys=True)")
        server.argv[1:3] = ["-c", start]
    # python -m puts the working directory first on sys.path: run from the checkout.
    command = " ".join(shlex.quote(arg) for arg in server.argv)
    root = shlex.quote(str(checkout))
    server.argv = ["sh", "-c", f"cd {root} && PYTHONPATH={root} exec {command}"]
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--threads", default="1+1", metavar="N+M",
                        help="network + handler threads, for the floor and kafka-net")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--switch-interval", action="append", default=[], metavar="NAME=S",
                        help="start checkout NAME with sys.setswitchinterval(S)")
    args = parser.parse_args(argv)
    n, m = (int(x) for x in args.threads.split("+"))
    scenarios = {k: SCENARIOS[k] for k in args.scenarios.split(",")}
    switch = {k: float(v) for k, _, v in (s.partition("=") for s in args.switch_interval)}
    global FLOOR
    FLOOR = f"floor {n}+{m}"
    servers = [harness.handoff_floor(n, m)]
    for spec in args.checkout:
        name, _, directory = spec.partition("=")
        servers.append(kafka_net_from(name, Path(directory).resolve(), (n, m),
                                      switch.get(name)))
    kload, problems = harness.build_kload(), []
    with harness.serving(servers, Path(tempfile.mkdtemp(prefix="ab_kload-")), problems):
        runs = interleaved_kload(kload, servers, scenarios, args, problems)
    for key, scenario_runs in runs.items():
        print(f"== {scenarios[key][0]}")
        floor = {r.round: r.req_per_s for r in scenario_runs if r.server == FLOOR}
        for server in servers:
            mine = [r for r in scenario_runs if r.server == server.name]
            ratios = [r.req_per_s / floor[r.round] for r in mine if floor.get(r.round)]
            print(f"{server.name:12} {median(r.req_per_s for r in mine):9,.0f} req/s  "
                  f"CPU {median(r.cpu_us_per_request for r in mine):5.1f} µs/request  "
                  f"cs {median(r.switches_per_request for r in mine):4.1f}/request  "
                  f"/ floor {median(ratios):.2f} ({', '.join(f'{x:.2f}' for x in ratios)})")
    others = [p for p in problems if not p.startswith(FLOOR)]
    print("problems:", others or "none")
    return 1 if others else 0


if __name__ == "__main__":
    raise SystemExit(main())
