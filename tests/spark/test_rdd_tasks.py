"""rdd_tasks: rows keyed to partitions go from the first tasks to the second
through Arrow files under the job's output (not Spark's shuffle), each to the
partition the CRC32 of its key names, as in one process; the folder goes
afterwards; a task that fails leaves no half-written file; and a partition's
task that cannot find a file fails, naming it."""

from __future__ import annotations

import os
import zlib

import pyarrow as pa
import pytest

from kafka_net.spark_jobs import rdd_tasks

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("flow", pa.string()), ("value", pa.int64()), ("partition", pa.int64())])
TASKS, PARTITIONS = 3, 4


def _flow(value: int) -> str:
    """Seven flows, flow-6 with most of the rows."""
    return f"flow-{min(value % 20, 6)}"


def _index(batches):
    """Task i: 40 rows in two batches (as a range's index rows)."""
    for batch in batches:
        i = batch.column("id")[0].as_py()
        for half in range(2):
            values = list(range(i * 100 + half * 20, i * 100 + half * 20 + 20))
            yield pa.record_batch([pa.array([_flow(v) for v in values]),
                                   pa.array(values, pa.int64()),
                                   pa.array([-1] * 20, pa.int64())], schema=SCHEMA)


def _mark(batches):
    """Each row, with the task (partition) that got it."""
    for batch in batches:
        yield batch.set_column(2, "partition",
                               pa.array([rdd_tasks.partition()] * batch.num_rows, pa.int64()))


def _groups(tables) -> list[frozenset]:
    """The rows each task got, in the order of the tasks."""
    got: dict[int, set] = {}
    for t in tables:
        for r in t.to_pylist():
            got.setdefault(r["partition"], set()).add((r["flow"], r["value"]))
    return [frozenset(got[p]) for p in sorted(got)]


def test_rows_go_by_key_through_files_as_in_one_process(spark, tmp_path):
    """Each task of the second job gets the rows of one partition of the keys
    (the CRC32 of the key), the same rows as in one process, the partition with
    the most bytes first; the folder is gone afterwards."""
    exchange = str(tmp_path / "out" / "_index")
    tables = rdd_tasks.run(spark.sparkContext, _index, TASKS, SCHEMA, then=_mark, by="flow",
                           partitions=PARTITIONS, exchange=exchange)
    groups = _groups(tables)
    assert sum(map(len, groups)) == TASKS * 40
    assert all(len({zlib.crc32(flow.encode()) % PARTITIONS for flow, _ in g}) == 1
               for g in groups)
    assert set(groups) == set(_groups(rdd_tasks.run_here(
        _index, TASKS, SCHEMA, then=_mark, by="flow", partitions=PARTITIONS)))
    assert ("flow-6", 6) in groups[0]           # the largest partition went first
    assert not os.path.exists(exchange)
    assert os.listdir(tmp_path / "out") == []


def test_an_index_task_that_fails_leaves_no_file(tmp_path):
    def failing(batches):
        yield from _index(batches)
        raise OSError("the capture went away")

    os.makedirs(tmp_path / "x")
    task = rdd_tasks._keyed_files(failing, "flow", PARTITIONS, str(tmp_path / "x"))
    with pytest.raises(OSError, match="went away"):
        list(task(0, iter([])))
    assert os.listdir(tmp_path / "x") == []
    # the same task that completes leaves one file per partition it wrote to
    written = list(rdd_tasks._keyed_files(_index, "flow", PARTITIONS, str(tmp_path / "x"))(
        1, iter([])))
    assert sorted(os.listdir(tmp_path / "x")) == [f"1-{p}.arrow" for _, p, _ in written]
    assert all(os.path.getsize(tmp_path / "x" / f"1-{p}.arrow") == size
               for _, p, size in written)


def test_a_partition_whose_file_is_not_there_fails_naming_it(tmp_path):
    """What a flow task meets when the output folder is not shared with the
    executor that wrote the file: a clear failure, not flows silently missing."""
    gone = str(tmp_path / "0-2.arrow")
    task = rdd_tasks._exchanged(_mark, SCHEMA, [[], [], [gone]])
    with pytest.raises(FileNotFoundError, match="0-2.arrow.*shared mount"):
        next(task(2, iter([])))


def test_first_tasks_with_no_rows_give_no_second_tasks(spark, tmp_path):
    """No rows at all (no file written): no task reads, nothing comes back, and
    the folder is gone."""
    def nothing(batches):
        yield from ()

    exchange = str(tmp_path / "out" / "_index")
    assert rdd_tasks.run(spark.sparkContext, nothing, TASKS, SCHEMA, then=_mark, by="flow",
                         partitions=PARTITIONS, exchange=exchange) == []
    assert not os.path.exists(exchange)


def test_results_of_megabytes_come_back_whole_in_the_tasks_status(spark):
    """A checking task returns its connections' rows, each pair's latency among
    them: megabytes on a large capture.  The session sends results up to 64 MiB
    with the task's status (spark.task.maxDirectResultSize), not through the
    block manager; a 3 MB result per task arrives whole."""
    assert spark.sparkContext.getConf().get("spark.task.maxDirectResultSize") == "64m"
    wide = pa.schema([("latency_ns", pa.int64())])

    def latencies(batches):
        for batch in batches:
            i = batch.column("id")[0].as_py()
            yield pa.record_batch([pa.array(range(i, i + 400_000), pa.int64())], schema=wide)

    tables = rdd_tasks.run(spark.sparkContext, latencies, 2, wide)
    assert [t.num_rows for t in tables] == [400_000, 400_000]
    assert tables[1].column("latency_ns")[-1].as_py() == 400_000
