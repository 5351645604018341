"""``python -m bench [--group NAME ...]``: run benchmark groups, rewrite their sections
of bench/RESULTS.md.  Exit code 0 when every run was clean, 1 if any answer was wrong
or a server misbehaved, 2 if a group could not be set up."""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from bench.measure import machine_info
from bench.results import RESULTS, update_results

# group name -> module with run(args, context, tmp, problems) -> the section's Markdown
GROUPS = {
    "kload": "bench.kload_group",
    "clients": "bench.clients_group",
    "capture": "bench.capture_group",
    "spark": "bench.spark_group",
    "protections": "bench.protections_group",
    "zerocopy": "bench.zero_copy_group",
    "durable": "bench.durable_group",
    "startup": "bench.startup",
}
DEFAULT_GROUPS = ("kload",)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--group", action="append", choices=sorted(GROUPS),
                        help="run this group (repeatable); default: "
                             + ", ".join(DEFAULT_GROUPS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0,
                        help="seconds measured per load run (after --warmup)")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--spark-frames", type=int, default=1_000_000,
                        help="spark group with --spark-capture synthetic: frames in the "
                             "generated conversation")
    parser.add_argument("--spark-capture", choices=("real", "synthetic"), default="real",
                        help="spark group: the real-client capture (bench/spark_capture.py, "
                             "recorded once, then reused) or the generated conversation")
    parser.add_argument("--spark-scale", type=float, default=1.0,
                        help="spark group, real capture: workload scale (1.0: about "
                             "1,000,000 frames)")
    parser.add_argument("--spark-rounds", type=int, default=3,
                        help="spark group: times every row runs, a round of all rows at a "
                             "time (the table shows each row's median run)")
    parser.add_argument("--starts", type=int, default=10,
                        help="startup group: starts of each server")
    parser.add_argument("--startup-base", metavar="REV",
                        help="startup group: also time kafka-net at git revision REV "
                             "(e.g. main), in the same run")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.starts < 1 or args.duration <= 0 or args.warmup < 0:
        parser.error("rounds >= 1, starts >= 1, duration > 0, warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the servers started so far are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    shown = argv if argv is not None else sys.argv[1:]
    base = {"command": " ".join(["python -m bench", *shown]), "machine": machine_info(),
            "rounds": args.rounds, "duration": args.duration, "warmup": args.warmup}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kafka-net-bench-") as tmp:
        for group in args.group or DEFAULT_GROUPS:
            context = dict(base, load_start=os.getloadavg()[0], date=_dt.datetime.now(
                _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
            print(f"== group {group} (load average {context['load_start']:.2f})", flush=True)
            started = time.monotonic()
            try:
                section = importlib.import_module(GROUPS[group]).run(
                    args, context, Path(tmp), problems)
            except (RuntimeError, OSError) as exc:
                print(f"bench: {group}: {exc}", file=sys.stderr)
                for p in problems:
                    print(f"problem: {p}", file=sys.stderr)
                return 2
            update_results(args.output, group, section)
            print(f"== group {group}: {time.monotonic() - started:.0f} s; wrote its section "
                  f"of {args.output}", flush=True)
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
