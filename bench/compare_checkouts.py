"""Two kafka-net checkouts side by side under kload, with Tansu, in one interleaved run.

``python -m bench.compare_checkouts --base DIR [--scenarios produce8x4,metadata16x1]``
starts Tansu and kafka-net from ``DIR`` (another checkout, e.g. ``git worktree add
DIR BASE_COMMIT`` or ``git archive BASE | tar -x -C DIR``) and from this checkout,
each with 1 + 1 threads and on the defaults (3 + 8), then runs the kload group's
scenarios (``bench/kload_group.py``, Fetch with ``bench/loadgen.py``) against all of
them in rotated order, round after round.  It prints each run and, per scenario and
server, the medians of req/s, server CPU µs per request, p99 and context switches
per request, and the median of the per-round ratios to Tansu.  What one change did
to a path, measured the same way and at the same moment as what it is compared with:
the machine is shared, so figures from different runs do not compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from bench import harness, kload_group
from bench.harness import ServerProcess
from bench.measure import Run, run_kload

ONE_ONE = ("num.network.threads=1", "num.io.threads=1")


def kafka_net_from(name: str, checkout: Path, overrides: tuple[str, ...]) -> ServerProcess:
    """kafka-net run from ``checkout`` (its own directory first on the path)."""
    command = (f"cd {checkout} && exec {sys.executable} -m kafka_net serve "
               "--override listeners=PLAINTEXT://127.0.0.1:0")
    command += "".join(f" --override {kv}" for kv in overrides)
    return ServerProcess(name, ["sh", "-c", command], ready=harness.KAFKA_NET_READY)


def fill(kload: Path, server: ServerProcess) -> None:
    harness.create_topic(server.port, kload_group.TOPIC, 1)
    harness.create_topic(server.port, kload_group.FETCH_TOPIC, 1)
    run = run_kload(kload, server, 0, ["--api", "produce", "--topic", kload_group.FETCH_TOPIC,
                                       "--batch", "10", "--size", "100", "--requests", "1"],
                    timeout=30)
    if not run.ok:
        raise RuntimeError(f"{server.name}: filling {kload_group.FETCH_TOPIC}: {run.problems}")


def summary(runs: dict[tuple[str, str], list[Run]], key: str, names: list[str]) -> list[str]:
    tansu = {r.round: r.req_per_s for r in runs[(key, "Tansu")]}
    lines = [f"== {key}"]
    for name in names:
        rs = runs[(key, name)]
        ratio = statistics.median(r.req_per_s / tansu[r.round] for r in rs if tansu.get(r.round))
        lines.append(
            f"{name:14} req/s {statistics.median(r.req_per_s for r in rs):9,.0f}  "
            f"CPU µs/req {statistics.median(r.cpu_us_per_request for r in rs):5.0f}  "
            f"p99 ms {statistics.median(r.p99_ms for r in rs):6.1f}  "
            f"cs/req {statistics.median(r.switches_per_request for r in rs):4.1f}  "
            f"x Tansu {ratio:4.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare_checkouts",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--scenarios", default="produce8x4",
                        help="kload group scenario keys, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    servers = [harness.tansu()]
    for threads, overrides in (("1+1", ONE_ONE), ("3+8", ())):
        servers += [kafka_net_from(f"base {threads}", args.base.resolve(), overrides),
                    kafka_net_from(f"this {threads}", here, overrides)]
    wanted = args.scenarios.split(",")
    scenarios = [sc for sc in kload_group.SCENARIOS if sc.key in wanted]
    kload = harness.build_kload()
    problems: list[str] = []
    runs: dict[tuple[str, str], list[Run]] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            harness.serving(servers, Path(tmp), problems):
        for server in servers:
            fill(kload, server)
        for rnd in range(1, args.rounds + 1):
            for sc in scenarios:
                for server in harness.round_order(servers, rnd):
                    r = kload_group.one_run(kload, server, sc, rnd, args)
                    runs.setdefault((sc.key, server.name), []).append(r)
                    problems += [f"{server.name} {sc.key} round {rnd}: {p}" for p in r.problems]
                    print(f"round {rnd} {sc.key:13} {server.name:10} {r.req_per_s:9,.0f} req/s  "
                          f"CPU {r.cpu_us_per_request:5.0f} µs/req", flush=True)
    for sc in scenarios:
        print("\n".join(summary(runs, sc.key, [s.name for s in servers])))
    for problem in problems:
        print("problem:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
