"""How evenly the Spark job's .kncap tasks share the work, measured without Spark.

``python -m bench.kncap_balance [--slots 2] [--scale 1] [--rounds 3]``

The real-client capture's .kncap segments (:mod:`bench.spark_capture`) planned
as the job plans them for ``--slots`` executor slots (each segment one range,
``conformance.planned_ranges``, then the kafka-net tasks), and each task's own
function (``task_reads.kncap_checks``) run here, one task after another, its
CPU time measured (``time.process_time``; ``--rounds`` runs of each plan,
alternating, and each task's least time, as the machine may be shared).  Two plans:

* **whole Processors**: each Processor's ranges in one piece, the pieces dealt
  to at most four tasks a slot, the largest first to the least loaded (the
  plan before the connections were shared);
* **parts**: ``conformance._kncap_tasks`` (a large Processor's connections
  shared among tasks by a hash of the id, as many parts as bring the slots'
  finish down by its cost model).

The imports and first allocations are paid once before either is timed.
Then Spark's local scheduling is replayed on those CPU times: tasks in order,
each to the slot free first.  Printed per plan: the tasks' CPU seconds, the
slots' finishing time, the largest slot's share of the work and the speed-up
over one slot (the sum over the finishing time).  A bound on what ``local[N]``
can gain from its tasks alone, on a machine with N free cores: no JVM, no
worker start, no load from other processes in it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from kafka_net.spark_jobs import conformance, task_reads


def whole_processors(ranges: list[tuple], most: int) -> list[list[tuple]]:
    """Each Processor's ranges one piece (parts 1), the largest first to the
    least loaded of at most ``most`` tasks."""
    groups: dict[str, list[tuple]] = {}
    for row in ranges:
        groups.setdefault(task_reads.kncap_group(row[0]), []).append(row)
    def size(rows):
        return sum((end if end >= 0 else os.path.getsize(path)) - start
                   for path, start, end, _, _ in rows)
    bins: list[list] = [[0, []] for _ in range(min(most, len(groups)))]
    for rows in sorted(groups.values(), key=size, reverse=True):
        emptiest = min(bins, key=lambda b: b[0])
        emptiest[0] += size(rows)
        emptiest[1].append((rows, 1, 0))
    return [b[1] for b in bins]


def task_seconds(tasks: list[list[tuple]]) -> list[float]:
    """Each task's CPU seconds, its function run here to the end."""
    import pyarrow as pa
    out = tempfile.mkdtemp(prefix="kafka-net-kncap-balance-")
    try:
        for table in task_reads.TASK_TABLES:
            os.makedirs(os.path.join(out, table))
        apply = task_reads.kncap_checks(out, tasks)
        seconds = []
        for i in range(len(tasks)):
            t0 = time.process_time()
            for _ in apply(iter([pa.RecordBatch.from_pydict({"id": [i]})])):
                pass
            seconds.append(time.process_time() - t0)
        return seconds
    finally:
        shutil.rmtree(out, ignore_errors=True)


def replay(seconds: list[float], slots: int) -> float:
    """When the last slot finishes, tasks taken in order by the slot free first."""
    free = [0.0] * slots
    for s in seconds:
        i = free.index(min(free))
        free[i] += s
    return max(free)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kncap_balance",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each plan, alternating; a task's least CPU time counts")
    args = parser.parse_args(argv)
    from bench.spark_capture import real_capture
    paths = real_capture(args.scale)["kncap"]
    total = sum(os.path.getsize(p) for p in paths)
    # each segment whole, as the job reads .kncap files unless --split-mb is given
    ranges = conformance.planned_ranges(None, paths, None).kncap
    most = 4 * args.slots
    print(f"{len(paths)} segments, {total / 1e6:.0f} MB, {len(ranges)} ranges; "
          f"{args.slots} slots; load average {os.getloadavg()[0]:.1f}")
    t0 = time.process_time()
    parts = conformance._kncap_tasks(ranges, args.slots)
    plan_s = time.process_time() - t0
    whole = whole_processors(ranges, most)
    # the imports and first allocations, outside the figures: a Spark worker
    # pays them once, whichever plan it runs
    task_seconds([whole[-1]])
    print(f"parts planned in {plan_s:.2f} CPU s (the driver's walk over lengths and ids)")
    plans = (("whole Processors", whole), ("parts", parts))
    best: dict[str, list[float]] = {}
    for _ in range(args.rounds):         # alternating; each task's least CPU time
        for name, tasks in plans:
            got = task_seconds(tasks)
            best[name] = [min(a, b) for a, b in zip(best.get(name, got), got)]
    for name, tasks in plans:
        seconds = best[name]
        end = replay(seconds, args.slots)
        pieces = [f"{parts}:{part}" for task in tasks for _, parts, part in task]
        print(f"{name}: {len(tasks)} tasks ({len(pieces)} pieces), CPU s "
              f"{' '.join(f'{s:.2f}' for s in seconds)} = {sum(seconds):.2f}; "
              f"{args.slots} slots finish at {end:.2f} s: largest slot "
              f"{end / sum(seconds):.0%} of the work, {sum(seconds) / end:.2f}x one slot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
