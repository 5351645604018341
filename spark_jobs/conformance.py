"""The conformance job: captures in, a correlation-id report out.

Run it either way; the code is the same:

    kafka-net conformance CAPTURES... --out DIR            # Spark local mode
    spark-submit --master spark://host:7077 spark_jobs/conformance.py CAPTURES... --out DIR

CAPTURES are files or directories of kafka-net captures (``*.kncap``) and
pcap/pcapng files of any Kafka broker's traffic.  DIR receives:

* ``frames.parquet``      one row per Kafka frame (both sources), with its bytes
* ``markers.parquet``     the gap and FIN markers placed among them (for the checks)
* ``problems.json``       what could not be read, and each file range's record counts
* ``pairs.parquet``       one row per request/response pair, with latency
* ``violations.parquet``  one row per violation, at its connection and position
* ``report.json``         schema-versioned summary (see spark_jobs/report.py)
* ``report.html``         the same for people, with plots; opens offline
* ``junit.xml``           one test case per check, for CI systems

Stages on Spark, for local files (paths every node can reach): no frame byte
crosses the JVM (:mod:`kafka_net.spark_jobs.task_reads`, and the picture in
docs/design.md).  The driver plans byte ranges (pcap, pcapng and kafka-net
capture files larger than the split size cut at record boundaries, see
:mod:`kafka_net.capture.capture_split`); kafka-net captures go to tasks a
Processor's segments at a time (a connection lives in one Processor's
segments), which read, decode and check their connections in place; pcap and
pcapng ranges are read by tasks that return an index of their TCP packets
(where each payload lies in the file), shuffled by flow, and the flow tasks
read the payloads back, reassemble and check.  Tasks write ``frames.parquet``,
``markers.parquet`` and ``pairs.parquet`` themselves (pyarrow) and return one
small row per connection (summary, findings, its share of the aggregates),
which the driver adds up (:func:`kafka_net.spark_jobs.summary_arrow.summarise_partials`).
URI inputs (hdfs://, s3a://) and ``--frames-from`` go the columnar way
through Spark (:mod:`kafka_net.spark_jobs.arrow_stages`): Spark's readers,
frames grouped by connection (``groupBy("connection").applyInArrow``), the
pairs and violations tables exploded by Spark SQL, and each batch of checked
rows' share of the aggregates computed by the executors and added up here.
Captures up to ``--in-process-below-mb`` go to the same tasks, run one after
another in this process (``rdd_tasks.run_here``): no SparkSession, no JVM.
Every path computes the report's aggregates with
:mod:`kafka_net.spark_jobs.summary_arrow`'s two functions (a share, the sum of
shares).  All the per-file, per-flow and per-connection logic lives in
:mod:`kafka_net.spark_jobs.transforms`.

``--frames-from DIR`` checks the frames dataset an earlier run wrote to DIR
(its ``frames.parquet``, ``markers.parquet`` and ``problems.json``: the
problems met reading, and each range's record counts) without reading the
captures again.

``kafka-net conformance --compare A B`` compares two reports instead
(spark_jobs/compare.py).

Every finding says whose it is (client, broker, capture) and how bad
(violation, deviation, note): kafka_net/capture/attribution.py.  The verdict is
about the party under test, ``--subject`` (the broker by default);
``--waive CHECK[=CLIENT-SOFTWARE][:REASON]`` keeps a check's findings from
failing it and records why.  The verdict line goes to stdout; stage lines and
Spark's own warnings to stderr.

Exit status: 0 PASS (no unwaived violation or deviation of the subject,
coverage at least ``--min-coverage``), 1 FAIL (one found), 2 bad usage or
nothing readable, 3 INCOMPLETE (none found, but fewer frames checked than
``--min-coverage`` asks: lost bytes, header-only frames; see the report's
coverage section).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from functools import partial
from typing import NamedTuple

if __package__ in (None, ""):
    # Run as a script by spark-submit: the checkout's kafka_net first on the path.
    # This folder is imported as kafka_net.spark_jobs, which an install of kafka-net
    # (pip install -e . maps it here; a wheel holds a copy) makes importable.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_net.capture import reader as capture_reader  # noqa: E402
from kafka_net.capture.attribution import BROKER, PARTIES, Waiver, WaiverError  # noqa: E402
from kafka_net.capture.pairing import CHECKS  # noqa: E402
from kafka_net.spark_jobs import report as report_mod  # noqa: E402
from kafka_net.spark_jobs.session import (  # noqa: E402
    MissingRuntime, check_runtime, get_spark, one_blas_thread, ship_code)
from kafka_net.spark_jobs.without_pandas import arrow_without_pandas  # noqa: E402

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--compare" in argv:      # spark-submit conformance.py --compare A B
        from kafka_net.spark_jobs import compare
        return compare.main(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        waivers = [Waiver.parse(text, CHECKS) for text in args.waive]
    except WaiverError as exc:
        parser.error(str(exc))      # exit 2, as for any bad usage
    if bool(args.captures) == bool(args.frames_from):
        parser.error("give CAPTURES or --frames-from DIR (one of them)")
    inputs = _expand(args.captures) if args.captures else [args.frames_from]
    if args.frames_from and not os.path.isdir(os.path.join(args.frames_from, FRAMES_TABLE)):
        print(f"conformance: {args.frames_from} holds no {FRAMES_TABLE} (a conformance "
              f"run's --out)", file=sys.stderr)
        return EXIT_USAGE
    if not inputs:
        print("conformance: no capture files found in " + ", ".join(args.captures),
              file=sys.stderr)
        summary = report_mod.empty_summary(args.captures, "no capture files found")
        report_mod.write_all(summary, args.out)
        return EXIT_USAGE
    started = time.monotonic()
    limit = int(args.in_process_below_mb * (1 << 20))
    try:
        check_runtime()
        # A small input never needs the JVM (see SMALL_INPUT_BYTES): no session.
        spark = None if is_small_input(inputs, args.frames_from, limit) else \
            get_spark(args.master, quiet=not args.verbose, job_only=_own_process())
    except MissingRuntime as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if spark is not None:
        ship_code(spark)
    elif _own_process():
        arrow_without_pandas()      # runs no Spark, and is ours: see its docstring
    _stage("reading", len(inputs), "file(s)" if not args.frames_from else "frames dataset")
    summary = run(spark, inputs, args.out, set(args.broker_port or []) or None,
                  args.split_mb and args.split_mb << 20, args.frames_from, limit)
    summary["job"]["seconds"] = round(time.monotonic() - started, 3)
    report_mod.attribute_findings(summary, args.subject, waivers)
    verdict = report_mod.verdict(summary, args.min_coverage / 100)
    report_mod.write_all(summary, args.out)
    _stage("report written to", args.out, f"({summary['totals']['violations']} findings)")
    for line in report_mod.detail.console_lines(summary["violations"], args.show):
        _stage(line)
    # The verdict on stdout, apart from the stage lines and Spark's warnings (stderr).
    print("conformance:", report_mod.headline(summary), flush=True)
    return {"NO DATA": EXIT_USAGE, "FAIL": EXIT_VIOLATIONS,
            "INCOMPLETE": EXIT_INCOMPLETE}.get(verdict, EXIT_CLEAN)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kafka-net conformance", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Validate Kafka captures (.kncap, pcap, pcapng): correlation ids, "
                    "bodies, records, versions.\n\nkafka-net conformance --compare A B "
                    "[--out DIR] puts two reports (or captures) side by side instead.",
        epilog="exit codes: 0 PASS, 1 FAIL (a finding of the --subject), 2 bad usage or "
               "nothing readable, 3 INCOMPLETE (coverage below --min-coverage).\n"
               "The verdict line goes to stdout, stage lines to stderr.")
    p.add_argument("captures", nargs="*", help="capture files or directories")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--frames-from", metavar="DIR",
                   help="check the frames an earlier run wrote to DIR (its --out: "
                        "frames.parquet, problems.json) instead of reading captures")
    p.add_argument("--split-mb", type=int, metavar="MIB",
                   help="cut pcap and pcapng files into byte ranges of about this size, "
                        "one task each (default: one range per executor slot, 4 MiB to "
                        "1 GiB; for hdfs:// and other URIs 4-64 MiB, about four per slot); "
                        ".kncap files are cut only when it is given (a Processor's "
                        "segments are read by one task, or by each part of its connections)")
    p.add_argument("--in-process-below-mb", type=float, metavar="MIB",
                   default=SMALL_INPUT_BYTES / (1 << 20),
                   help="captures up to this size are read, checked and summarised "
                        "in this process, without starting Spark (no JVM: a small "
                        "capture's report in about a second); default %(default)g, "
                        "0: always on Spark's executors")
    p.add_argument("--master", default=None,
                   help="Spark master (default: spark-submit's, else local[2]); not "
                        "used for an input under --in-process-below-mb, which starts "
                        "no Spark")
    p.add_argument("--broker-port", type=int, action="append",
                   help="broker port(s) in pcaps when no SYN shows the direction")
    p.add_argument("--min-coverage", type=_percent, default=100.0, metavar="PERCENT",
                   help="share of frames that must be checked in full for PASS, else the "
                        "verdict is INCOMPLETE (exit 3); default 100")
    p.add_argument("--show", type=int, default=report_mod.detail.CONSOLE_VIOLATIONS,
                   metavar="N", help="violations listed on the console (all are in "
                                     "report.json, violations.parquet, report.html)")
    p.add_argument("--subject", choices=PARTIES[:2], default=BROKER,
                   help="the party under test, whose findings decide the verdict "
                        "(default: broker); the other's are listed, never failing")
    p.add_argument("--waive", action="append", default=[],
                   metavar="CHECK[=CLIENT-SOFTWARE][:REASON]",
                   help="do not fail on this check's findings (only from clients whose "
                        "software, as ApiVersions names it, starts with CLIENT-SOFTWARE); "
                        "the report records why: the known-deviation catalogue's "
                        "evidence, or REASON (required where the catalogue explains "
                        "nothing); repeatable")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="compare two reports instead (see above; handled by "
                        "spark_jobs/compare.py)")
    p.add_argument("--verbose", action="store_true", help="keep Spark's INFO logging")
    return p


def _percent(text: str) -> float:
    value = float(text.rstrip("%"))
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text} is not a percentage from 0 to 100")
    return value


def _expand(paths: list[str]) -> list[str]:
    files = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files.extend(os.path.join(root, n) for n in sorted(names))
        elif os.path.exists(path) or "://" in path:
            files.append(path)
    return sorted(set(files))


def _stage(*words) -> None:
    print("conformance:", *words, file=sys.stderr, flush=True)


def run(spark, inputs: list[str], out: str, broker_ports: set[int] | None = None,
        split_bytes: int | None = None, frames_from: str | None = None,
        small_input_bytes: int | None = None) -> dict:
    """The whole job; returns the summary dict that report.py renders.

    ``frames_from``: a directory an earlier run wrote (its ``frames.parquet``
    and ``problems.json``): the captures are not read again, only checked.
    Inputs up to ``small_input_bytes`` (default :data:`SMALL_INPUT_BYTES`) are
    read, checked and summarised in this process, by the executors' own tasks
    run one after another (:func:`_check_in_tasks` with no session): ``spark``
    is not used and may be None."""
    one_blas_thread()
    os.makedirs(out, exist_ok=True)
    if is_small_input(inputs, frames_from, small_input_bytes):
        summary, problems = _check_in_tasks(None, inputs, out, broker_ports, split_bytes)
    else:
        summary, problems = _run_on_spark(spark, inputs, out, broker_ports, split_bytes,
                                          frames_from)
    summary["inputs"] = inputs
    summary["unreadable"] = problems
    return summary


def _run_on_spark(spark, inputs: list[str], out: str, broker_ports, split_bytes,
                  frames_from) -> tuple[dict, list[dict]]:
    """Parse (or read --frames-from), check and summarise on Spark's executors."""
    if frames_from is None and not any("://" in p for p in inputs):
        return _check_in_tasks(spark, inputs, out, broker_ports, split_bytes)
    if frames_from is None:
        problems = parse(spark, inputs, out, broker_ports, split_bytes)
    else:
        problems = _earlier_problems(frames_from)
    # Checked from the Parquet frames dataset: the parsing's lineage and caches
    # are gone by now, and a second analysis (--frames-from) starts here.
    frames = _frames_dataset(spark, frames_from or out)
    _stage("checking connections")
    checked = (frames.groupBy("connection")
               .applyInArrow(_stages().check_connection, _stages().CHECKED_SCHEMA)
               .cache())
    _write_tables(checked, out)
    summary = _summarise(checked)
    checked.unpersist()
    return summary, problems


def _check_in_tasks(spark, inputs: list[str], out: str, broker_ports,
                    split_bytes) -> tuple[dict, list[dict]]:
    """Local captures checked by tasks that read their bytes themselves
    (:mod:`kafka_net.spark_jobs.task_reads`): no frame byte crosses the JVM.
    Spark schedules the tasks and shuffles a pcap's packet index by flow; the
    tasks write the frames and pairs tables, and return a row per connection
    (its summary, findings and share of the aggregates), added up here.
    ``spark`` None: the same tasks, one slot's worth, one after another in this
    process (``rdd_tasks.run_here``), each file one range."""
    tasks = _task_reads()
    readable, problems = _readable(inputs)
    slots = 1 if spark is None else max(1, spark.sparkContext.defaultParallelism)
    kncap, other, split = planned_ranges(spark, readable, split_bytes)
    for table in tasks.TASK_TABLES:
        directory = os.path.join(out, table)
        if os.path.isdir(directory):
            shutil.rmtree(directory)
        os.makedirs(directory)
    _stage("checking connections")
    # What comes back is small (a row per connection, the notes): added up here.
    import pyarrow as pa
    import pyarrow.compute as pc
    from kafka_net.spark_jobs import rdd_tasks, summary_arrow
    run = rdd_tasks.run_here if spark is None else partial(rdd_tasks.run, spark.sparkContext)
    schema = _stages()._arrow(tasks.OUT_SCHEMA)
    found = []
    if kncap:
        pieces = _kncap_tasks(kncap, slots)
        found += run(tasks.kncap_checks(out, pieces), len(pieces), schema)
    if other:
        chunks = _chunks(other, _tasks(other, split, slots))
        found += run(tasks.packet_index(chunks), len(chunks), schema,
                     then=tasks.flow_checks(broker_ports, out), by="flow",
                     partitions=4 * slots, exchange=os.path.join(out, PACKET_INDEX_DIR))
    table = pa.concat_tables(found) if found else schema.empty_table()
    is_checked = pc.equal(table["kind"], tasks.CHECKED)
    notes = tasks.once_per_range(table.filter(pc.invert(is_checked))
                                 .select(tasks.NOTE_COLUMNS + tasks.PART_COLUMNS).to_pylist())
    problems = _write_problems(out, inputs, problems, notes)
    _complete_tables(out)
    checked = table.filter(is_checked).select(tasks.CHECKED_COLUMNS)
    _write_here(checked, "violations", os.path.join(out, "violations.parquet"))
    return summary_arrow.summarise_partials(checked), problems


class RangePlan(NamedTuple):
    """What :func:`planned_ranges` gives: range rows (:func:`plan_inputs`)."""
    kncap: list[tuple]          # of the kafka-net captures
    other: list[tuple]          # of the other files: pcap, pcapng, anything else
    other_split: int            # the split the other files were cut at


def planned_ranges(spark, paths: list[str], split_bytes: int | None) -> RangePlan:
    """The local ``paths`` cut into ranges as :func:`_check_in_tasks` reads
    them: at ``split_bytes`` if given, else each file whole in one process
    (``spark`` None), and on Spark pcap and pcapng at :func:`_index_split`.

    A .kncap file is cut only when ``split_bytes`` asks for it: its task reads
    all of its Processor's ranges anyway (:func:`_kncap_tasks`), so a default
    split would only make the driver walk every record's length before the
    first task starts (0.1-0.2 s of a 3 s ``local[2]`` job on the
    919,785-frame capture of bench/RESULTS.md), and the task read more,
    smaller ranges.  A pcap or pcapng range is what a packet-index task reads."""
    kncap, other = _by_kind(paths)
    if split_bytes is None and spark is not None and other:
        other_split = _index_split(spark, other)
    else:
        other_split = split_bytes or _WHOLE
    return RangePlan(plan_inputs(kncap, split_bytes or _WHOLE),
                     plan_inputs(other, other_split), other_split)


def _by_kind(paths: list[str]) -> tuple[list[str], list[str]]:
    """Kafka-net captures, and the other files (pcap, pcapng, and whatever
    else, which the packet stage reports), each in the order given."""
    kncap, other = [], []
    for path in paths:
        with open(path, "rb") as fh:
            kind = capture_reader.sniff(fh.read(capture_reader.SNIFF_BYTES))
        (kncap if kind == capture_reader.KNCAP else other).append(path)
    return kncap, other


# The folder under --out through which a pcap's packet index goes from the
# index tasks to the flow tasks (rdd_tasks._exchange); gone when they are done.
PACKET_INDEX_DIR = "_packet_index"

# A split no file reaches: each file one range.
_WHOLE = 1 << 62


# What the plan of the kafka-net tasks counts a task's work in, µs of CPU
# (fitted to the tasks' own times on the real-client capture, 2 cores): its
# kept records' checks, per record and per byte; walking every record of its
# Processor (length and id) when it keeps a part; its own start, Arrow streams
# and table files (about 0.1 s a task more in Spark's Python workers, measured
# as 4 more tasks a run).
KNCAP_RECORD_US = 3.5
KNCAP_BYTE_US = 0.0083
KNCAP_WALK_US = 0.35
KNCAP_TASK_US = 100_000
_RECORD_BYTES = 400         # a record's bytes, on average, where none were counted


def _kncap_tasks(ranges: list[tuple], slots: int) -> list[list[tuple]]:
    """kafka-net range rows -> at most four tasks a slot (the first the
    largest), each a list of pieces ``(range rows, parts, part)``: a
    Processor's ranges (:func:`task_reads.kncap_group`: its connections'
    records lie in them only) and the part of its connections a task keeps
    (kncap_arrow.part_of: the CRC-32 of the id modulo ``parts``).

    Processors are few (Kafka's default is 3) and uneven (the real-client
    capture's 151 / 60 / 72 / 73 MB), so whole Processors can leave one slot
    with most of the work; but each part of a Processor walks all its records,
    so parts cost.  The plan starts from whole Processors and changes the
    number of parts of one Processor (one larger than half a slot's share) at
    a time, the change that brings the slots' finish (:func:`_finish`, by the
    costs above) down most, while it brings it down by more than 1%.

    The pieces are sized first as even shares of their Processor, which needs
    no reading.  Only the Processors that plan splits are then walked for
    their connections' records and bytes (task_reads.kncap_id_sizes: a pass
    over the lengths and ids, the driver's only walk of a .kncap file unless a
    split is asked for; a few large connections make a hash's parts uneven),
    and the plan is made again with what the walk found (an even share still,
    where it cannot be read).  A plan that keeps every Processor whole walks
    nothing: on the 3.1M-frame capture (bench/spark_capture.py --scale 3) the
    two walks took 0.87 s of the driver's time, before any task started, for a
    plan of whole Processors.  The pieces go, largest first, to the least
    loaded task, and the largest task comes first, so that Spark's scheduler
    starts it first."""
    groups: dict[str, list[tuple]] = {}
    for row in ranges:
        groups.setdefault(_task_reads().kncap_group(row[0]), []).append(row)
    sizes = {g: sum((end if end >= 0 else os.path.getsize(path)) - start
                    for path, start, end, _, _ in rows) for g, rows in groups.items()}
    # Parts pay for a Processor larger than half a slot's share of the input;
    # the others go whole (their records are not walked here either)
    total = sum(sizes.values())
    large = [g for g in groups if slots > 1 and sizes[g] * 2 * slots > total]
    parts, best = _kncap_plan(groups, sizes, dict.fromkeys(groups), large, slots)
    walked = [g for g in large if parts[g] > 1]
    if walked:
        ids = {g: _task_reads().kncap_id_sizes(groups[g]) if g in walked else None
               for g in groups}
        parts, best = _kncap_plan(groups, sizes, ids, large, slots)
    return [[piece for _, piece in task] for _, task in best]


def _kncap_plan(groups: dict[str, list[tuple]], sizes: dict[str, int], ids: dict,
                large: list[str], slots: int) -> tuple[dict[str, int], list[tuple]]:
    """:func:`_kncap_tasks`' search: the parts of each Processor and the packed
    tasks, the pieces sized by ``ids`` (a Processor's kncap_id_sizes, or None
    for even shares)."""
    most = 4 * slots

    def pieces(parts: dict[str, int]) -> list[tuple]:
        out = []
        for g, rows in groups.items():
            k = parts[g]
            known = ids[g] or {0: (sizes[g] / _RECORD_BYTES, sizes[g])}
            kept = [[0, 0] for _ in range(k)]
            for h, (records, size) in known.items():
                kept[h % k][0] += records
                kept[h % k][1] += size
            if ids[g] is None:        # an even share
                kept = [[known[0][0] / k, sizes[g] / k]] * k
            walk = KNCAP_WALK_US * sum(r for r, _ in known.values()) if k > 1 else 0
            out += [(KNCAP_RECORD_US * r + KNCAP_BYTE_US * b + walk + KNCAP_TASK_US,
                     (rows, k, p)) for p, (r, b) in enumerate(kept)]
        return out

    parts = dict.fromkeys(groups, 1)
    best = _packed(pieces(parts), most)
    while large:
        tries = [{**parts, g: k} for g in large for k in range(1, most + 1) if k != parts[g]]
        plans = [(_finish(plan, slots), n, plan) for n, plan in
                 enumerate(_packed(pieces(t), most) for t in tries)]
        finish, n, plan = min(plans, key=lambda p: p[:2])
        if finish >= 0.99 * _finish(best, slots):
            break
        parts, best = tries[n], plan
    return parts, best


def _packed(pieces: list[tuple], most: int) -> list[tuple]:
    """(size, piece) pairs -> at most ``most`` (size, [(size, piece)]) tasks,
    the largest pieces first to the least loaded; the largest task first."""
    bins: list[list] = [[0, []] for _ in range(min(most, len(pieces)))]
    for size, piece in sorted(pieces, key=lambda p: p[0], reverse=True):
        emptiest = min(bins, key=lambda b: b[0])
        emptiest[0] += size
        emptiest[1].append((size, piece))
    return sorted(((b[0], b[1]) for b in bins), key=lambda b: b[0], reverse=True)


def _finish(tasks: list[tuple], slots: int) -> float:
    """When the last of ``slots`` slots finishes ``tasks`` ((size, ...) in
    order), each task going to the slot free first, as Spark hands them out."""
    free = [0.0] * slots
    for size, _ in tasks:
        free[free.index(min(free))] += size
    return max(free)


def _chunks(rows: list, n: int) -> list[list]:
    """``rows`` cut into ``n`` runs of about the same length, in order (as
    ``sc.parallelize`` slices a list)."""
    return [rows[i * len(rows) // n:(i + 1) * len(rows) // n] for i in range(n)]


def _complete_tables(out: str) -> None:
    """The tables tasks write (frames, markers, pairs) readable even when no
    task wrote a part (no frames, or no markers): an empty part with the schema."""
    import pyarrow.parquet as pq
    from kafka_net.spark_jobs.schemas import FRAME_SCHEMA, PAIR_SCHEMA
    for table, schema in ((FRAMES_TABLE, FRAME_SCHEMA), (MARKERS_TABLE, FRAME_SCHEMA),
                          (_task_reads().PAIRS_TABLE, PAIR_SCHEMA)):
        directory = os.path.join(out, table)
        if not any(n.endswith(".parquet") and not n.startswith(".")
                   for n in os.listdir(directory)):
            pq.write_table(_stages()._arrow(schema).empty_table(),
                           os.path.join(directory, "part-empty.parquet"))


def _task_reads():
    from kafka_net.spark_jobs import task_reads
    return task_reads


# Inputs up to this size (all local files) are checked in this process by the
# tasks' own functions, one after another (rdd_tasks.run_here): no JVM, no
# Python workers, no shuffle.  About 16,000 frames; under 1,000 is the common CI
# case.  Above it a session starts, for the cores; bench/RESULTS.md (spark
# section) has what each costs on a large capture.
SMALL_INPUT_BYTES = 4 << 20


def is_small_input(inputs: list[str], frames_from: str | None,
                   limit: int | None = None) -> bool:
    """Whether the job runs in this process without Spark (captures only: a
    --frames-from dataset, or any URI input, goes to Spark; so does every input
    when the limit is 0, even empty files)."""
    limit = SMALL_INPUT_BYTES if limit is None else limit
    return frames_from is None and limit > 0 and _is_small(inputs, limit)


def _is_small(inputs: list[str], limit: int) -> bool:
    local = [p for p in inputs if "://" not in p]
    if len(local) != len(inputs):
        return False
    captures, _ = _readable(local)      # a file that is no capture is never read
    total = 0
    for path in captures:
        total += _capture_bytes(path, limit - total)
        if total > limit:
            return False
    return True


def _capture_bytes(path: str, budget: int) -> int:
    """How much of ``path`` holds capture data, counted up to just past ``budget``.
    A .kncap segment is sized up front (64 MiB by default) and a segment still
    being written ends in zeros, so a broker's capture of a few frames is a
    64 MiB file: its records, walked by their lengths alone, say how much there is."""
    size = os.path.getsize(path)
    if size <= budget:
        return size
    import mmap
    from kafka_net.capture import format as kncap
    with open(path, "rb") as fh:
        if capture_reader.sniff(fh.read(capture_reader.SNIFF_BYTES)) != capture_reader.KNCAP:
            return size
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            end = kncap.FILE_HEADER.size
            for offset in kncap.record_offsets(mm):
                if offset > budget:
                    return size
                end = offset + 4 + int.from_bytes(mm[offset:offset + 4], "big")
            return end


# The frames dataset: frames.parquet, one row per Kafka frame (what users read),
# and markers.parquet, the gap and FIN markers that take part in pairing.
FRAMES_TABLE = "frames.parquet"
MARKERS_TABLE = "markers.parquet"
PROBLEMS_FILE = "problems.json"


def _frames_dataset(spark, directory: str):
    """Frames and markers of a run's --out, for the checks."""
    frames = spark.read.parquet(os.path.join(directory, FRAMES_TABLE))
    markers = os.path.join(directory, MARKERS_TABLE)
    if os.path.isdir(markers):
        frames = frames.unionByName(spark.read.parquet(markers))
    return frames


def _own_process() -> bool:
    """Whether this process is the ``kafka-net`` command's own (kafka_net.entry)."""
    entry = sys.modules.get("kafka_net.entry")
    return bool(entry and entry.OWN_PROCESS)


def _stages():
    from kafka_net.spark_jobs import arrow_stages
    return arrow_stages


def parse(spark, inputs: list[str], out: str, broker_ports: set[int] | None = None,
          split_bytes: int | None = None) -> list[dict]:
    """Captures -> ``out/frames.parquet`` (one row per frame or marker, every
    connection); returns the problems met (also written to ``out/problems.json``).

    Each file is cut into byte ranges at record boundaries
    (:func:`plan_inputs`), one task each, read by the executors themselves; TCP
    packets are shuffled by flow and reassembled there."""
    from pyspark.sql import functions as F
    stages = _stages()
    readable, problems = _readable(inputs)
    local = [p for p in readable if "://" not in p]
    split = split_bytes or _split_bytes(spark, local)
    ranges = plan_inputs(local, split)
    sc = spark.sparkContext
    rows = sc.parallelize(ranges, _tasks(ranges, split, sc.defaultParallelism)) \
        if ranges else sc.emptyRDD()
    units = spark.createDataFrame(rows, stages.RANGE_INPUT_SCHEMA).mapInArrow(
        stages.range_units, stages.UNIT_SCHEMA)
    uris = [p for p in readable if "://" in p]
    if uris:
        # hdfs://, s3a:// ... (files or folders): Spark's Hadoop file systems read
        # them, whole (binaryFile: files under 2 GiB); local paths are cut above.
        units = units.unionByName(
            spark.read.format("binaryFile").option("recursiveFileLookup", "true")
            .load(uris).select("path", "content")
            .mapInArrow(stages.file_units, stages.UNIT_SCHEMA))
    # Cached, both: each range is decoded once and each flow reassembled once,
    # though the problems and the frames table read them.
    units = units.cache()
    flows = (units.filter(F.col("kind") == stages.PACKET).groupBy("flow")
             .applyInArrow(stages.flow_frames(broker_ports), stages.UNIT_SCHEMA).cache())
    found = units.filter(F.col("kind") != stages.PACKET).unionByName(flows)
    rows = found.filter(F.col("kind") == stages.FRAME).select(*stages.FRAME_COLUMNS)
    for table, which in ((FRAMES_TABLE, F.col("marker").isNull()),
                         (MARKERS_TABLE, F.col("marker").isNotNull())):
        rows.filter(which).write.mode("overwrite").parquet(os.path.join(out, table))
    notes = found.filter(F.col("kind").isin(stages.PROBLEM, stages.RANGE)).select(
        "kind", "file", "problem", *[f.name for f in stages.RANGE_FIELDS]).collect()
    units.unpersist()
    flows.unpersist()
    return _write_problems(out, inputs, problems, [r.asDict() for r in notes])


def _write_problems(out: str, inputs: list[str], problems: list[dict],
                    notes: list[dict]) -> list[dict]:
    """The problems met before reading, plus problem and range-count rows ->
    all the problems (returned) and problems.json."""
    stages = _stages()
    problems = problems + [{"file": r["file"], "problem": r["problem"]} for r in notes
                           if r["kind"] == stages.PROBLEM]
    ranges = sorted(({"file": r["file"], "start": r["range_start"],
                      "records": r["range_records"], "packets": r["range_packets"],
                      "non_tcp": r["range_non_tcp"]}
                     for r in notes if r["kind"] == stages.RANGE),
                    key=lambda r: (r["file"], r["start"]))
    problems += _no_packets(ranges)
    with open(os.path.join(out, PROBLEMS_FILE), "w", encoding="utf-8") as fh:
        json.dump({"inputs": inputs, "problems": problems, "ranges": ranges}, fh, indent=1)
    return problems


def _no_packets(ranges: list[dict]) -> list[dict]:
    """A split pcap/pcapng file none of whose ranges held a TCP packet, said once
    for the file (a .kncap's ranges count no packets: None)."""
    packets: dict[str, int] = {}
    for r in ranges:
        if r["packets"] is not None:
            packets[r["file"]] = packets.get(r["file"], 0) + r["packets"]
    return [{"file": f, "problem": "no TCP packets"} for f, n in sorted(packets.items()) if not n]


def _earlier_problems(frames_from: str) -> list[dict]:
    path = os.path.join(frames_from, PROBLEMS_FILE)
    if not os.path.exists(os.path.join(frames_from, FRAMES_TABLE)):
        raise FileNotFoundError(f"{frames_from} holds no {FRAMES_TABLE} (written by a "
                                f"conformance run's --out)")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["problems"]


# The largest pcap range a packet-index task reads by default: it holds the
# range's index (PACKED records, about 10% of the pcap's bytes) until it sends it.
MAX_INDEX_RANGE = 1 << 30
MIN_INDEX_RANGE = 4 << 20


def _index_split(spark, paths: list[str]) -> int:
    """pcap and pcapng ranges for the packet-index tasks: one an executor slot,
    within :data:`MIN_INDEX_RANGE` and :data:`MAX_INDEX_RANGE`.  An index
    task's own work is small beside what a task costs in Spark (on the 333 MB
    pcap of bench/RESULTS.md, 30-100 ms of Python for each of 8 ranges, each
    task 120-150 ms), so more ranges only cost: 8 -> 2 ranges took a
    ``local[2]`` job from 3.1-3.5 to 2.8-3.2 s, and one range (no cut, so no
    walk of the file here) a ``local[1]`` job from 4.3 to 4.0 s."""
    total = sum(os.path.getsize(p) for p in paths if "://" not in p)
    slots = max(1, spark.sparkContext.defaultParallelism)
    return max(MIN_INDEX_RANGE, min(MAX_INDEX_RANGE, -(-total // slots)))


def _split_bytes(spark, paths: list[str]) -> int:
    """Ranges of 4-64 MiB, about four per executor slot: slots stay busy while
    the last ranges finish, and no task holds more than 64 MiB of capture."""
    from kafka_net.capture.capture_split import DEFAULT_SPLIT_BYTES
    total = sum(os.path.getsize(p) for p in paths if "://" not in p)
    slots = max(1, spark.sparkContext.defaultParallelism)
    return max(4 << 20, min(DEFAULT_SPLIT_BYTES, total // (4 * slots) + 1))


def _tasks(ranges: list[tuple], split_bytes: int, slots: int) -> int:
    """Tasks for the range stage: every range its own when they are few or big;
    many small files (a long capture's segments) packed about half a range's
    size to a task, so that ten thousand of them are not ten thousand tasks."""
    total = sum((end if end >= 0 else os.path.getsize(path)) - start
                for path, start, end, _, _ in ranges)
    wanted = max(4 * slots, -(-total // max(1, split_bytes // 2)))
    return max(1, min(len(ranges), wanted))


def plan_inputs(paths: list[str], split_bytes: int) -> list[tuple]:
    """One (path, start, end, resume JSON, split) row per byte range of local
    files (a shared mount on a cluster): pcap, pcapng and kafka-net capture
    files larger than ``split_bytes`` are cut at record boundaries
    (:func:`kafka_net.capture.capture_split.plan_ranges`, which reads their
    record lengths once here); other files are one range each, read whole."""
    import mmap
    from kafka_net.capture.capture_split import plan_ranges
    rows = []
    for path in paths:
        if "://" in path or os.path.getsize(path) <= split_bytes:
            rows.append((path, 0, -1, None, False))
            continue
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            ranges = plan_ranges(mm, split_bytes) if capture_reader.sniff(mm) else []
        if len(ranges) < 2:
            rows.append((path, 0, -1, None, False))
            continue
        rows += [(path, r.start, r.end, r.resume and json.dumps(r.resume.to_json()), True)
                 for r in ranges]
    return rows


def _readable(inputs: list[str]) -> tuple[list[str], list[dict]]:
    """Local files we cannot open are reported here rather than failing the job,
    and so are empty ones (Spark's binaryFile reader skips them silently) and
    files that are no capture, by their first bytes, so a 2 GB log file given by
    mistake is refused in a moment instead of read whole; other URIs (hdfs://,
    s3a://) are left for Spark to open."""
    readable, problems = [], []
    for path in inputs:
        if "://" in path:
            readable.append(path)
        elif not os.access(path, os.R_OK):
            problems.append({"file": path, "problem": "cannot be read (permission denied)"})
        elif why := _not_a_capture(path):
            problems.append({"file": path, "problem": why})
        else:
            readable.append(path)
    return readable, problems


def _not_a_capture(path: str) -> str | None:
    """The capture reader's reason to refuse ``path`` by its first bytes, or None."""
    with open(path, "rb") as fh:
        return capture_reader.not_a_capture(fh.read(capture_reader.SNIFF_BYTES),
                                            os.fstat(fh.fileno()).st_size)


def _write_tables(checked, out: str) -> None:
    """The pairs and violations tables: the checked rows' array columns,
    exploded by Spark SQL."""
    from pyspark.sql import functions as F
    os.makedirs(out, exist_ok=True)
    for name in ("pairs", "violations"):
        (checked.select(F.explode(name).alias("row")).select("row.*")
         .write.mode("overwrite").parquet(os.path.join(out, f"{name}.parquet")))


def _write_here(checked, column: str, path: str) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    rows = pc.list_flatten(checked[column])
    table = pa.Table.from_struct_array(rows.combine_chunks() if rows.num_chunks else
                                       pa.array([], type=rows.type))
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    pq.write_table(table, os.path.join(path, "part-00000.parquet"))


def _summarise(checked) -> dict:
    """The report's aggregates of checked rows on Spark: each batch's share
    computed by the executors (task_reads.shares), added up here, by the same
    functions as every other path (summary_arrow)."""
    from kafka_net.spark_jobs import summary_arrow
    tasks = _task_reads()
    from pyspark.sql.types import StructType
    found = checked.mapInArrow(tasks.shares, StructType(tasks.CHECKED_FIELDS)).toArrow()
    return summary_arrow.summarise_partials(found)


if __name__ == "__main__":
    sys.exit(main())
