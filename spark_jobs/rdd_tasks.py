"""Running the job's task functions on Spark as plain RDDs, their results coming
back as Arrow IPC streams.

The task functions (:mod:`.task_reads`) are ``mapInArrow`` functions: Arrow
batches in, Arrow batches out.  Given to ``spark.range(n).mapInArrow(...)``, they
made the JVM plan, compile and run a query and convert every batch to its own
Arrow and back, for what is n task ids in and a few hundred rows out.  Here task
i of ``sc.parallelize(range(n), n)`` calls the same function on a batch holding
id i and sends its batches back as one Arrow IPC stream: bytes the JVM carries
and never reads.  On the 919,785-frame capture of bench/RESULTS.md that took a
``local[2]`` job's JVM from 2.5 to 1.1 CPU s (.kncap) and from 3.6-3.8 to 2.1
(pcap).

A pcap's packet index must meet per flow first: :func:`run` with ``then`` cuts
each index batch by a CRC32 of its ``by`` column into the checking tasks'
partitions (rows without one go to the first), Spark's ``partitionBy`` moves the
(partition, stream) pairs, and each checking task reads its streams' batches
into ``then``.  A CRC32, not Python's ``hash``: every worker process must put a
flow in the same partition, and ``hash`` of a str differs between processes.

:func:`run_here` runs the same tasks one after another in this process, with
no Spark at all: a small input, or any local input given
``--in-process-below-mb`` above its size.  Each task is the executors' own
function on the same ids, so the run writes and returns what Spark's would.
Tasks, not one pass over the whole input: a task holds one Processor's frames
(or a partition's flows) at a time, and the memory a task lets go is what the
next one uses.  On the 919,785-frame capture one pass over all of it held
1.4 GB, and the system's time to hand out that much fresh memory (1.0-2.0
CPU s) was more than reading and checking its segments' records (0.6-0.9 s).
"""

from __future__ import annotations

# The partition of the task run_here is running (None: none, or on Spark).
_here: int | None = None


def run(sc, apply, n: int, schema, then=None, by: str | None = None,
        partitions: int = 0) -> list:
    """The tables of n tasks' batches (``schema``, an Arrow schema): task i runs
    ``apply`` on id i, or, with ``then``, its rows go by ``by`` to ``partitions``
    tasks that run ``then`` on them."""
    first = _streams(apply, schema) if then is None else _keyed_streams(apply, by, partitions)
    rdd = sc.parallelize(range(n), n).mapPartitionsWithIndex(first)
    if then is not None:
        rdd = rdd.partitionBy(partitions, _itself).mapPartitions(_shuffled(then, schema))
    import pyarrow as pa
    return [pa.ipc.open_stream(stream).read_all() for stream in rdd.collect()]


def run_here(apply, n: int, schema, then=None, by: str | None = None,
             partitions: int = 0) -> list:
    """:func:`run` in this process: task i's batches as a table, in order;
    with ``then``, each of ``partitions`` tasks gets the rows bound to it (by
    the same CRC32 of ``by``), in the order the first tasks made them."""
    import pyarrow as pa
    shuffled: dict[int, list] = {}
    tables = []
    for index in range(n):
        batches = _as_task(index, apply(iter([_id_batch(index)])))
        if then is None:
            tables.append(pa.Table.from_batches(batches, schema=schema))
            continue
        for batch in batches:
            for partition, rows in _keyed(batch, by, partitions):
                shuffled.setdefault(partition, []).append(rows)
    for partition in sorted(shuffled):
        tables.append(pa.Table.from_batches(
            _as_task(partition, then(iter(shuffled.pop(partition)))), schema=schema))
    return tables


def _as_task(index: int, batches) -> list:
    """The batches of a task function's generator, run as partition ``index``."""
    global _here
    _here = index
    try:
        return list(batches)
    finally:
        _here = None


def partition() -> int:
    """The partition of the task running now: Spark's, or :func:`run_here`'s."""
    if _here is not None:
        return _here
    from pyspark import TaskContext
    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def _itself(partition: int) -> int:
    return partition


def _streams(apply, schema):
    """Task id -> one Arrow stream of ``apply``'s batches."""
    def task(index, _ids):
        yield _stream(apply(iter([_id_batch(index)])), schema)
    return task


def _keyed_streams(apply, by: str, partitions: int):
    """Task id -> (partition, an Arrow stream of the rows bound there), a pair
    for each partition that gets rows."""
    def task(index, _ids):
        for batch in apply(iter([_id_batch(index)])):
            for partition, rows in _keyed(batch, by, partitions):
                yield partition, _stream([rows], batch.schema)
    return task


def _keyed(batch, by: str, partitions: int):
    """(partition, its rows of ``batch``) for each partition that gets rows."""
    import zlib
    import pyarrow as pa
    import pyarrow.compute as pc
    keys = [0 if key is None else zlib.crc32(key.encode()) % partitions
            for key in batch.column(by).to_pylist()]
    where = pa.array(keys, pa.int32())
    for partition in sorted(set(keys)):
        yield partition, batch.filter(pc.equal(where, partition))


def _shuffled(then, schema):
    """A task's (partition, stream) pairs -> one Arrow stream of ``then``'s batches."""
    def task(pairs):
        import pyarrow as pa
        batches = (batch for _, stream in pairs for batch in pa.ipc.open_stream(stream))
        yield _stream(then(batches), schema)
    return task


def _id_batch(index: int):
    import pyarrow as pa
    return pa.record_batch([pa.array([index], pa.int64())], names=["id"])


def _stream(batches, schema) -> bytes:
    import pyarrow as pa
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()
