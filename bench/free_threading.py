"""kafka-net on the project's CPython and on free-threaded CPython, in one interleaved run.

``python -m bench.free_threading [--ft-python .venv-ft/bin/python] [--scenarios av64x4,produce8x4]``
starts kafka-net (this checkout) at 1 + 1 and at Kafka's 3 + 8 threads on

* ``sys.executable`` (the project's .venv: CPython 3.11 on these machines),
* the free-threaded interpreter of ``make install-ft`` with the GIL off, and
* the same interpreter with ``PYTHON_GIL=1`` (the GIL back on: the free-threaded
  build's own single-thread costs, without its parallelism),

beside ``handoff_floor.py 3 8`` on both interpreters and ``ceiling_server.py``,
then runs the kload group's scenarios (bench/kload_group.py) against all of them
in rotated order, round after round.  It prints each run, the medians of req/s,
server CPU µs per request, p99 and context switches per request, and the median
of the per-round ratios that issue 23's targets name: each free-threaded server
over the same thread count on the project's CPython.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import harness, kload_group
from bench.harness import ServerProcess
from bench.measure import Run

ONE_ONE = ("num.network.threads=1", "num.io.threads=1")


def version_of(python: str, gil: str | None = None) -> str:
    env = dict(os.environ, **({"PYTHON_GIL": gil} if gil else {}))
    return subprocess.run(
        [python, "-c", "import sys, sysconfig; g = getattr(sys, '_is_gil_enabled', "
         "lambda: True)(); print(f'{sys.version.split()[0]}'"
         "f'{\"t\" if sysconfig.get_config_var(\"Py_GIL_DISABLED\") else \"\"}'"
         "f'{\" GIL\" if g and sysconfig.get_config_var(\"Py_GIL_DISABLED\") else \"\"}')"],
        env=env, capture_output=True, text=True, check=True).stdout.strip()


def kafka_net(name: str, python: str, gil: str | None, overrides: tuple[str, ...]
              ) -> ServerProcess:
    argv = ["env", *([f"PYTHON_GIL={gil}"] if gil else []), python, "-m", "kafka_net",
            "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            # in memory, as the other groups' servers: several run at once, and the
            # default log dir admits one broker
            "--override", "log.store=memory"]
    for kv in overrides:
        argv += ["--override", kv]
    return ServerProcess(name, argv, ready=harness.KAFKA_NET_READY)


def floor(name: str, python: str, n: int, m: int) -> ServerProcess:
    server = harness.handoff_floor(n, m)
    server.name = name
    server.argv[0] = python
    return server


@contextlib.contextmanager
def known_as(server: ServerProcess, name: str):
    """The kload group's name for ``server`` meanwhile: what it prepares and which
    known limits it applies go by name (bench/kload_group.py)."""
    own, server.name = server.name, name
    try:
        yield
    finally:
        server.name = own


def summary(runs: dict[tuple[str, str], list[Run]], key: str, names: list[str],
            pairs: list[tuple[str, str]]) -> list[str]:
    lines = [f"== {key}"]
    for name in names:
        rs = runs.get((key, name))
        if not rs:
            continue
        lines.append(
            f"{name:22} req/s {statistics.median(r.req_per_s for r in rs):9,.0f}  "
            f"CPU µs/req {statistics.median(r.cpu_us_per_request for r in rs):5.0f}  "
            f"p99 ms {statistics.median(r.p99_ms for r in rs):6.1f}  "
            f"cs/req {statistics.median(r.switches_per_request for r in rs):5.1f}")
    for top, bottom in pairs:
        if (key, top) in runs and (key, bottom) in runs:
            base = {r.round: r.req_per_s for r in runs[(key, bottom)]}
            ratios = [r.req_per_s / base[r.round] for r in runs[(key, top)]
                      if base.get(r.round)]
            lines.append(f"ratio {top} / {bottom}: median {statistics.median(ratios):.2f} "
                         f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.free_threading",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--ft-python", default=".venv-ft/bin/python",
                        help="the free-threaded interpreter (make install-ft's venv)")
    parser.add_argument("--scenarios", default="av64x4,produce8x4",
                        help="kload group scenario keys, comma-separated")
    parser.add_argument("--no-gil-run", action="store_true",
                        help="leave out the PYTHON_GIL=1 servers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args(argv)
    ft = str(Path(args.ft_python).absolute())   # not resolve(): the venv is a symlink
    base, ftv = version_of(sys.executable), version_of(ft)
    print(f"project CPython: {base} ({sys.executable}); free-threaded: {ftv} ({ft})")
    flavours = [(base, sys.executable, None), (ftv, ft, None)]
    if not args.no_gil_run:
        flavours.append((version_of(ft, "1") + "=1", ft, "1"))
    servers = [harness.ceiling()]
    servers += [floor(f"floor 3+8 {base}", sys.executable, 3, 8),
                floor(f"floor 3+8 {ftv}", ft, 3, 8)]
    pairs = []
    for label, python, gil in flavours:
        for threads, overrides in (("1+1", ONE_ONE), ("3+8", ())):
            servers.append(kafka_net(f"kn {threads} {label}", python, gil, overrides))
            if python != sys.executable or gil:
                pairs.append((f"kn {threads} {label}", f"kn {threads} {base}"))
    pairs.append((f"floor 3+8 {ftv}", f"floor 3+8 {base}"))
    wanted = args.scenarios.split(",")
    scenarios = [sc for sc in kload_group.SCENARIOS if sc.key in wanted]
    kload = harness.build_kload()
    problems: list[str] = []
    runs: dict[tuple[str, str], list[Run]] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            harness.serving(servers, Path(tmp), problems):
        for server in servers:
            if not server.name.startswith("floor"):
                with known_as(server, kload_group.KN_11 if server.name.startswith("kn ")
                              else server.name):
                    kload_group.prepare(kload, server)
        for rnd in range(1, args.rounds + 1):
            for sc in scenarios:
                for server in harness.round_order(servers, rnd):
                    if server.name.startswith("floor") and sc.key not in ("av16x1", "av64x4"):
                        continue   # the floor answers ApiVersions only
                    with known_as(server, kload_group.FLOOR_38
                                  if server.name.startswith("floor") else server.name):
                        r = kload_group.one_run(kload, server, sc, rnd, args)
                    runs.setdefault((sc.key, server.name), []).append(r)
                    if not server.name.startswith("floor"):   # see bench/README.md
                        problems += [f"{server.name} {sc.key} round {rnd}: {p}"
                                     for p in r.problems]
                    print(f"round {rnd} {sc.key:13} {server.name:22} {r.req_per_s:9,.0f} "
                          f"req/s  CPU {r.cpu_us_per_request:5.0f} µs/req  "
                          f"p99 {r.p99_ms:6.1f} ms", flush=True)
    for sc in scenarios:
        print("\n".join(summary(runs, sc.key, [s.name for s in servers], pairs)))
    for problem in problems:
        print("problem:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
