"""The job on Spark with each Processor's connections shared among tasks
(conformance._kncap_tasks: a part of them a task, by a hash of the id) gives
the report, the frames, markers and pairs tables, the problems and the range
counts of the job with one task reading every Processor whole, to the row:
on test_split_kncap's segments (every injected violation, a corrupt record in
the middle of one, a zero tail, a record torn into the zero tail of the other)
cut into 64 KiB ranges, so every part reads damaged ranges and the damage must
be said once."""

from __future__ import annotations

import json
import os

import pytest

from kafka_net.spark_jobs import conformance, task_reads
from tests.spark.test_split_kncap import SPLIT, _report, _rows, kncaps  # noqa: F401

pytestmark = pytest.mark.spark


def _run(spark, inputs, out, slots: int | None, patch) -> tuple[dict, list]:
    """A run whose kncap plan is one task reading every Processor whole
    (``slots`` None), or the job's plan for ``slots`` slots with parts costing
    nothing but their checks (so that these small segments are shared); the
    plan it ran."""
    plan = conformance._kncap_tasks
    planned = []

    def tasks(ranges, _slots):
        if slots is None:
            groups: dict[str, list] = {}
            for row in ranges:
                groups.setdefault(task_reads.kncap_group(row[0]), []).append(row)
            planned.append([(rows, 1, 0) for rows in groups.values()])
        else:
            planned.extend(plan(ranges, slots))
        return planned
    patch.setattr(conformance, "_kncap_tasks", tasks)
    patch.setattr(conformance, "KNCAP_WALK_US", 0)
    patch.setattr(conformance, "KNCAP_TASK_US", 0)
    summary = conformance.run(spark, inputs, out, split_bytes=SPLIT, small_input_bytes=0)
    patch.undo()
    return summary, planned


@pytest.fixture(scope="module")
def runs(kncaps, spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("parts")
    inputs = [kncaps["p0"], kncaps["p1"]]
    patch = pytest.MonkeyPatch()
    whole, one = _run(spark, inputs, str(base / "whole"), None, patch)
    split, many = _run(spark, inputs, str(base / "split"), 3, patch)
    return {"whole": whole, "split": split, "base": base, "plans": (one, many)}


def _problems(out) -> dict:
    with open(os.path.join(out, conformance.PROBLEMS_FILE), encoding="utf-8") as fh:
        content = json.load(fh)
    return {"problems": content["problems"], "ranges": content["ranges"]}


def test_the_plans_are_one_task_and_parts_of_processors(runs):
    one, many = runs["plans"]
    assert len(one) == 1 and all(parts == 1 for _, parts, _ in one[0])
    pieces = [(parts, part) for task in many for _, parts, part in task]
    assert len(many) > 2 and max(parts for parts, _ in pieces) > 1
    # every part of every Processor in the plan, once
    by_parts: dict[int, list[int]] = {}
    for parts, part in pieces:
        by_parts.setdefault(parts, []).append(part)
    assert all(sorted(v) == list(range(k)) * (len(v) // k) for k, v in by_parts.items())


def test_split_report_equals_the_whole_one(runs):
    assert runs["split"]["totals"]["frames"] > 7_000
    assert _report(runs["split"]) == _report(runs["whole"])
    assert runs["split"]["violations"]


def test_split_tables_equal_the_whole_ones(runs, spark):
    keys = {"frames.parquet": lambda r: (r["file"], r["file_offset"]),
            "markers.parquet": lambda r: (r["file"], r["file_offset"]),
            "pairs.parquet": lambda r: (r["connection"], r["request_position"]),
            "violations.parquet": lambda r: (r["connection"], r["position"], r["check"])}
    for table, key in keys.items():
        whole = _rows(spark, runs["base"] / "whole", table, key)
        assert _rows(spark, runs["base"] / "split", table, key) == whole, table
        assert whole or table == "markers.parquet", table


def test_damage_and_range_counts_are_said_once(runs, kncaps):
    whole, split = _problems(runs["base"] / "whole"), _problems(runs["base"] / "split")
    assert split == whole
    assert len(split["problems"]) == 2 and split["problems"][0]["file"] == kncaps["p0"]
    assert "CRC mismatch" in split["problems"][0]["problem"]
    assert sum(r["records"] for r in split["ranges"]) == runs["split"]["totals"]["frames"]
