"""The conformance job: captures in, a correlation-id report out.

Run it either way; the code is the same:

    kafka-net conformance CAPTURES... --out DIR            # Spark local mode
    spark-submit --master spark://host:7077 spark_jobs/conformance.py CAPTURES... --out DIR

CAPTURES are files or directories of kafka-net captures (``*.kncap``) and
pcap/pcapng files of any Kafka broker's traffic.  DIR receives:

* ``frames.parquet``      one row per Kafka frame (both sources), with its bytes
* ``pairs.parquet``       one row per request/response pair, with latency
* ``violations.parquet``  one row per violation, at its connection and position
* ``report.json``         schema-versioned summary (see spark_jobs/report.py)
* ``report.html``         the same for people, with plots; opens offline
* ``junit.xml``           one test case per check, for CI systems

Stages, all columnar (Arrow batches in and out of Python, see
:mod:`kafka_net.spark_jobs.arrow_stages`): read files (Spark's ``binaryFile`` reader)
-> units per file (``mapInArrow``: kafka-net frames, or TCP packets) ->
packets grouped by flow across files and reassembled
(``groupBy("flow").applyInArrow``) -> frames grouped by connection and
paired (``groupBy("connection").applyInArrow``: one row per connection with
array columns) -> tables exploded and aggregated in Spark SQL.  All the
per-file, per-flow and per-connection logic lives in
:mod:`kafka_net.spark_jobs.transforms`.

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
import sys
import time

if __package__ in (None, ""):
    # Run as a script by spark-submit: the checkout's kafka_net first on the path.
    # This folder is imported as kafka_net.spark_jobs, which an install of kafka-net
    # (pip install -e . maps it here; a wheel holds a copy) makes importable.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_net.capture.attribution import BROKER, PARTIES, Waiver, WaiverError  # noqa: E402
from kafka_net.capture.pairing import CHECKS  # noqa: E402
from kafka_net.spark_jobs import report as report_mod  # noqa: E402
from kafka_net.spark_jobs import transforms  # noqa: E402
from kafka_net.spark_jobs.session import MissingRuntime, check_runtime, get_spark, ship_code  # noqa: E402

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
    if not args.captures:
        parser.error("give capture files or directories (or --compare A B)")
    inputs = _expand(args.captures)
    if not inputs:
        print("conformance: no capture files found in " + ", ".join(args.captures),
              file=sys.stderr)
        summary = report_mod.empty_summary(args.captures, "no capture files found")
        report_mod.write_all(summary, args.out)
        return EXIT_USAGE
    started = time.monotonic()
    try:
        check_runtime()
        spark = get_spark(args.master, quiet=not args.verbose)
    except MissingRuntime as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    ship_code(spark)
    _stage("reading", len(inputs), "file(s)")
    summary = run(spark, inputs, args.out, set(args.broker_port or []) or None)
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
    p.add_argument("--master", default=None,
                   help="Spark master (default: spark-submit's, else local[2])")
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


def run(spark, inputs: list[str], out: str, broker_ports: set[int] | None = None) -> dict:
    """The whole job; returns the summary dict that report.py renders."""
    from pyspark.sql import functions as F
    from kafka_net.spark_jobs import arrow_stages as stages
    readable, problems = _readable(inputs)
    # Executors read the files themselves (Spark's binaryFile reader), so the
    # same code works on a cluster with paths every node can reach (HDFS, S3, a
    # shared mount).  Every stage takes and returns Arrow batches.
    files = spark.read.format("binaryFile").load(readable) if readable else \
        spark.createDataFrame([], "path string, content binary")
    # Cached, both: each file is decoded once and each flow reassembled once,
    # though the problems, the frames table and the pairing all read them.
    units = (files.select("path", "content")
             .mapInArrow(stages.file_units, stages.UNIT_SCHEMA).cache())
    flows = (units.filter(F.col("kind") == stages.PACKET).groupBy("flow")
             .applyInArrow(stages.flow_frames(broker_ports), stages.UNIT_SCHEMA).cache())
    found = units.filter(F.col("kind") != stages.PACKET).unionByName(flows)
    problems += [{"file": r.file, "problem": r.problem}
                 for r in found.filter(F.col("kind") == stages.PROBLEM)
                 .select("file", "problem").collect()]
    frames = found.filter(F.col("kind") == stages.FRAME).select(*stages.FRAME_COLUMNS)
    _stage("checking connections")
    checked = (frames.groupBy("connection")
               .applyInArrow(stages.check_connection, stages.CHECKED_SCHEMA).cache())
    tables = _write_tables(frames, checked, out)
    units.unpersist()
    flows.unpersist()
    summary = _summarise(tables, checked)
    summary["inputs"] = inputs
    summary["unreadable"] = problems
    checked.unpersist()
    return summary


def _readable(inputs: list[str]) -> tuple[list[str], list[dict]]:
    """Local files we cannot open are reported here rather than failing the job,
    and so are empty ones (Spark's binaryFile reader skips them silently);
    other URIs (hdfs://, s3a://) are left for Spark to open."""
    readable, problems = [], []
    for path in inputs:
        if "://" in path:
            readable.append(path)
        elif not os.access(path, os.R_OK):
            problems.append({"file": path, "problem": "cannot be read (permission denied)"})
        elif os.path.getsize(path) == 0:
            problems.append({"file": path, "problem": transforms.EMPTY_FILE})
        else:
            readable.append(path)
    return readable, problems


def _write_tables(frames, checked, out: str) -> dict:
    """The Parquet tables; pairs, violations, requests and states are the
    checked rows' array columns, exploded by Spark SQL."""
    from pyspark.sql import functions as F
    os.makedirs(out, exist_ok=True)

    def exploded(column: str):
        return checked.select(F.explode(column).alias("row")).select("row.*")

    tables = {"frames": frames, **{name: exploded(name) for name in
                                   ("pairs", "violations", "requests", "states")}}
    # frames.parquet: frames only (gap and FIN markers take part in pairing, and
    # their effects are in the other tables).
    written = {**tables, "frames": frames.filter(F.col("marker").isNull())}
    for name in ("frames", "pairs", "violations"):
        written[name].write.mode("overwrite").parquet(os.path.join(out, f"{name}.parquet"))
    return tables


def _summarise(tables: dict, checked) -> dict:
    from pyspark.sql import functions as F
    pairs, requests, violations = tables["pairs"], tables["requests"], tables["violations"]
    # responses: every response carrying a request's id (an answered acks=0
    # Produce counts too), not the pairs.
    per_api = (requests.groupBy("api_key", "api_name", "api_version", "client_id")
               .agg(F.count("*").alias("requests"),
                    F.sum(F.col("responses").cast("long")).alias("responses"))
               .join(pairs.withColumn("is_error", F.size("error_codes") > 0)
                     .groupBy("api_key", "api_version", "client_id")
                     .agg(F.sum(F.col("is_error").cast("long")).alias("errors")),
                     ["api_key", "api_version", "client_id"], "left")
               .fillna(0, ["errors", "responses"])
               .orderBy("api_key", "api_version", "client_id"))
    latency = (pairs.groupBy("api_key", "api_name")
               .agg(F.count("*").alias("count"),
                    F.percentile("latency_ns", F.array(F.lit(0.5), F.lit(0.99), F.lit(0.999)))
                    .alias("pct"), F.max("latency_ns").alias("max_ns"))
               .orderBy("api_key"))
    histogram = (pairs.withColumn("bucket", F.floor(F.log10(F.greatest(F.col("latency_ns"),
                                                                      F.lit(1)))))
                 .groupBy("api_name", "bucket").count())
    timeline = (requests.withColumn("second", F.floor(F.col("timestamp_ns") / 1e9))
                .groupBy("second").count().orderBy("second"))
    connections = [json.loads(r.summary) for r in checked.select("summary").collect()]
    return report_mod.build_summary(
        per_api=[r.asDict() for r in per_api.collect()],
        latency=[r.asDict() for r in latency.collect()],
        histogram=[r.asDict() for r in histogram.collect()],
        timeline=[r.asDict() for r in timeline.collect()],
        violations=[r.asDict() for r in violations.orderBy("connection", "position").collect()],
        connections=connections,
        # every frame (not a marker) of every connection
        frames=sum(c["frames"] for c in connections),
    )


if __name__ == "__main__":
    sys.exit(main())
